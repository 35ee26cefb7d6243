/* SPDX-License-Identifier: MIT */
package credisson.crosstest;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RSemaphore;
import org.redisson.api.RateIntervalUnit;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * The Java side of credisson's cross-implementation tests
 * (tests/integration/test_java_*.c, tests/java/README): one real Redisson
 * client, driven line by line from stdin by a C test program that keeps
 * the process for its whole run.
 *
 * Started as {@code Peer --addr URL [--watchdog MS] [--fair-wait MS]}; it
 * prints {@code ready id=<client id>} once the client is up. Each input
 * line is {@code TAG ACTOR VERB ARGS...}. An actor is a thread of its own,
 * made at its first command; it runs its commands in order, so a lock
 * taken by actor {@code a} is held by that thread and released by it, and
 * actors wait side by side. Each command answers one line when it ends:
 * {@code TAG ok key=value...} or {@code TAG err <exception> <message>};
 * every answer carries {@code t=<epoch ms>}, the time the command ended,
 * and {@code ms=<its duration>}. Durations are in milliseconds; a wait of
 * -1 waits without limit, a lease of -1 means the watchdog.
 *
 * Verbs (KIND is lock, fair, read or write):
 * <pre>
 *   info                                 tid= (the actor's thread id)
 *   blocked ACTOR                        r=1 when ACTOR sleeps in a
 *                                        Semaphore or ReclosableLatch, as
 *                                        Redisson's waiters do between
 *                                        attempts
 *   lock KIND NAME WAIT LEASE            got=1|0 (tryLock, or lock() for -1)
 *   take KIND NAME WAIT LEASE HOLD       got=1|0 at=<epoch ms it got it>:
 *                                        lock (as above), hold HOLD ms,
 *                                        unlock
 *   unlock KIND NAME
 *   force KIND NAME                      r=1|0 (forceUnlock)
 *   status KIND NAME                     locked= held= count= ttl=
 *   count KIND NAME KEY N [HOLD]         N times: lock; GET KEY; sleep HOLD
 *                                        ms; SET KEY +1; unlock
 *   mix ROLE NAME KEY UNTIL PAUSE LEASE PERMITS
 *                                        n= max=: until epoch ms UNTIL, take
 *                                        NAME as ROLE (lock, fair, write,
 *                                        read: with LEASE; sem: a permit of
 *                                        semaphore NAME), the turn inside of
 *                                        tests/integration/mix_inside.h
 *                                        (PERMITS: a semaphore's), give it
 *                                        back, sleep PAUSE ms; n turns, the
 *                                        longest wait max ms
 *   sem-set NAME N | sem-avail NAME | sem-release NAME N
 *   sem-try NAME PERMITS WAIT            got=1|0
 *   sem-count NAME CUR OVER MAX N        N times: acquire 1; INCR CUR, INCR
 *                                        OVER when above MAX; sleep 1 ms;
 *                                        DECR CUR; release 1
 *   pes-count NAME CUR OVER MAX N LEASE  as sem-count, on an expirable
 *                                        permit with a lease of LEASE ms
 *   pes-set NAME N | pes-avail NAME | pes-setpermits NAME N
 *   pes-try NAME WAIT LEASE              id= (empty: none)
 *   pes-acquire-n NAME N LEASE           ids=<id,id...> (acquire(n, lease),
 *                                        3.23.4 and later: before, Redisson
 *                                        has no public acquire(n))
 *   pes-release NAME ID                  (release: an exception when not out)
 *   pes-try-release NAME ID              r=1|0
 *   pes-lease NAME ID                    ms= left (getLeaseTime, 3.24+)
 *   latch-set NAME N | latch-down NAME | latch-count NAME
 *   latch-await NAME WAIT                r=1|0
 *   rl-set NAME RATE INTERVAL TYPE       TYPE overall|per_client; r=1|0
 *   rl-try NAME PERMITS WAIT             got=1|0 (tryAcquire)
 *   rl-burst NAME COUNT                  got= of COUNT tryAcquire(1)
 *   rl-loop NAME MS                      got= permits taken one at a time
 *                                        by tryAcquire(1, the time left)
 *                                        for MS ms
 *   rl-avail NAME                        n= (availablePermits)
 *   rl-release NAME N                    (release(n), 3.38+)
 *   get KEY | set KEY VALUE              v=
 *   sleep MS
 *   quit                                 exits at once (holds stay as they are)
 * </pre>
 */
public final class Peer {
    private final RedissonClient client;
    private final PrintStream out;
    private final Map<String, ExecutorService> actors = new HashMap<>();
    private final Map<String, Thread> threads = new java.util.concurrent.ConcurrentHashMap<>();

    private Peer(RedissonClient client, PrintStream out) {
        this.client = client;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        String addr = "redis://127.0.0.1:6379";
        long watchdog = -1, fairWait = -1;

        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
            case "--addr": addr = args[i + 1]; break;
            case "--watchdog": watchdog = Long.parseLong(args[i + 1]); break;
            case "--fair-wait": fairWait = Long.parseLong(args[i + 1]); break;
            default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.useSingleServer().setAddress(addr)
                .setConnectionMinimumIdleSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1);
        if (watchdog > 0)
            config.setLockWatchdogTimeout(watchdog);
        if (fairWait > 0) {
            /* Redisson 3.46 and later; older lines wait 5 s (before 3.13.3)
             * or 300 s and have no setting. */
            try {
                Config.class.getMethod("setFairLockWaitTimeout", long.class)
                        .invoke(config, fairWait);
            } catch (NoSuchMethodException e) {
                System.err.println("peer: this Redisson has no fairLockWaitTimeout");
            }
        }
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        RedissonClient client = Redisson.create(config);
        Peer peer = new Peer(client, out);
        peer.answer("-", "ready id=" + client.getId());
        peer.run(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
    }

    /* Reads commands until quit or the end of input. */
    private void run(BufferedReader in) throws Exception {
        String line;

        while ((line = in.readLine()) != null) {
            final String[] w = line.trim().split("\\s+");
            if (w.length == 0 || w[0].isEmpty())
                continue;
            if (w.length >= 3 && w[2].equals("quit"))
                break;
            if (w.length < 3) {
                answer(w[0], "err IllegalArgumentException need TAG ACTOR VERB");
                continue;
            }
            ExecutorService actor = actors.computeIfAbsent(w[1],
                    k -> Executors.newSingleThreadExecutor(r -> {
                        Thread t = new Thread(r, "actor-" + k);
                        t.setDaemon(true);
                        threads.put(k, t);
                        return t;
                    }));
            actor.execute(() -> perform(w));
        }
        /* No shutdown of the client: its holds are the test's to judge,
         * and Netty's quiet period would hold the test up. */
        out.flush();
        System.exit(0);
    }

    /* Prints one answer line. */
    private synchronized void answer(String tag, String text) {
        out.println(tag + " " + text);
        out.flush();
    }

    /* Runs one command on the calling actor and answers it. */
    private void perform(String[] w) {
        long start = System.nanoTime();
        String result;

        try {
            result = "ok" + verb(w);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause() != null ? e.getCause() : e;
            result = "err " + c.getClass().getSimpleName() + " " + oneLine(c.getMessage());
        } catch (Throwable e) {
            result = "err " + e.getClass().getSimpleName() + " " + oneLine(e.getMessage());
        }
        long ms = (System.nanoTime() - start) / 1000000;
        answer(w[0], result + " t=" + System.currentTimeMillis() + " ms=" + ms);
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.replace('\n', ' ').replace('\r', ' ');
    }

    private RLock lockOf(String kind, String name) {
        switch (kind) {
        case "lock": return client.getLock(name);
        case "fair": return client.getFairLock(name);
        case "read": return client.getReadWriteLock(name).readLock();
        case "write": return client.getReadWriteLock(name).writeLock();
        default: throw new IllegalArgumentException("lock kind " + kind);
        }
    }

    /* A semaphore holder's turn: INCR cur (INCR over when above max), a
     * millisecond, DECR cur. */
    private void inside(String cur, String over, long max) throws InterruptedException {
        if (client.getAtomicLong(cur).incrementAndGet() > max)
            client.getAtomicLong(over).incrementAndGet();
        Thread.sleep(1);
        client.getAtomicLong(cur).decrementAndGet();
    }

    /* A holder's turn inside in a mixed run, as role (see the header and
     * tests/integration/mix_inside.h): the count, who is inside, and each
     * overlap seen. */
    private void mixInside(String role, String key, long permits) throws InterruptedException {
        if (role.equals("sem")) {
            if (client.getAtomicLong(key + ":in").incrementAndGet() > permits)
                client.getAtomicLong(key + ":over").incrementAndGet();
            Thread.sleep(1);
            client.getAtomicLong(key + ":in").decrementAndGet();
            client.getAtomicLong(key).incrementAndGet();
        } else if (role.equals("read")) {
            client.getAtomicLong(key + ":r").incrementAndGet();
            if (client.getAtomicLong(key + ":w").get() > 0)
                client.getAtomicLong(key + ":over").incrementAndGet();
            Thread.sleep(1);
            client.getAtomicLong(key + ":r").decrementAndGet();
        } else {
            if (client.getAtomicLong(key + ":w").incrementAndGet() > 1
                    || client.getAtomicLong(key + ":r").get() > 0)
                client.getAtomicLong(key + ":over").incrementAndGet();
            String s = (String) client.getBucket(key).get();
            long c = s == null ? 0 : Long.parseLong(s);
            Thread.sleep(1);
            client.getBucket(key).set(Long.toString(c + 1));
            client.getAtomicLong(key + ":w").decrementAndGet();
        }
    }

    /* The mix verb: turns until the epoch ms `until`; " n= max=". */
    private String mix(String role, String name, String key, long until, long pause,
            long lease, long permits) throws InterruptedException {
        RSemaphore s = role.equals("sem") ? client.getSemaphore(name) : null;
        RLock l = s == null ? lockOf(role, name) : null;
        long n = 0, max = 0;

        while (System.currentTimeMillis() < until) {
            long start = System.nanoTime();
            if (s != null)
                s.acquire(1);
            else
                acquire(l, -1, lease);
            max = Math.max(max, (System.nanoTime() - start) / 1000000);
            try {
                mixInside(role, key, permits);
            } finally {
                if (s != null)
                    s.release(1);
                else
                    l.unlock();
            }
            n++;
            if (pause > 0)
                Thread.sleep(pause);
        }
        return " n=" + n + " max=" + max;
    }

    /* lock() or lock(lease) for a wait of -1, else tryLock(wait, lease). */
    private static boolean acquire(RLock l, long wait, long lease) throws InterruptedException {
        if (wait >= 0)
            return l.tryLock(wait, lease, TimeUnit.MILLISECONDS);
        if (lease < 0)
            l.lock();
        else
            l.lock(lease, TimeUnit.MILLISECONDS);
        return true;
    }

    private static long num(String s) {
        return Long.parseLong(s);
    }

    private static int b(boolean v) {
        return v ? 1 : 0;
    }

    /* The verb's own part of the answer (after "ok"). */
    private String verb(String[] w) throws Exception {
        String v = w[2];
        String[] a = new String[w.length - 3];

        System.arraycopy(w, 3, a, 0, a.length);
        switch (v) {
        case "info":
            return " tid=" + Thread.currentThread().getId();
        case "blocked": {
            /* Whether actor a[0] sleeps in a wait for a message: parked in a
             * java.util.concurrent.Semaphore (locks, semaphores) or
             * Redisson's ReclosableLatch (the latch), which is what
             * Redisson's waiters wait on between attempts. */
            Thread t = threads.get(a[0]);
            boolean in = false;
            if (t != null && (t.getState() == Thread.State.TIMED_WAITING
                    || t.getState() == Thread.State.WAITING)) {
                for (StackTraceElement e : t.getStackTrace())
                    in |= e.getClassName().equals("java.util.concurrent.Semaphore")
                            || e.getClassName().equals("org.redisson.misc.ReclosableLatch");
            }
            return " r=" + b(in);
        }
        case "sleep":
            Thread.sleep(num(a[0]));
            return "";
        case "lock":
            return " got=" + b(acquire(lockOf(a[0], a[1]), num(a[2]), num(a[3])));
        case "take": {
            RLock l = lockOf(a[0], a[1]);
            boolean got = acquire(l, num(a[2]), num(a[3]));
            long at = System.currentTimeMillis();
            if (got) {
                Thread.sleep(num(a[4]));
                l.unlock();
            }
            return " got=" + b(got) + " at=" + at;
        }
        case "unlock":
            lockOf(a[0], a[1]).unlock();
            return "";
        case "force":
            return " r=" + b(lockOf(a[0], a[1]).forceUnlock());
        case "status": {
            RLock l = lockOf(a[0], a[1]);
            return " locked=" + b(l.isLocked()) + " held=" + b(l.isHeldByCurrentThread())
                    + " count=" + l.getHoldCount() + " ttl=" + l.remainTimeToLive();
        }
        case "count": {
            RLock l = lockOf(a[0], a[1]);
            long n = num(a[3]), hold = a.length > 4 ? num(a[4]) : 0;
            for (long i = 0; i < n; i++) {
                l.lock();
                try {
                    String s = (String) client.getBucket(a[2]).get();
                    long c = s == null ? 0 : Long.parseLong(s);
                    if (hold > 0)
                        Thread.sleep(hold);
                    client.getBucket(a[2]).set(Long.toString(c + 1));
                } finally {
                    l.unlock();
                }
            }
            return " n=" + n;
        }
        case "mix":
            return mix(a[0], a[1], a[2], num(a[3]), num(a[4]), num(a[5]), num(a[6]));
        case "get":
            return " v=" + client.getBucket(a[0]).get();
        case "set":
            client.getBucket(a[0]).set(a[1]);
            return "";
        case "sem-set":
            return " r=" + b(client.getSemaphore(a[0]).trySetPermits((int) num(a[1])));
        case "sem-avail":
            return " n=" + client.getSemaphore(a[0]).availablePermits();
        case "sem-release":
            client.getSemaphore(a[0]).release((int) num(a[1]));
            return "";
        case "sem-try": {
            RSemaphore s = client.getSemaphore(a[0]);
            long wait = num(a[2]);
            if (wait < 0) {
                s.acquire((int) num(a[1]));
                return " got=1";
            }
            return " got=" + b(s.tryAcquire((int) num(a[1]), wait, TimeUnit.MILLISECONDS));
        }
        case "sem-count": {
            RSemaphore s = client.getSemaphore(a[0]);
            long max = num(a[3]), n = num(a[4]);
            for (long i = 0; i < n; i++) {
                s.acquire(1);
                try {
                    inside(a[1], a[2], max);
                } finally {
                    s.release(1);
                }
            }
            return " n=" + n;
        }
        case "pes-count": {
            RPermitExpirableSemaphore s = client.getPermitExpirableSemaphore(a[0]);
            long max = num(a[3]), n = num(a[4]), lease = num(a[5]);
            for (long i = 0; i < n; i++) {
                String id = s.acquire(lease, TimeUnit.MILLISECONDS);
                try {
                    inside(a[1], a[2], max);
                } finally {
                    s.release(id);
                }
            }
            return " n=" + n;
        }
        case "pes-set":
            return " r=" + b(client.getPermitExpirableSemaphore(a[0]).trySetPermits((int) num(a[1])));
        case "pes-avail":
            return " n=" + client.getPermitExpirableSemaphore(a[0]).availablePermits();
        case "pes-setpermits":
            call(client.getPermitExpirableSemaphore(a[0]), "setPermits",
                    new Class<?>[] {int.class}, (int) num(a[1]));
            return "";
        case "pes-try": {
            RPermitExpirableSemaphore s = client.getPermitExpirableSemaphore(a[0]);
            long wait = num(a[1]), lease = num(a[2]);
            String id;
            if (wait < 0)
                id = lease < 0 ? s.acquire() : s.acquire(lease, TimeUnit.MILLISECONDS);
            else if (lease < 0)
                id = s.tryAcquire(wait, TimeUnit.MILLISECONDS);
            else
                id = s.tryAcquire(wait, lease, TimeUnit.MILLISECONDS);
            return " id=" + (id == null ? "" : id);
        }
        case "pes-acquire-n": {
            /* Public since 3.23.4 (a list of n ids); a line before has only
             * a private form, and answers NoSuchMethodException. */
            Object r = call(client.getPermitExpirableSemaphore(a[0]), "acquire",
                    new Class<?>[] {int.class, long.class, TimeUnit.class},
                    (int) num(a[1]), num(a[2]), TimeUnit.MILLISECONDS);
            if (r instanceof List)
                return " ids=" + String.join(",", (List<String>) r);
            return " ids=" + r;
        }
        case "pes-release":
            client.getPermitExpirableSemaphore(a[0]).release(a[1]);
            return "";
        case "pes-try-release":
            return " r=" + b(client.getPermitExpirableSemaphore(a[0]).tryRelease(a[1]));
        case "pes-lease":
            return " ms=" + call(client.getPermitExpirableSemaphore(a[0]), "getLeaseTime",
                    new Class<?>[] {String.class}, a[1]);
        case "latch-set":
            return " r=" + b(client.getCountDownLatch(a[0]).trySetCount(num(a[1])));
        case "latch-down":
            client.getCountDownLatch(a[0]).countDown();
            return "";
        case "latch-count":
            return " n=" + client.getCountDownLatch(a[0]).getCount();
        case "latch-await": {
            RCountDownLatch l = client.getCountDownLatch(a[0]);
            long wait = num(a[1]);
            if (wait < 0) {
                l.await();
                return " r=1";
            }
            return " r=" + b(l.await(wait, TimeUnit.MILLISECONDS));
        }
        case "rl-set":
            return " r=" + b(client.getRateLimiter(a[0]).trySetRate(
                    a[3].equals("per_client") ? RateType.PER_CLIENT : RateType.OVERALL,
                    num(a[1]), num(a[2]), RateIntervalUnit.MILLISECONDS));
        case "rl-try": {
            RRateLimiter l = client.getRateLimiter(a[0]);
            long wait = num(a[2]);
            if (wait == 0)
                return " got=" + b(l.tryAcquire(num(a[1])));
            return " got=" + b(l.tryAcquire(num(a[1]), wait, TimeUnit.MILLISECONDS));
        }
        case "rl-burst": {
            RRateLimiter l = client.getRateLimiter(a[0]);
            long n = num(a[1]), got = 0;
            for (long i = 0; i < n; i++)
                got += b(l.tryAcquire(1));
            return " got=" + got;
        }
        case "rl-loop": {
            /* For MS ms: tryAcquire(1, the time left), again and again. */
            RRateLimiter l = client.getRateLimiter(a[0]);
            long end = System.currentTimeMillis() + num(a[1]), got = 0, left;
            while ((left = end - System.currentTimeMillis()) > 0)
                got += b(l.tryAcquire(1, left, TimeUnit.MILLISECONDS));
            return " got=" + got;
        }
        case "rl-avail":
            return " n=" + client.getRateLimiter(a[0]).availablePermits();
        case "rl-release":
            call(client.getRateLimiter(a[0]), "release", new Class<?>[] {long.class}, num(a[1]));
            return "";
        default:
            throw new IllegalArgumentException("unknown verb " + v);
        }
    }

    /* A method that some release lines lack or declare otherwise, called
     * through its interface by name. */
    private static Object call(Object target, String name, Class<?>[] types, Object... args)
            throws Exception {
        for (Class<?> i : target.getClass().getInterfaces()) {
            try {
                Method m = i.getMethod(name, types);
                return m.invoke(target, args);
            } catch (NoSuchMethodException e) {
                /* the next interface */
            }
        }
        Method m = target.getClass().getMethod(name, types);
        return m.invoke(target, args);
    }
}
