#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The section 3 pages against the public headers.

- Every public function (CR_EXPORT, and the loop adapters' static inline
  ones) is named by exactly one page (its NAME section, which is what
  build-aux/man-aliases.sh makes links from), and that page's SYNOPSIS
  declares it exactly as the header does; a page declares no function the
  headers do not have.
- Every public macro (#define CR_*) and type (typedef) is named by a page,
  in its NAME section or its ".\\" Also:" line, and appears in its text.
- Every function returning cr_status has a "Returns" list in its header
  comment, with no "CR_E*" wildcard; each status of that list is on the
  function's page (RETURN VALUE or ERRORS), and each status ERRORS lists
  is in the list of a function of the page. An ERRORS entry that starts
  with a parenthesised list of functions is held to those functions only.
- Installed as make install does (build-aux/man-aliases.sh), "man NAME"
  finds a page for every function, macro and type; and man renders every
  page without a warning (lintian's test).
- Every page, section 1 too, passes a lint: groff -ww -z (all warnings,
  no output), or mandoc -Tlint where groff is missing; with neither, the
  test fails (Debian's groff-base has groff).

Prints cmocka-style lines and "N passed, N failed"; exits 1 on drift.
Usage: test_man.py [SRCDIR]  (default: $CR_TEST_SRCDIR, else ../..)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = (sys.argv[1] if len(sys.argv) > 1 else
       os.environ.get("CR_TEST_SRCDIR") or
       os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
INC = os.path.join(SRC, "include")
MAN3 = os.path.join(SRC, "doc", "man3")

# ------------------------------------------------------------- headers


def header_files():
    return (sorted(glob.glob(os.path.join(INC, "credisson", "*.h"))) +
            [os.path.join(INC, "credisson", "version.h.in"),
             os.path.join(INC, "credisson.h")])


def statuses():
    """The names of cr_status, in the order of the enum."""
    text = open(os.path.join(INC, "credisson", "status.h")).read()
    body = re.search(r"typedef enum cr_status \{(.*?)\} cr_status;", text,
                     re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return re.findall(r"\b(CR_[A-Z]+)\b", body)


STATUSES = statuses()
VALUES = {}  # macro -> its definition, spacing made canonical
STATUS_RE = re.compile(r"\b(%s)\b" % "|".join(STATUSES))


def norm_decl(text):
    """A declaration with its spacing made canonical."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s*([*(),])\s*", r"\1", text)
    return text


def version_parts():
    """What configure puts in version.h.in, from the VERSION file."""
    v = open(os.path.join(SRC, "VERSION")).read().strip()
    major, minor, patch = (v.split(".") + ["0", "0"])[:3]
    return {"PACKAGE_VERSION": v, "CR_VERSION_MAJOR": major,
            "CR_VERSION_MINOR": minor, "CR_VERSION_PATCH": patch}


def parse_header(path):
    """(functions, macros, types) of one header. functions: name ->
    (declaration, comment before it, header)."""
    text = open(path).read()
    for k, v in version_parts().items():
        text = text.replace("@%s@" % k, v)
    funcs, macros, types = {}, set(), set()
    for m in re.finditer(r"^#define\s+(CR_[A-Z0-9_]+)[ \t]*(.*)", text, re.M):
        macros.add(m.group(1))
        VALUES[m.group(1)] = norm_decl(m.group(2))
    for m in re.finditer(r"^typedef\b[^;{]*?\b(cr_[a-z0-9_]+)\s*;", text,
                         re.M):
        types.add(m.group(1))
    for m in re.finditer(r"^\}\s*(cr_[a-z0-9_]+)\s*;", text, re.M):
        types.add(m.group(1))
    for m in re.finditer(r"\(\*\s*(cr_[a-z0-9_]+)\)\s*\(", text):
        if re.search(r"typedef[^;]*\(\*\s*%s\)" % m.group(1), text):
            types.add(m.group(1))
    # Walk comments and declarations in order: a comment applies to the
    # declarations that follow it until another comment or other code.
    token = re.compile(
        r"(?P<comment>/\*.*?\*/)"
        r"|(?P<export>^CR_EXPORT\b[^;]*;)"
        r"|(?P<inline>^static inline\b[^;{]*\{)"
        r"|(?P<other>^[^\s/#}][^\n]*)", re.S | re.M)
    comment = ""
    for m in token.finditer(text):
        if m.group("comment"):
            comment = m.group("comment")
        elif m.group("export") or m.group("inline"):
            decl = m.group("export") or m.group("inline")
            decl = re.sub(r"^(CR_EXPORT|static inline)\s+", "", decl)
            decl = decl.rstrip("{;").strip()
            name = re.search(r"(\w+)\s*\(", decl).group(1)
            funcs[name] = (norm_decl(decl), comment,
                           os.path.relpath(path, SRC))
        elif m.group("other"):
            comment = ""
    return funcs, macros, types


def returns_list(comment):
    """The statuses after the first "Returns" of a comment, or None."""
    i = comment.find("Returns")
    if i < 0:
        return None
    return set(STATUS_RE.findall(comment[i:]))

# ---------------------------------------------------------------- pages


def roff_args(line):
    """The arguments of a roff macro line, quotes removed."""
    args, cur, quoted, i = [], "", False, 0
    while i < len(line):
        c = line[i]
        if c == '"':
            quoted = not quoted
        elif c == " " and not quoted:
            if cur:
                args.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        args.append(cur)
    return args


def roff_text(line):
    """The text a roff line shows (fonts and escapes dropped)."""
    if line.startswith(".\\\""):
        return ""
    if line.startswith("."):
        parts = line.split(None, 1)
        args = roff_args(parts[1]) if len(parts) > 1 else []
        if parts[0] in (".B", ".I", ".SM", ".SB"):
            line = " ".join(args)
        elif parts[0] in (".BI", ".BR", ".IR", ".RB", ".RI", ".IB"):
            line = "".join(args)
        else:
            return ""
    line = line.replace("\\-", "-").replace("\\e", "\\")
    line = line.replace("\\(dq", '"').replace("\\c", "")
    line = re.sub(r"\\f[BIRP]", "", line)
    line = line.replace("\\ ", " ").replace("\\&", "")
    return line


def sections(path):
    """Section title -> list of raw lines."""
    out, cur = {}, None
    for line in open(path).read().splitlines():
        if line.startswith(".SH "):
            cur = line[4:].strip().strip('"')
            out[cur] = []
        elif cur is not None:
            out[cur].append(line)
    return out


def parse_page(path):
    secs = sections(path)
    name_text = " ".join(roff_text(l) for l in secs.get("NAME", []))
    names = [n.strip() for n in name_text.split(" - ")[0].split(",")]
    names = [n for n in names if n]
    also = []
    for line in open(path).read().splitlines():
        if line.startswith('.\\" Also:'):
            also += line.split(":", 1)[1].split()
    # SYNOPSIS: the statements between .nf and .fi.
    protos, defines, buf, inside = {}, {}, "", False
    for line in secs.get("SYNOPSIS", []):
        if line.startswith(".nf"):
            inside = True
            continue
        if line.startswith(".fi"):
            inside = False
            continue
        if not inside or line.startswith(".PP") or "#include" in line:
            continue
        text = roff_text(line).strip()
        if text.startswith("#define"):
            m = re.match(r"#define\s+(\w+)\s+(.*)", text)
            defines[m.group(1)] = norm_decl(m.group(2))
            continue
        buf += " " + text
        while ";" in buf:
            stmt, buf = buf.split(";", 1)
            m = re.match(r"\s*(?:typedef\b.*|.*?\b(\w+)\s*\()", stmt, re.S)
            if (m and m.group(1) and m.group(1).startswith("cr_") and
                    not stmt.strip().startswith("typedef")):
                protos[m.group(1)] = norm_decl(stmt)
    # Statuses: RETURN VALUE unrestricted; ERRORS entries maybe restricted.
    # free: statuses shown for every function of the page; listed: the
    # ERRORS entries among them (what the page claims, checked both ways).
    free, listed, restricted = set(), set(), []
    for line in secs.get("RETURN VALUE", []):
        free |= set(STATUS_RE.findall(roff_text(line)))
    entries, cur = [], None
    for line in secs.get("ERRORS", []):
        if line.startswith(".TP"):
            cur = [None, ""]
            entries.append(cur)
        elif cur is not None and cur[0] is None:
            cur[0] = roff_text(line).strip()
        elif cur is not None:
            cur[1] += " " + roff_text(line)
        else:
            free |= set(STATUS_RE.findall(roff_text(line)))
    for tag, body in entries:
        tags = set(STATUS_RE.findall(tag or ""))
        body = body.strip()
        only = None
        if body.startswith("("):
            depth = 0
            for i, c in enumerate(body):
                depth += c == "("
                depth -= c == ")"
                if depth == 0:
                    only = set(re.findall(r"\b(cr_\w+)\s*\(", body[1:i]))
                    break
        if only:
            restricted.append((tags, only))
        else:
            free |= tags
            listed |= tags
    body_text = "\n".join(roff_text(l) for l in
                          open(path).read().splitlines())
    return {"names": names, "also": also, "protos": protos,
            "defines": defines, "free": free,
            "listed": listed, "restricted": restricted, "text": body_text}

# ---------------------------------------------------------------- tests


passed = failed = 0


def run(name, problems):
    global passed, failed
    print("[ RUN      ] %s" % name)
    for p in problems:
        print("    %s" % p)
    if problems:
        print("[  FAILED  ] %s" % name)
        failed += 1
    else:
        print("[       OK ] %s" % name)
        passed += 1


funcs, macros, types = {}, set(), set()
for h in header_files():
    if os.path.exists(h):
        f, m, t = parse_header(h)
        funcs.update(f)
        macros |= m
        types |= t
pages = {os.path.basename(p): parse_page(p)
         for p in sorted(glob.glob(os.path.join(MAN3, "*.3")))}

# Which page names each function.
owner, problems = {}, []
for page, info in pages.items():
    for n in info["names"]:
        if n in owner:
            problems.append("%s is named by %s and %s" % (n, owner[n], page))
        owner[n] = page
for f in sorted(funcs):
    if f not in owner:
        problems.append("%s (%s): no page names it" % (f, funcs[f][2]))
run("test_every_function_has_a_page", problems)

problems = []
for f in sorted(funcs):
    page = owner.get(f)
    if page is None:
        continue
    got = pages[page]["protos"].get(f)
    if got is None:
        problems.append("%s: not in the SYNOPSIS of %s" % (f, page))
    elif got != funcs[f][0]:
        problems.append("%s: %s says\n      %s\n    the header says\n      %s"
                        % (f, page, got, funcs[f][0]))
for page, info in pages.items():
    for p in info["protos"]:
        if p not in funcs:
            problems.append("%s declares %s, which no header has" % (page, p))
        elif owner.get(p) != page:
            problems.append("%s declares %s but does not name it" % (page, p))
    for d, value in info["defines"].items():
        if VALUES.get(d) != value:
            problems.append("%s: #define %s %s; the header: %s"
                            % (page, d, value, VALUES.get(d)))
run("test_synopsis_matches_the_headers", problems)

problems = []
for sym in sorted(macros | types):
    where = [p for p, i in pages.items() if sym in i["names"] or
             sym in i["also"]]
    if not where:
        problems.append("%s: no page names it (NAME or .\\\" Also:)" % sym)
    elif not re.search(r"\b%s\b" % re.escape(sym), pages[where[0]]["text"]):
        problems.append("%s: named by %s but not described there"
                        % (sym, where[0]))
run("test_every_macro_and_type_has_a_page", problems)

problems = []
for f in sorted(funcs):
    decl, comment, hdr = funcs[f]
    if not decl.startswith("cr_status"):
        continue
    if re.search(r"CR_E\*", comment):
        problems.append("%s (%s): \"CR_E*\" instead of a list" % (f, hdr))
    r = returns_list(comment)
    if r is None:
        problems.append("%s (%s): no \"Returns\" in its comment" % (f, hdr))
    elif "CR_OK" not in r:
        problems.append("%s (%s): CR_OK missing from Returns" % (f, hdr))
run("test_headers_list_every_status", problems)

problems = []
for page, info in sorted(pages.items()):
    mine = [f for f in info["names"] if f in funcs and
            funcs[f][0].startswith("cr_status")]
    lists = {f: returns_list(funcs[f][1]) or set() for f in mine}
    for f in mine:
        shown = set(info["free"])
        for tags, only in info["restricted"]:
            if f in only:
                shown |= tags
        for s in sorted(lists[f] - shown, key=STATUSES.index):
            problems.append("%s: %s returns %s (%s), not on the page"
                            % (page, f, s, funcs[f][2]))
    union = set().union(*lists.values()) if lists else set()
    for s in sorted(info["listed"] - union, key=STATUSES.index):
        problems.append("%s: lists %s, which no function of the page "
                        "returns by its header" % (page, s))
    for tags, only in info["restricted"]:
        for s in tags:
            if not any(s in lists.get(f, set()) for f in only):
                problems.append("%s: lists %s for %s, which the header "
                                "does not" % (page, s, ", ".join(sorted(only))))
run("test_pages_list_the_headers_statuses", problems)


def man_finds_every_name():
    if shutil.which("man") is None:
        print("    (no man: not checked)")
        return []
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "man3"))
        paths = sorted(glob.glob(os.path.join(MAN3, "*.3")))
        for path in paths:
            shutil.copy(path, os.path.join(tmp, "man3"))
        subprocess.run(["sh", os.path.join(SRC, "build-aux",
                                           "man-aliases.sh"),
                        "install", os.path.join(tmp, "man3")] + paths,
                       check=True)
        for name in sorted(set(funcs) | macros | types):
            r = subprocess.run(["man", "-M", tmp, "-w", "3", name],
                               capture_output=True, text=True)
            if r.returncode != 0 or not r.stdout.strip():
                problems.append("man %s: no page" % name)
    return problems


def pages_render_cleanly():
    if shutil.which("man") is None:
        return []
    problems = []
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    for path in sorted(glob.glob(os.path.join(MAN3, "*.3")) +
                       glob.glob(os.path.join(SRC, "doc", "man1", "*.1"))):
        r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l",
                            "-Tutf8", "-Z", path], env=env,
                           capture_output=True, text=True)
        if r.returncode != 0 or r.stderr.strip():
            problems.append("%s: %s" % (os.path.basename(path),
                                        r.stderr.strip()))
    return problems


def pages_pass_the_lint():
    pages = sorted(glob.glob(os.path.join(MAN3, "*.3")) +
                   glob.glob(os.path.join(SRC, "doc", "man1", "*.1")))
    if shutil.which("groff") is not None:
        lint = ["groff", "-ww", "-z", "-t", "-man"]
    elif shutil.which("mandoc") is not None:
        lint = ["mandoc", "-Tlint", "-Wwarning"]
    else:
        return ["neither groff nor mandoc: install groff-base to lint the "
                "pages"]
    problems = []
    for path in pages:
        r = subprocess.run(lint + [path], capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C.UTF-8"))
        if r.returncode != 0 or r.stderr.strip() or r.stdout.strip():
            problems.append("%s: %s" % (os.path.basename(path),
                                        (r.stderr + r.stdout).strip()))
    return problems


run("test_man_finds_every_name", man_finds_every_name())
run("test_pages_render_without_warnings", pages_render_cleanly())
run("test_pages_pass_the_lint", pages_pass_the_lint())

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
