#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that standard input is valid Prometheus text exposition (format
0.0.4) as examples/metrics prints it: HELP and TYPE lines before a
metric's samples, well-formed samples with finite values, histograms with
cumulative buckets ending at le="+Inf" equal to _count, counters that are
not negative. Then checks what the example's run must have produced, given
as NAME{LABELS}=VALUE arguments (the series must exist with that value).
Exits 1 with a message on the first problem.
"""
import math
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')


def fail(msg):
    print("not Prometheus text: " + msg)
    sys.exit(1)


def parse_labels(text, line):
    labels, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            fail("bad labels in: " + line)
        if m.group(1) in labels:
            fail("label repeated in: " + line)
        labels[m.group(1)] = m.group(2)
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                fail("bad labels in: " + line)
            pos += 1
    return labels


def main():
    types, helps, samples = {}, set(), {}
    for line in sys.stdin.read().splitlines():
        if line.startswith("# HELP "):
            name = line.split()[2]
            if name in helps:
                fail("HELP twice for " + name)
            helps.add(name)
        elif line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) != 4 or parts[3] not in (
                    "counter", "gauge", "histogram", "summary", "untyped"):
                fail(line)
            if parts[2] in types:
                fail("TYPE twice for " + parts[2])
            types[parts[2]] = parts[3]
        elif line.startswith("#") or line == "":
            fail("unexpected line: " + line)
        else:
            m = SAMPLE.match(line)
            if not m:
                fail("bad sample: " + line)
            name, labels = m.group(1), parse_labels(m.group(3) or "", line)
            try:
                value = float(m.group(4))
            except ValueError:
                fail("bad value: " + line)
            if math.isnan(value) or math.isinf(value):
                fail("value not finite: " + line)
            family = re.sub(r"_(bucket|sum|count)$", "", name)
            kind = types.get(name) or types.get(family)
            if kind is None:
                fail("sample before its TYPE: " + line)
            if kind == "counter" and value < 0:
                fail("negative counter: " + line)
            key = (name, tuple(sorted(labels.items())))
            if key in samples:
                fail("sample twice: " + line)
            samples[key] = value
    if not samples:
        fail("no samples")
    # Histograms: cumulative buckets, +Inf equal to _count.
    for family, kind in types.items():
        if kind != "histogram":
            continue
        series = {}
        for (name, labels), value in samples.items():
            if name != family + "_bucket":
                continue
            d = dict(labels)
            le = d.pop("le", None)
            if le is None:
                fail("bucket without le in " + family)
            bound = math.inf if le == "+Inf" else float(le)
            series.setdefault(tuple(sorted(d.items())), []).append(
                (bound, value))
        for labels, buckets in series.items():
            buckets.sort()
            counts = [v for _, v in buckets]
            if counts != sorted(counts):
                fail("buckets not cumulative in %s %s" % (family, labels))
            if buckets[-1][0] != math.inf:
                fail("no +Inf bucket in %s %s" % (family, labels))
            count = samples.get((family + "_count", labels))
            if count != buckets[-1][1]:
                fail("+Inf bucket differs from _count in %s %s" %
                     (family, labels))
            if (family + "_sum", labels) not in samples:
                fail("no _sum in %s %s" % (family, labels))
    for want in sys.argv[1:]:
        m = re.match(r'^([^{=]+)(\{(.*)\})?=(.+)$', want)
        labels = tuple(sorted(parse_labels(m.group(3) or "", want).items()))
        got = samples.get((m.group(1), labels))
        if got != float(m.group(4)):
            fail("%s is %s, not %s" %
                 (want.rsplit("=", 1)[0], got, m.group(4)))
    print("%d samples, %d families" % (len(samples), len(types)))


main()
