import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

public class Busy {
    static final Object monitor = new Object();
    static final ReentrantLock lock = new ReentrantLock();
    static volatile long sink;

    static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

    static void contend() {
        synchronized (monitor) {
            sink += fib(22);
        }
    }

    static void park() {
        lock.lock();
        try {
            LockSupport.parkNanos(2_000_000);
            sink += fib(18);
        } finally {
            lock.unlock();
        }
    }

    static void allocate() {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 200; i++) sb.append(i).append(',');
        byte[] big = new byte[64 * 1024];
        sink += sb.length() + big.length;
    }

    public static void main(String[] args) throws Exception {
        long end = System.currentTimeMillis() + Long.parseLong(args[0]);
        Thread[] ts = new Thread[4];
        for (int t = 0; t < ts.length; t++) {
            final int k = t;
            ts[t] = new Thread(() -> {
                while (System.currentTimeMillis() < end) {
                    switch (k % 3) {
                    case 0: contend(); break;
                    case 1: park(); break;
                    default: allocate(); sink += fib(20); break;
                    }
                    if (k == 0) park();
                    if (k == 1) contend();
                }
            }, "worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
    }
}
