#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns the JSON lines of one bench/run.sh run into the table of
doc/benchmarks.md: every figure as a ratio to its ceiling measured in the
same run, the peers side by side, and each target as met or missed by how
much. Then prints the JSON lines again, one per scenario, plus one per
target.

  report.py RESULTS.jsonl
"""
import json
import sys


def load(path):
    """The JSON lines of a run: the scenarios' (rows) and run.sh --ab's
    (tagged with their build, row and pair)."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return [r for r in rows if "ab" not in r], [r for r in rows if "ab" in r]


def find(rows, bench, **kw):
    for r in rows:
        if r.get("bench") == bench and all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def fair_shares(r):
    """A run's longest wait in fair shares (K x its mean cycle: one turn of
    every worker), or None."""
    if not r or not r.get("cycle_us"):
        return None
    return r["wait_max_us"] / (r["workers"] * r["cycle_us"])


def fair_share_note(floor):
    """The instant-handoff floor's own longest wait in fair shares: what
    the machine allows a perfect queue in the same run."""
    fs = fair_shares(floor)
    if fs is None:
        return ""
    return "the instant-handoff floor's own: %.1f x" % fs


def s13_alone(rows, r, side):
    """The longest wait in fair shares of one side ("C" or "Java") of
    mixed run r when it ran alone with the same workers (scenario 13), or
    None."""
    if side == "C":
        impl, k, mode = r["impl"], r["c_workers"], r["mode"]
    else:
        impl = "redisson" if r["impl"] == "rlock" else "redisson_sem"
        k, mode = r["java_workers"], r["java_mode"]
    return fair_shares(find(rows, "s2_contended" if r["permits"] == 1 else "s5_semaphore",
                            impl=impl, mode=mode, workers=k, permits=r["permits"]))


def ratio(a, b, key="rate"):
    """a[key] / b[key], or None when either is missing."""
    if not a or not b or not b.get(key) or a.get(key) is None:
        return None
    return a[key] / b[key]


# The Java peer's rows, shown in scenario 12 rather than with credisson's.
JAVA = ("redisson", "redisson_sem")


def fmt(v, digits=0):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if digits == 0:
        return "{:,.0f}".format(v)
    return "{:,.{}f}".format(v, digits)


def ms(us):
    return None if us is None else us / 1000.0


def issue30_rows(rows):
    """The rows of issue 30 (hand-overs without a herd) as ratios to the
    targeted floor of the same run: (name, value, limit, higher_is_better,
    unit, ratio to the instant-handoff floor or None, note)."""
    def s2(impl, k, mode="procs"):
        return find(rows, "s2_contended", impl=impl, mode=mode, workers=k)

    def s5(impl, k):
        return find(rows, "s5_semaphore", impl=impl, permits=k, mode="procs")

    out = []
    for name, r, tf, fl, limit in (
            ("RLock, K=8 procs", s2("rlock", 8), s2("tfloor", 8), s2("floor", 8), 0.9),
            ("RLock, K=32 procs", s2("rlock", 32), s2("tfloor", 32), s2("floor", 32), 0.9),
            ("fair lock, K=8 procs", s2("fair", 8), s2("tfloor", 8), s2("floor", 8), 0.9),
            ("semaphore of 2, 8 procs", s5("semaphore", 2), s5("tfloor_sem", 2),
             s5("floor_sem", 2), 0.8),
            ("semaphore of 8, 32 procs", s5("semaphore", 8), s5("tfloor_sem", 8),
             s5("floor_sem", 8), 0.8),
            ("write lock, K=8 procs", s2("write", 8), s2("tfloor", 8), s2("floor", 8), 0.9)):
        note = ""
        if name.startswith("RLock, K=32"):
            t32 = ratio(s2("rlock", 32, "threads"), s2("tfloor", 32, "threads"))
            if t32 is not None:
                note = "threads: %.2f x their targeted floor" % t32
        out.append((name + ": throughput >= %.1f x targeted floor" % limit,
                    ratio(r, tf), limit, True, "x", ratio(r, fl), note))
    rw = find(rows, "s4_rwlock", impl="rwlock", mode="procs")
    trw = find(rows, "s4_rwlock", impl="tfloor_rw", mode="procs")
    frw = find(rows, "s4_rwlock", impl="floor_rw", mode="procs")
    out.append(("read/write 90 % reads, 8 procs: throughput >= 0.8 x rw floor",
                ratio(rw, trw), 0.8, True, "x", ratio(rw, frw), ""))
    wr = None
    if rw and rw.get("read_wait_p99_us"):
        wr = rw["write_wait_p99_us"] / rw["read_wait_p99_us"]
    out.append(("read/write 90 % reads, 8 procs: writer p99 <= 10 x reader p99",
                wr, 10.0, False, "x", None,
                "writer p99 %.1f ms, reader p99 %.1f ms" % (
                    rw["write_wait_p99_us"] / 1e3, rw["read_wait_p99_us"] / 1e3)
                if rw else ""))
    for k in (8, 32):
        r, tf, fl = s2("rlock", k), s2("tfloor", k), s2("floor", k)
        out.append(("RLock, K=%d procs: longest wait in fair shares <= targeted floor's own"
                     % k, fair_shares(r), fair_shares(tf), False, "x fair share", None,
                    "the instant-handoff floor's own: %.1f x" % fair_shares(fl)
                    if fair_shares(fl) is not None else ""))
    return out


def client_cores(machine):
    """The cores the clients run on: all, or all but the server's with
    --pin."""
    n = machine.get("nproc") or 1
    return n - 1 if machine.get("pinned") and n >= 2 else n


