// SPDX-License-Identifier: MIT
// Peer benchmark: npm redlock v4 on ioredis, scenarios 1 and 2 of
// doc/benchmarks.md, printing the same JSON lines as bench_lock.
//
//   node peer_redlock.js --url redis://127.0.0.1:PORT --seconds S
//        --scenario uncontended|contended [--workers K]
//
// Redlock with one server is a single-instance Redis lock: SET NX PX to
// take it, a compare-and-delete script to release it, and retries while it
// is busy. It is given retryCount -1 (wait forever), retryDelay 1 ms and no
// jitter, as the naive C peer polls, instead of its defaults (10 retries
// 200 +- 100 ms apart), which would only make it slower. Contended workers
// are K concurrent async loops in this one process, each with its own
// connection and Redlock instance (node's own way of running concurrent
// clients); timestamps come from process.hrtime (CLOCK_MONOTONIC).
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');

const LOCK_NAME = 'bench:lock';
const COUNTER_KEY = 'bench:counter';

function args() {
    const a = { url: 'redis://127.0.0.1:6379', seconds: 3, scenario: 'uncontended', workers: 8 };
    const v = process.argv.slice(2);
    for (let i = 0; i + 1 < v.length; i += 2) {
        const k = v[i].replace(/^--/, '');
        a[k] = k === 'url' || k === 'scenario' ? v[i + 1] : Number(v[i + 1]);
    }
    return a;
}

const now = () => process.hrtime.bigint();

function pct(sorted, p) {
    if (sorted.length === 0) return 0;
    const i = Math.floor(p / 100 * (sorted.length - 1) + 0.5);
    return Number(sorted[Math.min(i, sorted.length - 1)]);
}

function client(url) {
    return new Redis(url, { enableOfflineQueue: true, maxRetriesPerRequest: 1 });
}

function redlock(c) {
    return new Redlock([c], { retryCount: -1, retryDelay: 1, retryJitter: 0, driftFactor: 0.01 });
}

async function uncontended(a) {
    const c = client(a.url);
    const rl = redlock(c);
    const warm = await rl.lock(LOCK_NAME, 30000);
    await warm.unlock();
    const lat = [];
    let n = 0;
    const start = now();
    const end = start + BigInt(Math.round(a.seconds * 1e9));
    let t = start;
    while (t < end) {
        const t0 = now();
        const l = await rl.lock(LOCK_NAME, 30000);
        await l.unlock();
        t = now();
        lat.push(t - t0);
        n++;
    }
    c.disconnect();
    lat.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    const elapsed = Number(t - start) / 1e9;
    return {
        bench: 's1_uncontended', impl: 'redlock', mode: 'async', workers: 1,
        seconds: elapsed, cycles: n, rate: n / elapsed,
        pair_p50_us: pct(lat, 50) / 1e3, pair_p99_us: pct(lat, 99) / 1e3,
    };
}

async function contended(a) {
    const k = a.workers;
    const admin = client(a.url);
    await admin.del(LOCK_NAME, COUNTER_KEY);
    const st = { stop: false, inCs: false, violations: 0, self: 0, lastHolder: -1, lastRelease: 0n };
    const waits = [];
    const handoffs = [];
    let cycles = 0;
    const clients = [];
    for (let i = 0; i < k; i++) {
        const c = client(a.url);
        await c.ping();
        clients.push(c);
    }
    async function worker(idx) {
        const c = clients[idx];
        const rl = redlock(c);
        while (!st.stop) {
            const t0 = now();
            const l = await rl.lock(LOCK_NAME, 30000);
            const t1 = now();
            if (st.inCs) st.violations++;
            st.inCs = true;
            if (st.lastHolder >= 0) {
                if (st.lastHolder !== idx) handoffs.push(t1 - st.lastRelease);
                else st.self++;
            }
            waits.push(t1 - t0);
            const v = await c.get(COUNTER_KEY);
            await c.set(COUNTER_KEY, Number(v || 0) + 1);
            st.lastHolder = idx;
            st.inCs = false;
            st.lastRelease = now();
            await l.unlock();
            cycles++;
        }
    }
    const start = now();
    const running = [];
    for (let i = 0; i < k; i++) running.push(worker(i));
    setTimeout(() => { st.stop = true; }, a.seconds * 1000);
    await Promise.all(running);
    const elapsed = Number(now() - start) / 1e9;
    const counter = Number(await admin.get(COUNTER_KEY) || 0);
    await admin.del(LOCK_NAME, COUNTER_KEY);
    for (const c of clients) c.disconnect();
    admin.disconnect();
    const cmp = (x, y) => (x < y ? -1 : x > y ? 1 : 0);
    waits.sort(cmp);
    handoffs.sort(cmp);
    return {
        bench: 's2_contended', impl: 'redlock', mode: 'async', workers: k,
        seconds: elapsed, cycles, rate: cycles / elapsed, counter,
        counter_exact: counter === cycles, violations: st.violations,
        wait_p50_us: pct(waits, 50) / 1e3, wait_p99_us: pct(waits, 99) / 1e3,
        wait_max_us: pct(waits, 100) / 1e3,
        wait_mean_us: waits.reduce((s, x) => s + Number(x), 0) / Math.max(waits.length, 1) / 1e3,
        handovers: handoffs.length,
        handoff_p50_us: pct(handoffs, 50) / 1e3, handoff_p99_us: pct(handoffs, 99) / 1e3,
        self_share: st.self / Math.max(cycles - 1, 1),
        cycle_us: elapsed * 1e6 / Math.max(cycles, 1),
    };
}

(async () => {
    const a = args();
    const out = a.scenario === 'uncontended' ? await uncontended(a) : await contended(a);
    process.stdout.write(JSON.stringify(out) + '\n');
    process.exit(0);
})().catch((e) => {
    process.stderr.write('peer_redlock: ' + (e && e.stack ? e.stack : e) + '\n');
    process.exit(1);
});
