#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Runs a command on a new pseudo-terminal (its standard input, output and
# error) of 250 columns, for the tests of what credisson(1) shows on a
# terminal.
# Usage: pty_run.py OUTPUT PIDFILE CMD [ARG...]
# Everything the command writes to the terminal is copied to OUTPUT as it
# comes; its pid is written to PIDFILE (renamed into place, so that a
# reader sees it whole) once it runs. Exits with the command's status, or
# 128 + N when signal N killed it, as a shell does.
import fcntl
import os
import pty
import struct
import sys
import termios


def main():
    out_path, pid_path, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    pid, fd = pty.fork()
    if pid == 0:
        try:
            # Wide enough that a status line is never cut.
            fcntl.ioctl(0, termios.TIOCSWINSZ,
                        struct.pack("HHHH", 50, 250, 0, 0))
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    with open(pid_path + ".tmp", "w") as f:
        f.write("%d\n" % pid)
    os.rename(pid_path + ".tmp", pid_path)
    with open(out_path, "wb", buffering=0) as out:
        while True:
            try:
                data = os.read(fd, 4096)
            except OSError:
                break  # EIO: the terminal's last writer has gone
            if not data:
                break
            out.write(data)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sys.exit(128 + os.WTERMSIG(status))
    sys.exit(os.WEXITSTATUS(status))


main()