def s12_pairs(rows):
    """Scenario 12's rows: (label, credisson's row, Redisson's row, the
    throughput key, the p99 key)."""
    def s2(impl, k, mode):
        return find(rows, "s2_contended", impl=impl, mode=mode, workers=k)

    out = [("uncontended pairs/s, one thread", find(rows, "s1_uncontended", impl="rlock"),
            find(rows, "s1_uncontended", impl="redisson"), "rate", "pair_p99_us")]
    for k in (8, 32):
        out.append(("K=%d, threads (of one JVM)" % k, s2("rlock", k, "threads"),
                    s2("redisson", k, "threads"), "rate", "wait_p99_us"))
        jp = s2("redisson", k, "procs") or find(rows, "s12_not_run", workers=k)
        if jp:
            out.append(("K=%d, processes (JVM processes)" % k, s2("rlock", k, "procs"),
                        jp, "rate", "wait_p99_us"))
    out.append(("semaphore of 2, 8 threads",
                find(rows, "s5_semaphore", impl="semaphore", permits=2, mode="threads"),
                find(rows, "s5_semaphore", impl="redisson_sem", permits=2, mode="threads"),
                "rate", "wait_p99_us"))
    out.append(("latch, 16 waiting threads",
                find(rows, "s6_latch", impl="latch", mode="threads", workers=16),
                find(rows, "s6_latch", impl="redisson", mode="threads", workers=16),
                "all_p50_us", "all_p99_us"))
    return [x for x in out if x[1] is not None or x[2] is not None]


def median(v):
    """The median of a non-empty list."""
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2.0


def ab_summary(ab):
    """The A/B of run.sh --ab by row, in the order the rows ran: (row,
    pairs, old values, new values, median of the per-pair ratios new over
    old, old p99 median, new p99 median). A row's value is its throughput
    (for the uncontended pairs, the ratio to the EVALSHA ceiling measured
    interleaved in the same process)."""
    by = {}
    order = []
    for r in ab:
        name = r["ab_row"]
        if name not in by:
            by[name] = {}
            order.append(name)
        v = r.get("ratio_median", r.get("rate"))
        p99 = r.get("write_wait_p99_us", r.get("pair_p99_us", r.get("wait_p99_us")))
        by[name].setdefault(r["pair"], {})[r["ab"]] = (v, p99)
    out = []
    for name in order:
        pairs = [x for _, x in sorted(by[name].items()) if "old" in x and "new" in x]
        if not pairs:
            continue
        old = [x["old"][0] for x in pairs]
        new = [x["new"][0] for x in pairs]
        out.append((name, len(pairs), old, new,
                    median([n / o for o, n in zip(old, new) if o]),
                    median([x["old"][1] for x in pairs if x["old"][1] is not None] or [0]),
                    median([x["new"][1] for x in pairs if x["new"][1] is not None] or [0])))
    return out


def ab_rows(rows, ab):
    """The target "no slower" of issue 30 (uncontended pairs and K <= 2, A/B
    medians >= 0.97 over five pairs), read from run.sh --ab when it ran;
    otherwise one line saying that a single run cannot tell, with the
    in-run ratios to the targeted floor."""
    out = []
    for name, n, _, _, med, _, _ in ab_summary(ab):
        out.append(("A/B %s: new >= 0.97 x old (median of %d pairs)" % (name, n),
                    med, 0.97, True, "x", None, ""))
    if out:
        return out
    ceil = find(rows, "ceiling") or {}
    s1 = find(rows, "s1_uncontended", impl="rlock")
    notes = []
    if s1 and ceil.get("protocol_pair_rps"):
        notes.append("pairs %.2f x the RLock protocol by hand (the targeted floor of one"
                     " worker)" % (s1["rate"] / ceil["protocol_pair_rps"]))
    for mode in ("procs", "threads"):
        v = ratio(find(rows, "s2_contended", impl="rlock", mode=mode, workers=2),
                  find(rows, "s2_contended", impl="tfloor", mode=mode, workers=2))
        if v is not None:
            notes.append("K=2 %s %.2f x the targeted floor" % (mode, v))
    out.append(("uncontended pairs and K<=2: no slower than main (A/B medians >= 0.97,"
                " five pairs)", None, 0.97, True, "x", None,
                "needs run.sh --ab MAIN_BUILDDIR" + ("; in this run: " + ", ".join(notes)
                                                     if notes else "")))
    return out


class Targets:
    def __init__(self):
        self.rows = []

    def add(self, name, value, limit, higher_is_better, unit="", note=""):
        """Records a target: `value` against `limit`; missing data is a
        'not measured' verdict rather than a pass."""
        if value is None or limit is None:
            verdict, by = "not measured", None
        elif (value >= limit) if higher_is_better else (value <= limit):
            verdict, by = "met", None
        else:
            verdict = "missed"
            by = (limit / value if value else float("inf")) if higher_is_better \
                else value / limit
        self.rows.append({"bench": "target", "target": name, "value": value,
                          "limit": limit, "unit": unit, "verdict": verdict,
                          "missed_by_factor": by, "note": note})


