#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Peer benchmark: the Lock of python3-redis (Debian's package), scenarios 1
and 2 of doc/benchmarks.md, printing the same JSON lines as bench_lock.

  peer_python.py --url redis://127.0.0.1:PORT --seconds S
                 --scenario uncontended|contended [--workers K]

redis-py's Lock takes the lock with SET NX PX and polls while it is busy;
it is given sleep=0.001 (1 ms between polls, as the naive C peer) rather
than its default of 0.1 s, which would only make it slower. Contended
workers are processes (multiprocessing, fork), each with its own
connection; timestamps are CLOCK_MONOTONIC (time.monotonic_ns) in shared
memory, taken inside the critical section as bench_lock does.
"""
import argparse
import ctypes
import json
import multiprocessing as mp
import sys
import time

import redis

LOCK_NAME = "bench:lock"
COUNTER_KEY = "bench:counter"


def pct(sorted_vals, p):
    """The p-th percentile of an already sorted list (0 when empty)."""
    if not sorted_vals:
        return 0
    i = int(p / 100.0 * (len(sorted_vals) - 1) + 0.5)
    return sorted_vals[min(i, len(sorted_vals) - 1)]


def new_lock(r):
    """A redis-py Lock on the benchmark lock: 30 s lease, 1 ms polling."""
    return r.lock(LOCK_NAME, timeout=30, sleep=0.001)


def uncontended(url, seconds):
    """Scenario 1: lock/unlock pairs per second on one connection."""
    r = redis.Redis.from_url(url)
    lock = new_lock(r)
    lock.acquire()
    lock.release()
    lat = []
    n = 0
    start = time.monotonic_ns()
    end = start + int(seconds * 1e9)
    now = start
    while now < end:
        t0 = time.monotonic_ns()
        lock.acquire()
        lock.release()
        now = time.monotonic_ns()
        lat.append(now - t0)
        n += 1
    elapsed = (now - start) / 1e9
    lat.sort()
    return {"bench": "s1_uncontended", "impl": "python3-redis",
            "mode": "threads", "workers": 1, "seconds": elapsed,
            "cycles": n, "rate": n / elapsed,
            "pair_p50_us": pct(lat, 50) / 1e3,
            "pair_p99_us": pct(lat, 99) / 1e3}


def worker(idx, url, shared, queue):
    """One contended worker: lock, GET+SET the counter, unlock, until told
    to stop; sends its samples back through `queue`."""
    r = redis.Redis.from_url(url)
    lock = new_lock(r)
    waits, handoffs = [], []
    cycles = 0
    with shared["ready"].get_lock():
        shared["ready"].value += 1
    while not shared["go"].value:
        time.sleep(0.0001)
    while not shared["stop"].value:
        t0 = time.monotonic_ns()
        lock.acquire()
        t1 = time.monotonic_ns()
        if shared["in_cs"].value:
            shared["violations"].value += 1
        shared["in_cs"].value = 1
        holder = shared["last_holder"].value
        if holder >= 0:
            if holder != idx:
                handoffs.append(t1 - shared["last_release"].value)
            else:
                shared["self"].value += 1
        waits.append(t1 - t0)
        v = r.get(COUNTER_KEY)
        r.set(COUNTER_KEY, int(v or 0) + 1)
        shared["last_holder"].value = idx
        shared["in_cs"].value = 0
        shared["last_release"].value = time.monotonic_ns()
        lock.release()
        cycles += 1
    queue.put((cycles, waits, handoffs))


def contended(url, seconds, k):
    """Scenario 2 with k worker processes."""
    ctx = mp.get_context("fork")
    shared = {
        "ready": ctx.Value(ctypes.c_int, 0),
        "go": ctx.RawValue(ctypes.c_int, 0),
        "stop": ctx.RawValue(ctypes.c_int, 0),
        "in_cs": ctx.RawValue(ctypes.c_int, 0),
        "violations": ctx.RawValue(ctypes.c_longlong, 0),
        "self": ctx.RawValue(ctypes.c_longlong, 0),
        "last_holder": ctx.RawValue(ctypes.c_int, -1),
        "last_release": ctx.RawValue(ctypes.c_longlong, 0),
    }
    r = redis.Redis.from_url(url)
    r.delete(LOCK_NAME, COUNTER_KEY)
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(i, url, shared, queue))
             for i in range(k)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 60
    while shared["ready"].value < k:
        if time.monotonic() > deadline:
            sys.exit("peer_python: workers did not start")
        time.sleep(0.001)
    start = time.monotonic_ns()
    shared["go"].value = 1
    time.sleep(seconds)
    shared["stop"].value = 1
    cycles, waits, handoffs = 0, [], []
    for _ in procs:
        c, w, h = queue.get()
        cycles += c
        waits += w
        handoffs += h
    for p in procs:
        p.join()
    elapsed = (time.monotonic_ns() - start) / 1e9
    counter = int(r.get(COUNTER_KEY) or 0)
    r.delete(LOCK_NAME, COUNTER_KEY)
    waits.sort()
    handoffs.sort()
    return {"bench": "s2_contended", "impl": "python3-redis", "mode": "procs",
            "workers": k, "seconds": elapsed, "cycles": cycles,
            "rate": cycles / elapsed, "counter": counter,
            "counter_exact": counter == cycles,
            "violations": shared["violations"].value,
            "wait_p50_us": pct(waits, 50) / 1e3,
            "wait_p99_us": pct(waits, 99) / 1e3,
            "wait_max_us": (waits[-1] if waits else 0) / 1e3,
            "wait_mean_us": (sum(waits) / len(waits) if waits else 0) / 1e3,
            "handovers": len(handoffs),
            "handoff_p50_us": pct(handoffs, 50) / 1e3,
            "handoff_p99_us": pct(handoffs, 99) / 1e3,
            "self_share": shared["self"].value / max(cycles - 1, 1),
            "cycle_us": elapsed * 1e6 / max(cycles, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="redis://127.0.0.1:6379")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--scenario", default="uncontended")
    ap.add_argument("--workers", type=int, default=8)
    a = ap.parse_args()
    if a.scenario == "uncontended":
        out = uncontended(a.url, a.seconds)
    else:
        out = contended(a.url, a.seconds, a.workers)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
