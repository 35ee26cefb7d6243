// SPDX-License-Identifier: MIT
//
// The real Java Redisson client as a peer in credisson's benchmark
// (doc/benchmarks.md, scenario 12). Compiled against the client that
// tests/java/redisson.sh builds from Redisson's own sources:
//
//   CP=$(tests/java/redisson.sh classpath bench/redisson_peer)
//   java -cp "$CP" RedissonPeer --url redis://127.0.0.1:PORT MODE ARGS...
//
// Modes:
//   pairs SECONDS
//       one thread: RLock lock() and unlock() back to back, after a warm-up
//       of one second; prints {"bench":"s1_uncontended","impl":"redisson",...}
//   latch WAITERS SECONDS
//       WAITERS threads await one RCountDownLatch, which a coordinator
//       thread counts down once per round, once every waiter is waiting;
//       per waiter the time from the count down to its return, per round
//       until the last waiter returned; prints {"bench":"s6_latch",...}
//   worker KIND NAME THREADS PERMITS
//       the contended loop for bench/bench_lock (--impl redisson, and the
//       Java side of a mixed run), driven through stdin and stdout: warms
//       up on keys of its own, prints "ready", reads "go START_NS END_NS"
//       (CLOCK_MONOTONIC, which System.nanoTime reads on Linux, so the same
//       clock as the C workers'), runs its THREADS threads until END_NS,
//       then prints one line per thread, "worker CYCLES WAIT_MAX_NS WAIT_NS
//       WAIT_NS ...", and "done". KIND lock: RLock NAME's lock() and
//       unlock() around GET and SET of bench:counter; KIND sem: RSemaphore
//       NAME's acquire() and release(), around GET and SET with one permit
//       and INCR and GET with more (the C workers' cycles).
//
// The client has Redisson's defaults but three: StringCodec (the offline
// build has no Kryo; the synchronizers choose their own codecs anyway), a
// minimum of idle connections no larger than the threads need (a faster
// start for many JVMs), and warnings-only logging (set by the caller).
// Benchmark code: it exits on the first error.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.redisson.Redisson;
import org.redisson.api.RAtomicLong;
import org.redisson.api.RBucket;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNode;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public final class RedissonPeer {
    private static final String COUNTER = "bench:counter";
    private static final long WARM_NS = TimeUnit.SECONDS.toNanos(1);
    private static final int LATCH_WARMUP_ROUNDS = 3;
    private static final long SETTLE_NS = TimeUnit.MILLISECONDS.toNanos(5);
    private static final long WAITING_MAX_NS = TimeUnit.MILLISECONDS.toNanos(200);

    private RedissonPeer() {
    }

    public static void main(String[] args) throws Exception {
        String url = "redis://127.0.0.1:6379";
        int at = 0;
        if (args.length >= 2 && args[0].equals("--url")) {
            url = args[1];
            at = 2;
        }
        if (args.length <= at) {
            usage();
        }
        String[] rest = Arrays.copyOfRange(args, at + 1, args.length);
        switch (args[at]) {
            case "pairs":
                need(rest, 1);
                pairs(url, Double.parseDouble(rest[0]));
                break;
            case "latch":
                need(rest, 2);
                latch(url, Integer.parseInt(rest[0]), Double.parseDouble(rest[1]));
                break;
            case "worker":
                need(rest, 4);
                worker(url, rest[0], rest[1], Integer.parseInt(rest[2]),
                       Integer.parseInt(rest[3]));
                break;
            default:
                usage();
        }
        System.exit(0);
    }

    private static void usage() {
        System.err.println("usage: RedissonPeer [--url URL] (pairs SECONDS | latch WAITERS SECONDS"
                           + " | worker lock|sem NAME THREADS PERMITS)");
        System.exit(2);
    }

    private static void need(String[] a, int n) {
        if (a.length < n) {
            usage();
        }
    }

    /** A client with Redisson's defaults but the three the header names. */
    private static RedissonClient client(String url, int threads) {
        Config cfg = new Config();
        cfg.setCodec(StringCodec.INSTANCE);
        cfg.useSingleServer()
                .setAddress(url)
                .setConnectionMinimumIdleSize(Math.max(2, Math.min(24, threads + 1)));
        return Redisson.create(cfg);
    }

    /** Nanosecond samples; percentiles once sorted. */
    private static final class Samples {
        private long[] v = new long[1024];
        private int n;
        private long max;

        void add(long x) {
            if (n == v.length) {
                v = Arrays.copyOf(v, n * 2);
            }
            v[n++] = x;
            max = Math.max(max, x);
        }

        /** The p-th percentile (0..100) in microseconds; 0 when empty. */
        double pctUs(double p) {
            if (n == 0) {
                return 0;
            }
            long[] s = Arrays.copyOf(v, n);
            Arrays.sort(s);
            int i = (int) Math.ceil(p / 100.0 * n) - 1;
            return s[Math.max(0, Math.min(n - 1, i))] / 1e3;
        }
    }

    // ------------------------------------------------------------ pairs

    private static void pairs(String url, double seconds) {
        RedissonClient c = client(url, 1);
        RLock lock = c.getLock("bench:s1:redisson");
        long end = System.nanoTime() + WARM_NS;
        while (System.nanoTime() < end) {
            lock.lock();
            lock.unlock();
        }
        Samples s = new Samples();
        long t0 = System.nanoTime(), t = t0;
        end = t0 + (long) (seconds * 1e9);
        while (t < end) {
            lock.lock();
            lock.unlock();
            long t2 = System.nanoTime();
            s.add(t2 - t);
            t = t2;
        }
        double el = (t - t0) / 1e9;
        System.out.printf("{\"bench\":\"s1_uncontended\",\"impl\":\"redisson\",\"workers\":1,"
                          + "\"seconds\":%.3f,\"cycles\":%d,\"rate\":%.1f,\"pair_p50_us\":%.1f,"
                          + "\"pair_p99_us\":%.1f}%n", el, s.n, s.n / el, s.pctUs(50), s.pctUs(99));
        c.shutdown(0, 2, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------ latch

    /** The server's count of GET calls, from INFO commandstats. */
    private static long getCalls(RedissonClient c) {
        Map<String, String> m = c.getRedisNodes(RedisNodes.SINGLE).getInstance()
                .info(RedisNode.InfoSection.COMMANDSTATS);
        String s = m.get("cmdstat_get");
        if (s == null) {
            return 0;
        }
        for (String part : s.split(",")) {
            if (part.startsWith("calls=")) {
                return Long.parseLong(part.substring(6));
            }
        }
        return 0;
    }

    private static void latch(String url, int waiters, double seconds) throws Exception {
        RedissonClient c = client(url, waiters + 1);
        String name = "bench:latch:redisson";
        RCountDownLatch latch = c.getCountDownLatch(name);
        latch.delete();
        Object mu = new Object();
        int[] round = {0};               // the round waiters should await; -1: stop
        AtomicInteger entered = new AtomicInteger();
        AtomicInteger returned = new AtomicInteger();
        AtomicLong opened = new AtomicLong();
        AtomicLong last = new AtomicLong();
        Samples lat = new Samples(), all = new Samples();
        AtomicInteger errors = new AtomicInteger();
        boolean[] counting = {false};
        Thread[] th = new Thread[waiters];
        for (int i = 0; i < waiters; i++) {
            th[i] = new Thread(() -> {
                int seen = 0;
                try {
                    while (true) {
                        synchronized (mu) {
                            while (round[0] == seen) {
                                mu.wait();
                            }
                            if (round[0] < 0) {
                                return;
                            }
                            seen = round[0];
                        }
                        entered.incrementAndGet();
                        latch.await();
                        long t = System.nanoTime();
                        last.accumulateAndGet(t, Math::max);
                        synchronized (mu) {
                            if (counting[0]) {
                                lat.add(t - opened.get());
                            }
                            returned.incrementAndGet();
                            mu.notifyAll();
                        }
                    }
                } catch (Throwable e) {
                    errors.incrementAndGet();
                }
            });
            th[i].start();
        }
        long end = System.nanoTime() + (long) (seconds * 1e9);
        int rounds = 0, r = 0;
        while (true) {
            r++;
            boolean count = r > LATCH_WARMUP_ROUNDS;
            if (count && System.nanoTime() >= end) {
                break;
            }
            latch.trySetCount(1);
            long gets = getCalls(c);
            entered.set(0);
            returned.set(0);
            last.set(0);
            synchronized (mu) {
                counting[0] = count;
                round[0] = r;
                mu.notifyAll();
            }
            // Every waiter is waiting once it has called await and the
            // server has counted its two GETs of the count (before and
            // after the subscription); then a few milliseconds more.
            long until = System.nanoTime() + WAITING_MAX_NS;
            while (System.nanoTime() < until
                   && (entered.get() < waiters || getCalls(c) - gets < 2L * waiters)) {
                Thread.sleep(1);
            }
            Thread.sleep(SETTLE_NS / 1000000);
            opened.set(System.nanoTime());
            latch.countDown();
            synchronized (mu) {
                while (returned.get() < waiters) {
                    mu.wait(1000);
                    if (errors.get() > 0) {
                        throw new IllegalStateException("a waiter failed");
                    }
                }
            }
            if (count) {
                all.add(last.get() - opened.get());
                rounds++;
            }
        }
        synchronized (mu) {
            round[0] = -1;
            mu.notifyAll();
        }
        for (Thread t : th) {
            t.join();
        }
        latch.delete();
        System.out.printf("{\"bench\":\"s6_latch\",\"impl\":\"redisson\",\"mode\":\"threads\","
                          + "\"workers\":%d,\"rounds\":%d,\"release_p50_us\":%.1f,"
                          + "\"release_p99_us\":%.1f,\"release_max_us\":%.1f,\"all_p50_us\":%.1f,"
                          + "\"all_p99_us\":%.1f,\"all_max_us\":%.1f,\"errors\":%d}%n",
                          waiters, rounds, lat.pctUs(50), lat.pctUs(99), lat.pctUs(100),
                          all.pctUs(50), all.pctUs(99), all.pctUs(100), errors.get());
        c.shutdown(0, 2, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------ worker

    /** One thread's loop on one object: what it takes and gives back, and
     * what it does inside. */
    private static final class Loop {
        final RLock lock;
        final RSemaphore sem;
        final RBucket<String> counter;
        final RAtomicLong incr;
        final boolean incrGet;

        Loop(RedissonClient c, String kind, String name, String counterKey, int permits) {
            lock = kind.equals("lock") ? c.getLock(name) : null;
            sem = kind.equals("sem") ? c.getSemaphore(name) : null;
            if (lock == null && sem == null) {
                throw new IllegalArgumentException("worker KIND is lock or sem");
            }
            counter = c.getBucket(counterKey, StringCodec.INSTANCE);
            incr = c.getAtomicLong(counterKey);
            incrGet = sem != null && permits > 1;
        }

        /** One cycle; returns the nanoseconds spent waiting to get in. */
        long cycle() throws InterruptedException {
            long t0 = System.nanoTime();
            if (lock != null) {
                lock.lock();
            } else {
                sem.acquire();
            }
            long t1 = System.nanoTime();
            try {
                if (incrGet) {
                    incr.incrementAndGet();
                    counter.get();
                } else {
                    String v = counter.get();
                    counter.set(Long.toString((v == null ? 0 : Long.parseLong(v)) + 1));
                }
            } finally {
                if (lock != null) {
                    lock.unlock();
                } else {
                    sem.release();
                }
            }
            return t1 - t0;
        }
    }

    /** Runs `body` on n threads and waits for them; rethrows a failure. */
    private static void onThreads(int n, ThrowingRunnable body) throws Exception {
        Thread[] th = new Thread[n];
        Throwable[] err = new Throwable[1];
        for (int i = 0; i < n; i++) {
            final int id = i;
            th[i] = new Thread(() -> {
                try {
                    body.run(id);
                } catch (Throwable e) {
                    synchronized (err) {
                        err[0] = e;
                    }
                }
            });
            th[i].start();
        }
        for (Thread t : th) {
            t.join();
        }
        if (err[0] != null) {
            throw new IllegalStateException(err[0]);
        }
    }

    private interface ThrowingRunnable {
        void run(int id) throws Exception;
    }

    private static void worker(String url, String kind, String name, int threads, int permits)
            throws Exception {
        RedissonClient c = client(url, threads);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                                                                      StandardCharsets.UTF_8));
        // Warm-up on keys of its own, contended (two threads at least), so
        // that the waiting paths are compiled too.
        String own = name + ":warm:" + ProcessHandle.current().pid();
        if (kind.equals("sem")) {
            c.getSemaphore(own).trySetPermits(permits);
        }
        Loop warm = new Loop(c, kind, own, own + ":counter", permits);
        long warmEnd = System.nanoTime() + WARM_NS;
        onThreads(Math.max(2, threads), id -> {
            while (System.nanoTime() < warmEnd) {
                warm.cycle();
            }
        });
        c.getKeys().delete(own, own + ":counter");
        out.println("ready");
        out.flush();
        String line = in.readLine();
        if (line == null || !line.startsWith("go ")) {
            throw new IllegalStateException("expected 'go START_NS END_NS', got " + line);
        }
        String[] go = line.split(" ");
        long endNs = Long.parseLong(go[2]);
        Loop loop = new Loop(c, kind, name, COUNTER, permits);
        Samples[] waits = new Samples[threads];
        long[] cycles = new long[threads];
        onThreads(threads, id -> {
            Samples s = new Samples();
            waits[id] = s;
            while (System.nanoTime() < endNs) {
                s.add(loop.cycle());
                cycles[id]++;
            }
        });
        for (int i = 0; i < threads; i++) {
            StringBuilder b = new StringBuilder("worker ").append(cycles[i]).append(' ')
                    .append(waits[i].max);
            for (int k = 0; k < waits[i].n; k++) {
                b.append(' ').append(waits[i].v[k]);
            }
            out.println(b);
        }
        out.println("done");
        out.flush();
        c.shutdown(0, 2, TimeUnit.SECONDS);
    }
}