def main():
    rows, ab = load(sys.argv[1])
    out = []
    machine = find(rows, "machine") or {}
    ceil = find(rows, "ceiling") or {}
    p = out.append

    p("credisson benchmarks")
    p("machine: {} x {}; {}; load average {} at start, {} at end".format(
        machine.get("nproc", "?"), machine.get("cpu", "?"),
        machine.get("redis", "?"), machine.get("load_start", "?"),
        machine.get("load_end", "?")))
    p("")
    rtt = ceil.get("rtt_us")
    e1 = ceil.get("evalsha_rps_1")
    p("Ceiling (hiredis alone, same server, same run)")
    p("  PING, 1 connection          {:>10}/s   (round trip {} us)".format(
        fmt(ceil.get("ping_rps")), fmt(rtt)))
    p("  EVALSHA acquire, 1 conn     {:>10}/s   -> pair ceiling {}/s".format(
        fmt(e1), fmt(e1 / 2 if e1 else None)))
    for k in sorted(int(key.rsplit("_", 1)[1]) for key in ceil
                    if key.startswith("evalsha_rps_") and key != "evalsha_rps_1"):
        p("  EVALSHA acquire, {:>2} conns   {:>10}/s".format(
            k, fmt(ceil.get("evalsha_rps_%d" % k))))
    p("  RLock protocol by hand, pairs {:>8}/s   (acquire + unlock scripts + latch DEL)".format(
        fmt(ceil.get("protocol_pair_rps"))))
    p("  lock_renew.lua, 100 keys    {:>10}/s".format(fmt(ceil.get("renew100_rps"))))
    p("")

    # ---------------------------------------------------------------- s1
    if [x for x in rows if x.get("bench") == "s1_uncontended"]:
        p("Scenario 1: uncontended lock/unlock pairs, one thread")
        row = "  {:<16} {:>9} {:>9} {:>9} {:>9} {:>10}".format
        p(row(
            "impl", "pairs/s", "ratio", "p50 us", "p99 us", "cpu us/pair"))
        for r in [x for x in rows if x.get("bench") == "s1_uncontended"]:
            rr = r.get("ratio_median")
            if rr is None and e1:
                rr = r["rate"] / (e1 / 2)
            p(row(
                r["impl"], fmt(r["rate"]), fmt(rr, 2), fmt(r.get("pair_p50_us")),
                fmt(r.get("pair_p99_us")), fmt(r.get("client_cpu_us_per_cycle"))))
        p("  ratio: to single-connection EVALSHA rate / 2; for credisson and the naive")
        p("  lock measured interleaved with the pairs (median of rounds), for the peers")
        p("  to the ceiling above.")
        p("")

    # ---------------------------------------------------------------- s2
    if [x for x in rows if x.get("bench") == "s2_contended"]:
        p("Scenario 2: contended, K workers, lock / GET+SET counter / unlock")
        row = ("  {:<16} {:<7} {:>3} {:>8} {:>6} {:>7} {:>8} {:>8} {:>7} {:>6} {:>8} {:>7}"
               " {:>5} {:>5} {:>5}").format
        p(row(
            "impl", "mode", "K", "cycles/s", "/floor", "/tfloor", "wait p50", "p99 ms",
            "max ms", "max/fs", "hand p50", "p99 us", "self", "order", "exact"))
        s2 = [x for x in rows if x.get("bench") == "s2_contended" and x["impl"] not in JAVA]
        for r in s2:
            fmode = r["mode"] if r["mode"] in ("threads", "procs") else "procs"
            fl = find(rows, "s2_contended", impl="floor", mode=fmode, workers=r["workers"])
            tf = find(rows, "s2_contended", impl="tfloor", mode=fmode, workers=r["workers"])
            p(row(
                r["impl"], r["mode"], r["workers"], fmt(r["rate"]), fmt(ratio(r, fl), 2),
                fmt(ratio(r, tf), 2),
                fmt(ms(r.get("wait_p50_us")), 2), fmt(ms(r.get("wait_p99_us")), 1),
                fmt(ms(r.get("wait_max_us")), 0), fmt(fair_shares(r), 1),
                fmt(r.get("handoff_p50_us")),
                fmt(r.get("handoff_p99_us")), fmt(r.get("self_share"), 2),
                fmt(r.get("in_order_share"), 2), fmt(r.get("counter_exact"))))
        p("  /floor: throughput over the instant-handoff floor (same K and mode; the")
        p("  peers against the processes floor); /tfloor: over the targeted floor")
        p("  (tfloor: bare hiredis, a perfect line, RLock's scripts on the shared key,")
        p("  each release publishing to the next waiter's own channel). self: share")
        p("  of acquisitions won by the worker that had just released (barging).")
        p("  wait: time inside lock(); max/fs: the longest wait in fair shares (K x")
        p("  the mean cycle). order (scenario 3, the order of grants): share of")
        p("  acquisitions that passed no worker which had called lock() earlier and")
        p("  still waited.")
        p("")

    # ---------------------------------------------------------------- s4
    s4 = [x for x in rows if x.get("bench") == "s4_rwlock"]
    if s4:
        p("Scenario 4: read/write lock, 8 workers, 90 % of the cycles read (GET)")
        row = "  {:<9} {:<7} {:>8} {:>6} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>5} {:>5}".format
        p(row(
            "impl", "mode", "ops/s", "/floor", "/tfloor", "/rlock", "read p50", "p99 ms",
            "write p50", "p99 ms", "viol", "exact"))
        for r in s4:
            fl = find(rows, "s4_rwlock", impl="floor_rw", mode=r["mode"])
            tf = find(rows, "s4_rwlock", impl="tfloor_rw", mode=r["mode"])
            rl = find(rows, "s4_rwlock", impl="rlock", mode=r["mode"])
            p(row(
                r["impl"], r["mode"], fmt(r["rate"]), fmt(ratio(r, fl), 2),
                fmt(ratio(r, tf), 2), fmt(ratio(r, rl), 2),
                fmt(ms(r.get("read_wait_p50_us")), 2), fmt(ms(r.get("read_wait_p99_us")), 1),
                fmt(ms(r.get("write_wait_p50_us")), 2), fmt(ms(r.get("write_wait_p99_us")), 1),
                r.get("violations"), fmt(r.get("counter_exact"))))
        p("  floor_rw: a local process-shared rwlock (writers preferred) with the")
        p("  instant-handoff floor's Redis commands per cycle; tfloor_rw (the rw")
        p("  floor): the targeted floor with the read/write lock's own scripts on")
        p("  the shared key, writers preferred; rlock: RLock taken for reads too (no")
        p("  sharing). viol: a writer inside with anyone else.")
        p("")

    # ---------------------------------------------------------------- s5
    s5 = [x for x in rows if x.get("bench") == "s5_semaphore" and x["mode"] == "procs"
          and x["impl"] not in JAVA]
    if s5:
        p("Scenario 5: semaphore of k permits, 4k worker processes, INCR + GET inside")
        row = "  {:<10} {:>3} {:>4} {:>9} {:>6} {:>7} {:>8} {:>8} {:>8} {:>6} {:>5} {:>5}".format
        p(row(
            "impl", "k", "K", "cycles/s", "/floor", "/tfloor", "wait p50", "p99 ms",
            "max ms", "max/fs", "order", "viol"))
        for r in s5:
            fl = find(rows, "s5_semaphore", impl="floor_sem", permits=r["permits"],
                      mode="procs")
            tf = find(rows, "s5_semaphore", impl="tfloor_sem", permits=r["permits"],
                      mode="procs")
            p(row(
                r["impl"], r["permits"], r["workers"], fmt(r["rate"]),
                fmt(ratio(r, fl), 2), fmt(ratio(r, tf), 2),
                fmt(ms(r.get("wait_p50_us")), 2), fmt(ms(r.get("wait_p99_us")), 1),
                fmt(ms(r.get("wait_max_us")), 0), fmt(fair_shares(r), 1),
                fmt(r.get("in_order_share"), 2), r.get("violations")))
        p("  floor_sem: a local process-shared semaphore of k with the Redis commands")
        p("  of a semaphore cycle by hand (acquire script, latch DEL, release")
        p("  script); tfloor_sem: the targeted floor (the semaphore's scripts on the")
        p("  shared key, a perfect line, each release publishing to the next")
        p("  waiter's own channel). viol: more than k inside at once (the check")
        p("  here; INCR keeps the counter exact without any lock).")
        p("")

    # ---------------------------------------------------------------- s6
    s6 = [x for x in rows if x.get("bench") == "s6_latch" and x.get("impl") not in JAVA]
    if s6:
        p("Scenario 6: latch release fan-out, K waiters, one count down per round")
        row = "  {:<6} {:<7} {:>3} {:>6} {:>8} {:>8} {:>8} {:>6} {:>9} {:>9} {:>9} {:>6} {:>6}".format
        p(row(
            "impl", "mode", "K", "rounds", "p50 us", "p99 us", "max us", "RTTs",
            "all p50", "all p99", "all max", "/floor", "errors"))
        for r in s6:
            fl = find(rows, "s6_latch", impl="floor", mode=r["mode"],
                      workers=r["workers"])
            rr = (r["all_p99_us"] / fl["all_p99_us"]
                  if fl and fl.get("all_p99_us") else None)
            p(row(
                r.get("impl", "latch"), r["mode"], r["workers"], r["rounds"],
                fmt(r["release_p50_us"]), fmt(r["release_p99_us"]),
                fmt(r["release_max_us"]),
                fmt(r["release_p50_us"] / rtt if rtt else None, 1),
                fmt(r.get("all_p50_us")), fmt(r.get("all_p99_us")),
                fmt(r.get("all_max_us")), fmt(rr, 2), r["errors"]))
        p("  p50/p99/max: from just before cr_latch_count_down to each waiter's")
        p("  return from cr_latch_await; RTTs: that p50 in PING round trips of the")
        p("  ceiling; all: per round, until the last waiter had returned (us).")
        p("  floor: the same rounds without the library, each waiter a bare")
        p("  hiredis SUBSCRIBE connection and one PUBLISH per round; /floor: all")
        p("  p99 over the floor's.")
        p("")

    # ---------------------------------------------------------------- s7
    if [x for x in rows if x.get("bench") == "s7_watchdog"]:
        p("Scenario 7: watchdog at scale (lease-less holds in one client)")
        row = "  {:>7} {:>6} {:>10} {:>8} {:>8} {:>7} {:>6} {:>8} {:>7} {:>8} {:>4} {:>9}".format
        p(row(
            "locks", "wd ms", "calls/per", "ideal", "per call", "cycle s", "cpu %",
            "ms/cycle", "B/lock", "B+handle", "lost", "alive"))
        for r in [x for x in rows if x.get("bench") == "s7_watchdog"]:
            rpl = r["renewals_per_lock_per_period"]
            p(row(
                fmt(r["locks"]), fmt(r["watchdog_ms"]), fmt(r["renewal_calls_per_period"], 1),
                fmt(r["locks"] / 100.0), fmt(r["locks_per_call"], 1),
                fmt(r["period_s"] / rpl if rpl else None, 2), fmt(r["cpu_pct"], 1),
                fmt(r["cpu_ms_per_period"] / rpl if rpl else None, 0),
                fmt(r["bytes_per_lock_steady"]), fmt(r["bytes_per_lock_handles"]),
                r["leases_lost"], "{}/{}".format(r["pttl_alive"], r["pttl_sampled"])))
        p("  calls/per: renewal script calls per period (watchdog / 3); ideal: one per")
        p("  100 locks; cycle s: how often each lock was actually renewed; cpu %: the")
        p("  client's CPU over the quiet window in % of one core at this watchdog")
        p("  timeout (the default 30 s renews 10 times less often); ms/cycle: CPU")
        p("  per renewal of every lock.")
        p("  B/lock: malloc'd bytes per held lock with the handles freed (the holds")
        p("  table); B+handle: with every cr_lock handle still alive.")
        p("")

    # ---------------------------------------------------------------- s8
    w = find(rows, "s8_wheel")
    if w:
        p("Scenario 8: timing wheel alone, {} timers".format(fmt(w["timers"])))
        p("  schedule {} ns (ceiling {} ns: ratio {}), cancel {} ns (ceiling {} ns:"
          " ratio {}),".format(fmt(w["schedule_ns"], 1), fmt(w["ceiling_append_ns"], 1),
                               fmt(w["schedule_ratio"], 2), fmt(w["cancel_ns"], 1),
                               fmt(w["ceiling_unlink_ns"], 1), fmt(w["cancel_ratio"], 2)))
        p("  reschedule {} ns, fire {} ns per timer tick by tick, {} ns after one"
          " jump".format(fmt(w["reschedule_ns"], 1), fmt(w["fire_ns"], 1),
                         fmt(w["jump_fire_ns"], 1)))
        p("  ceiling: append to / unlink from 512 plain intrusive lists.")
        p("")

    # ---------------------------------------------------------------- s9
    s9 = [x for x in rows if x.get("bench") == "s9_ratelimiter"]
    if s9:
        p("Scenario 9: rate limiter, K workers taking one permit at a time")
        row = "  {:<7} {:>3} {:>11} {:>8} {:>10} {:>10} {:>6} {:>9} {:>10} {:>6}".format
        p(row("mode", "K", "rate", "grants", "grants/s", "ceiling/s", "ratio",
              "max/window", "tries/grant", "errors"))
        for r in s9:
            capped = r.get("rate", 0) > 0
            ceiling = r["ceiling_per_s"] if capped else (e1 or None)
            rr = r["ratio"] if capped else (
                r["grants_per_s"] / e1 if e1 else None)
            p(row(
                r["mode"], r["workers"],
                "{}/{}ms".format(r["rate"], r["interval_ms"]) if capped else "none",
                fmt(r["grants"]), fmt(r["grants_per_s"]), fmt(ceiling),
                fmt(rr, 2), r.get("most_in_window") if capped else "-",
                fmt(r.get("attempts_per_grant"), 2), r["errors"]))
        p("  grants/s: in the whole intervals after the first grant; ceiling: the")
        p("  limiter's own (rate per interval), or with no rate the single-connection")
        p("  EVALSHA rate of the ceiling above. max/window: the most grants in any")
        p("  interval-long window of this host's clock (the server stamps the")
        p("  records). tries/grant: scripts the server ran per grant (1 + the")
        p("  attempts that were told to wait).")
        p("")

    # ---------------------------------------------------------------- s10
    arows = [x for x in rows if x.get("bench") == "s10_async"]
    e8 = ceil.get("evalsha_rps_8")
    if arows:
        p("Scenario 10: asynchronous API, one loop thread, against one thread per waiter")
        row = "  {:<8} {:>8} {:>6} {:>8} {:>10} {:>7} {:>9} {:>8} {:>8} {:>8} {:>6} {:>8} {:>5}".format
        p(row("mode", "requests", "locks", "threads", "acquired/s", "ratio", "B/pending",
              "us/iter", "p99 us", "p99.9 us", "max us", "cold max", "subs"))
        for r in arows:
            p(row(r["mode"], fmt(r["requests"]), fmt(r["locks"]), fmt(r.get("threads", 1)),
                  fmt(r["rate"]), fmt(r["rate"] / (e8 / 2) if e8 else None, 2),
                  fmt(r.get("bytes_per_pending")), fmt(r.get("cpu_us_per_iteration"), 1),
                  fmt(r.get("dispatch_p99_us"), 1), fmt(r.get("dispatch_p999_us"), 1),
                  fmt(r.get("dispatch_max_us"), 1), fmt(r.get("cold_dispatch_max_us"), 1),
                  fmt(r.get("pubsub_links"))))
        p("  ratio: acquisitions (each an acquire and an unlock script) per second to")
        p("  half the EVALSHA rate over 8 connections; B/pending: malloc'd bytes per")
        p("  pending request; us/iter: the library's thread CPU per loop iteration;")
        p("  p99/p99.9/max: thread CPU of one cr_async_io or cr_async_timeout call,")
        p("  in the second of two passes of the same load; cold max: the longest in")
        p("  the first pass, where first touches of fresh memory cost page faults;")
        p("  subs: subscriber connections the server lists for the client.")
        p("")

    # ---------------------------------------------------------------- s11
    s11 = [x for x in rows if x.get("bench") == "s11_barrier"]
    if s11:
        p("Scenario 11: cyclic barrier, K parties, rounds back to back")
        row = "  {:<8} {:<7} {:>3} {:>7} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}".format
        p(row("impl", "mode", "K", "rounds", "rounds/s", "p50 us", "p99 us",
              "max us", "p50/fl", "p99/fl", "errors"))
        for r in s11:
            fl = find(rows, "s11_barrier", impl="floor", mode=r["mode"],
                      workers=r["workers"])
            p(row(
                r["impl"], r["mode"], r["workers"], r["rounds"],
                fmt(r["rounds_per_s"]), fmt(r["round_p50_us"]),
                fmt(r["round_p99_us"]), fmt(r["round_max_us"]),
                fmt(r["round_p50_us"] / fl["round_p50_us"]
                    if fl and fl.get("round_p50_us") else None, 2),
                fmt(r["round_p99_us"] / fl["round_p99_us"]
                    if fl and fl.get("round_p99_us") else None, 2),
                r["errors"]))
        p("  round: a party's time between two of its releases (its arrival, the")
        p("  wait for the slowest, the wake-up). floor: the same rounds with bare")
        p("  hiredis, an INCR script per arrival and one PUBLISH per round to")
        p("  SUBSCRIBEd connections; /fl: over the floor's.")
        p("")

    # ---------------------------------------------------------------- s12
    cores = client_cores(machine)
    if [x for x in rows if x.get("impl") in JAVA]:
        p("Scenario 12: the real Java Redisson client (4.7) side by side, same server")
        row = "  {:<34} {:>9} {:>9} {:>6} {:>8} {:>8} {:>6}".format
        p(row("row", "credisson", "Redisson", "ratio", "c p99 ms", "R p99 ms", "p99 x"))
        for label, c, r, rate, p99 in s12_pairs(rows):
            if rate == "all_p50_us":
                p(row(label, "", "", "", fmt(ms(c.get(p99)), 2) if c else "-",
                      fmt(ms(r.get(p99)), 2) if r else "-", fmt(ratio(c, r, p99), 2)))
                p("    all released p50: credisson %s ms, Redisson %s ms" % (
                    fmt(ms(c.get(rate)), 2) if c else "-",
                    fmt(ms(r.get(rate)), 2) if r else "-"))
                continue
            if r is not None and r.get("bench") == "s12_not_run":
                p(row(label, fmt(c.get(rate)) if c else "-", "-", "-",
                      fmt(ms(c.get(p99)), 2) if c else "-", "-", "-"))
                p("    not run: %d JVM processes on %d cores would measure the scheduler"
                  " (run.sh runs" % (r["workers"], r["nproc"]))
                p("    at most four per core)")
                continue
            if r is not None and r.get("jvms", 1) > cores:
                p(row(label, fmt(c.get(rate)) if c else "-", "-", "-",
                      fmt(ms(c.get(p99)), 2) if c else "-", "-", "-"))
                p("    not a result: %d JVM processes on %d client core%s, each with its"
                  " JIT, GC and" % (r["jvms"], cores, "" if cores == 1 else "s"))
                p("    Netty threads, measure the scheduler (%s cycles/s, p99 %s ms; raw"
                  " figures in the JSON)" % (fmt(r["rate"]), fmt(ms(r["wait_p99_us"]), 0)))
                continue
            p(row(label, fmt(c.get(rate)) if c else "-", fmt(r.get(rate)) if r else "-",
                  fmt(ratio(c, r, rate), 2), fmt(ms(c.get(p99)), 2) if c else "-",
                  fmt(ms(r.get(p99)), 2) if r else "-", fmt(ratio(c, r, p99), 2)))
        p("  ratio: credisson's throughput over Redisson's; p99 x: credisson's p99 over")
        p("  Redisson's (wait inside lock() or acquire(); per pair; for the latch, the")
        p("  time until every waiter returned). credisson: threads share one client,")
        p("  processes have one each; Redisson: threads of one JVM (one RedissonClient),")
        p("  or JVM processes. Same cycles as scenarios 1, 2 and 5.")
        p("")

    # ---------------------------------------------------------------- s13
    s13 = [x for x in rows if x.get("bench") == "s13_mixed"]
    if s13:
        p("Scenario 13: mixed fairness, C processes and Java threads on one object")
        row = ("  {:<10} {:<10} {:>3} {:<8} {:>7} {:>6} {:>6} {:>10} {:>7} {:>7} "
               "{:>6}").format
        p(row("object", "side", "K", "as", "cycles", "share", "fair", "longest ms",
              "/fair", "alone", "exact"))
        for r in s13:
            obj = "rlock" if r["impl"] == "rlock" else "sem of %d" % r["permits"]
            for side, k, cyc, mx, mode in (
                    ("credisson", r["c_workers"], r["c_cycles"], r["c_wait_max_us"],
                     r["mode"]),
                    ("Redisson", r["java_workers"], r["java_cycles"], r["java_wait_max_us"],
                     r["java_mode"])):
                p(row(obj, side, k, mode, fmt(cyc),
                      fmt(cyc / r["cycles"] if r["cycles"] else None, 2),
                      fmt(k / float(r["workers"]), 2), fmt(ms(mx), 1),
                      fmt(mx / r["fair_share_us"] if r.get("fair_share_us") else None, 1),
                      fmt(s13_alone(rows, r, "C" if side == "credisson" else "Java"),
                          1),
                      fmt(r.get("counter_exact")) if side == "credisson" else ""))
                obj = ""
        p("  share: the side's part of all acquisitions; fair: its part of the")
        p("  workers; longest: the side's longest wait; /fair: that in fair shares (all")
        p("  K workers x the mean cycle); alone: the same side's longest wait in fair")
        p("  shares when its K workers run alone (Redisson's threads barge on each")
        p("  other). exact: the counter both sides increment under the object (GET +")
        p("  SET, or INCR) matches their cycles.")
        p("")

    # ---------------------------------------------------------------- issue 30
    i30 = issue30_rows(rows)
    if any(x[1] is not None for x in i30):
        p("Hand-overs against the targeted floor (issue 30)")
        row = "  {:<72} {:>7} {:>7} {:>7}".format
        p(row("row", "value", "limit", "/floor"))
        for name, v, limit, _, _, fl, _ in i30:
            p(row(name, fmt(v, 2), fmt(limit, 2), fmt(fl, 2)))
        p("  value: over the targeted floor of the same run (or as named); /floor:")
        p("  the same throughput over the instant-handoff floor. The targeted floor")
        p("  hands over through Redis at the wire's least cost (one release script")
        p("  publishing to the next waiter's own channel, one acquire script); the")
        p("  instant-handoff floor through local semaphores.")
        p("")

    # ---------------------------------------------------------------- A/B
    abs_ = ab_summary(ab)
    if abs_:
        builds = find(rows, "ab_builds") or {}
        p("A/B, interleaved on one server: old %s, new %s" % (
            builds.get("old", "?"), builds.get("new", "?")))
        row = "  {:<26} {:>5} {:>10} {:>10} {:>9} {:>10} {:>10}".format
        p(row("row", "pairs", "old med", "new med", "new/old", "old p99 ms", "new p99 ms"))
        for name, n, old, new, med, op99, np99 in abs_:
            digits = 3 if max(old + new) < 10 else 0
            p(row(name, n, fmt(median(old), digits), fmt(median(new), digits), fmt(med, 3),
                  fmt(ms(op99), 2), fmt(ms(np99), 2)))
        p("  med: medians of the throughput (cycles/s; for the uncontended pairs the")
        p("  ratio to the EVALSHA ceiling measured interleaved in the same process);")
        p("  new/old: the median of the per-pair ratios; p99: the wait's (the")
        p("  writers' for the read/write mix, a pair's for the uncontended pairs).")
        p("")

    for r in [x for x in rows if x.get("bench") == "note"]:
        p("note: " + r.get("text", ""))

    # ---------------------------------------------------------------- targets
    t = Targets()
    s1 = find(rows, "s1_uncontended", impl="rlock")
    pp = ceil.get("protocol_pair_rps")
    t.add("uncontended pairs/s >= 0.9 x (EVALSHA rate / 2)",
          s1.get("ratio_median") if s1 else None, 0.9, True, "x",
          "the RLock protocol done by hand with hiredis reaches %.2f x" %
          (pp / (e1 / 2)) if pp and e1 else "")
    for mode in ("threads", "procs"):
        r8 = find(rows, "s2_contended", impl="rlock", mode=mode, workers=8)
        f8 = find(rows, "s2_contended", impl="floor", mode=mode, workers=8)
        n8 = find(rows, "s2_contended", impl="naive", mode=mode, workers=8)
        t.add("K=8 %s: exact counter" % mode,
              1.0 if r8 and r8.get("counter_exact") else (0.0 if r8 else None), 1.0, True)
        t.add("K=8 %s: throughput >= 0.8 x instant-handoff floor" % mode,
              r8["rate"] / f8["rate"] if r8 and f8 else None, 0.8, True, "x")
        t.add("K=8 %s: p99 wait <= 1/3 of naive C peer's" % mode,
              r8["wait_p99_us"] / n8["wait_p99_us"] if r8 and n8 else None,
              1 / 3.0, False, "x")
        t.add("K=8 %s: longest wait <= 3 x fair share (K x mean cycle)" % mode,
              r8["wait_max_us"] / (8 * r8["cycle_us"]) if r8 else None, 3.0, False,
              "x fair share", fair_share_note(f8))
        t.add("K=8 %s: handoff p50 <= 3 round trips" % mode,
              r8["handoff_p50_us"] / rtt if r8 and rtt else None, 3.0, False,
              "round trips")
    fr = find(rows, "s2_contended", impl="fair", mode="procs", workers=8)
    fl = find(rows, "s2_contended", impl="floor", mode="procs", workers=8)
    nv = find(rows, "s2_contended", impl="naive", mode="procs", workers=8)
    t.add("K=8 procs, fair lock: throughput >= 0.8 x instant-handoff floor",
          fr["rate"] / fl["rate"] if fr and fl else None, 0.8, True, "x")
    t.add("K=8 procs, fair lock: p99 wait <= 1/3 of naive C peer's",
          fr["wait_p99_us"] / nv["wait_p99_us"] if fr and nv else None,
          1 / 3.0, False, "x")
    t.add("K=8 procs, fair lock: longest wait <= 3 x fair share",
          fr["wait_max_us"] / (8 * fr["cycle_us"]) if fr else None, 3.0, False,
          "x fair share", fair_share_note(fl))
    r8 = find(rows, "s2_contended", impl="rlock", mode="procs", workers=8)
    py = find(rows, "s2_contended", impl="python3-redis", workers=8)
    nd = find(rows, "s2_contended", impl="redlock", workers=8)
    t.add("K=8 procs: throughput >= 2 x python3-redis Lock",
          r8["rate"] / py["rate"] if r8 and py else None, 2.0, True, "x")
    t.add("K=8 procs: throughput >= 3 x redlock",
          r8["rate"] / nd["rate"] if r8 and nd else None, 3.0, True, "x")
    for mode in ("procs", "threads"):
        l64 = find(rows, "s6_latch", impl="latch", mode=mode, workers=64)
        f64 = find(rows, "s6_latch", impl="floor", mode=mode, workers=64)
        t.add("latch, 64 waiting %s: all released within 5 ms p99" % mode,
              l64["all_p99_us"] / 1000.0 if l64 and "all_p99_us" in l64 else None,
              5.0, False, "ms",
              "bare pub/sub floor: %.1f ms" % (f64["all_p99_us"] / 1000.0)
              if f64 else "")
    for mode in ("threads", "procs"):
        rl = find(rows, "s9_ratelimiter", mode=mode, rate=1000)
        t.add("rate limiter, 8 %s: grants >= 0.95 x its ceiling" % mode,
              rl["ratio"] if rl else None, 0.95, True, "x")
    for k in (16, 64):
        for mode in ("procs", "threads"):
            br = find(rows, "s11_barrier", impl="barrier", mode=mode, workers=k)
            bf = find(rows, "s11_barrier", impl="floor", mode=mode, workers=k)
            t.add("barrier, %d %s: round p99 <= 2 x bare pub/sub floor" % (k, mode),
                  br["round_p99_us"] / bf["round_p99_us"] if br and bf else None,
                  2.0, False, "x")
    wd = find(rows, "s7_watchdog", locks=100000, watchdog_ms=3000)
    wd30 = find(rows, "s7_watchdog", locks=100000, watchdog_ms=30000)
    t.add("100k locks: one renewal call per 100 locks (+5 %)",
          wd["renewal_calls"] / (wd["renewals_sent"] / 100.0)
          if wd and wd["renewals_sent"] else None, 1.05, False,
          "calls per 100 renewals")
    t.add("100k locks: every lock renewed once per period (+-10 %)",
          wd["renewals_per_lock_per_period"] if wd else None, 0.9, True,
          "renewals per lock per period")
    t.add("100k locks: client CPU < 5 % of one core (default 30 s watchdog)",
          wd30["cpu_pct"] if wd30 else None, 5.0, False, "%",
          "%.1f %% at the 3 s watchdog (ten times the renewals)" % wd["cpu_pct"]
          if wd else "")
    t.add("100k locks: client memory < 512 B per held lock (holds)",
          wd["bytes_per_lock_steady"] if wd else None, 512, False, "B")
    t.add("100k locks: client memory < 512 B per held lock (with handles)",
          wd["bytes_per_lock_handles"] if wd else None, 512, False, "B")
    t.add("100k locks: no lease lost, sampled PTTLs all > 0",
          1.0 if wd and wd["leases_lost"] == 0 and wd["pttl_alive"] == wd["pttl_sampled"]
          else (0.0 if wd else None), 1.0, True)

    # The real Redisson client (scenario 12): the lead measured from outside
    # on a quiet machine (issue 28), kept.
    for label, c, r, rate, p99 in s12_pairs(rows):
        lead = {"uncontended pairs/s, one thread": 4.4, "K=8, threads (of one JVM)": 6.2,
                "semaphore of 2, 8 threads": 3.5}.get(label)
        if lead is None:
            continue
        if r is not None and (r.get("bench") == "s12_not_run" or
                              r.get("jvms", 1) > client_cores(machine)):
            continue
        t.add("vs Redisson, %s: throughput >= %.1f x Redisson's" % (label, lead),
              ratio(c, r, rate), lead, True, "x")
        t.add("vs Redisson, %s: p99 <= 0.15 x Redisson's" % label,
              ratio(c, r, p99), 0.15, False, "x")
    # Mixed fairness (scenario 13): each side within 3 fair shares.
    if not find(rows, "s13_mixed"):
        t.add("mixed RLock, C and Java: each side's longest wait <= 3 x fair share", None,
              3.0, False)
    for r in [x for x in rows if x.get("bench") == "s13_mixed"]:
        what = "RLock" if r["impl"] == "rlock" else "semaphore of %d" % r["permits"]
        fs = r.get("fair_share_us")
        for side, k, mx, mode in (("C", r["c_workers"], r["c_wait_max_us"], r["mode"]),
                                  ("Java", r["java_workers"], r["java_wait_max_us"],
                                   r["java_mode"])):
            alone = s13_alone(rows, r, side)
            t.add("mixed %s (%d C %s + %d Java %s): %s side's longest wait <= 3 x fair share"
                  % (what, r["c_workers"], r["mode"], r["java_workers"], r["java_mode"],
                     side),
                  mx / fs if fs else None, 3.0, False, "x fair share",
                  "; ".join(x for x in (
                      "its share of acquisitions %.2f for %.2f of the workers" % (
                          (r["c_cycles"] if side == "C" else r["java_cycles"]) /
                          float(r["cycles"]), k / float(r["workers"]))
                      if r["cycles"] else "",
                      "alone %.1f x" % alone if alone is not None else "")
                      if x))
    # Issue 30: against the targeted floor.
    for name, v, limit, hib, unit, fl, note in issue30_rows(rows) + ab_rows(rows, ab):
        if fl is not None:
            note = ("%s; " % note if note else "") + "%.2f x the instant-handoff floor" % fl
        t.add(name, v, limit, hib, unit, note)

    a100 = find(rows, "s10_async", mode="async", locks=100)
    a1 = find(rows, "s10_async", mode="async", locks=1)
    th = find(rows, "s10_async", mode="threads")
    t.add("async, 10k pending: every request served, never two holders",
          1.0 if a100 and a100["violations"] == 0 and a100["obtained"] == a100["requests"]
          else (0.0 if a100 else None), 1.0, True)
    t.add("async, 10k pending: <= 1 KiB per pending request",
          a100["bytes_per_pending"] if a100 else None, 1024, False, "B")
    t.add("async, 10k pending: longest dispatch <= 1 ms of CPU",
          a100["dispatch_max_us"] / 1000.0 if a100 else None, 1.0, False, "ms",
          "%.1f ms in the cold pass" % (a100["cold_dispatch_max_us"] / 1000.0)
          if a100 else "")
    t.add("async, 1k pending on one lock: longest dispatch <= 1 ms of CPU",
          a1["dispatch_max_us"] / 1000.0 if a1 else None, 1.0, False, "ms",
          "%.1f ms in the cold pass" % (a1["cold_dispatch_max_us"] / 1000.0)
          if a1 else "")
    t.add("async: one subscriber connection for all waiters",
          a100["pubsub_links"] if a100 else None, 1, False, "links")
    t.add("async, 10k pending: rate >= 1 thread per waiter's",
          a100["rate"] / th["rate"] if a100 and th else None, 1.0, True, "x")

    p("Targets")
    for r in t.rows:
        v = r["value"]
        detail = "" if v is None else "{} {} (limit {})".format(
            fmt(v, 3 if abs(v) < 10 else 1), r["unit"], fmt(r["limit"], 3 if r["limit"] < 10 else 0))
        if r["verdict"] == "missed":
            detail += ", missed by {}x".format(fmt(r["missed_by_factor"], 2))
        if r["note"]:
            detail += "; " + r["note"]
        p("  [{:<12}] {}: {}".format(r["verdict"], r["target"], detail))
    p("")
    p("JSON")
    print("\n".join(out))
    for r in rows + ab:
        print(json.dumps(r, sort_keys=True))
    for r in t.rows:
        print(json.dumps(r, sort_keys=True))


if __name__ == "__main__":
    main()
