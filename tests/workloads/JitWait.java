// Java workload for offcpu's runtime tests (tests/integration/runtimes_jit.sh):
// threads wait in named methods (Thread.sleep, Object.wait, a queue's poll)
// for times they measure themselves. Each method is first called many times,
// mostly without waiting, so that the JIT compiles it before its waits (its
// frames are then in the perf map the JVM writes; an interpreted one is
// "Interpreter" there); when all are, "warm PID" is written to PATH (a
// mid-run `jcmd PID Compiler.perfmap` goes there) while the waits go on.
// Printed at the end: "pid N", then "THREAD ns" per thread, its waits.
//   java JitWait.java PATH [ROUNDS [hold]]   (ROUNDS times the waits: default 1;
//   hold: the threads go on waiting after them, and the JVM stays, until
//   PATH.done exists: a recording begun after "warm", however late, has
//   their waits)
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

public class JitWait {
	static final Object lock = new Object();
	static final ArrayBlockingQueue<Integer> queue = new ArrayBlockingQueue<>(1);

	static void waitSleepAlpha(long ms) throws Exception {
		Thread.sleep(ms);
	}

	static void waitMonitorBravo(long ms) throws Exception {
		synchronized (lock) {
			if (ms > 0) /* Object.wait(0) waits for ever */
				lock.wait(ms);
		}
	}

	static void waitQueueCharlie(long ms) throws Exception {
		queue.poll(ms, TimeUnit.MILLISECONDS);
	}

	interface Waiter {
		void run(long ms) throws Exception;
	}

	static final long[] measured = new long[3];
	static final Object warmed = new Object();
	static int nwarm = 0;

	static boolean hold = false;
	static String path = null;

	static boolean held() {
		return hold && !Files.exists(Paths.get(path + ".done"));
	}

	static Thread worker(String name, int idx, Waiter w, long ms, int n) {
		Thread t = new Thread(() -> {
			try {
				/* every path taken before it is compiled (a path never
				 * taken is left to the interpreter when it first is) */
				for (int i = 0; i < 20000; i++)
					w.run(i % 100 == 99 ? 1 : 0);
				synchronized (warmed) {
					nwarm++;
					warmed.notifyAll();
				}
				long sum = 0;
				for (int i = 0; i < n; i++) {
					long t0 = System.nanoTime();
					w.run(ms);
					sum += System.nanoTime() - t0;
				}
				measured[idx] = sum;
				while (held())
					w.run(ms);
			} catch (Exception e) {
				throw new RuntimeException(e);
			}
		}, name);
		t.start();
		return t;
	}

	public static void main(String[] args) throws Exception {
		int k = args.length > 1 ? Integer.parseInt(args[1]) : 1;
		path = args.length > 0 ? args[0] : null;
		hold = args.length > 2 && args[2].equals("hold");
		Thread[] ts = {
			worker("alpha", 0, JitWait::waitSleepAlpha, 40, 15 * k),
			worker("bravo", 1, JitWait::waitMonitorBravo, 30, 15 * k),
			worker("charlie", 2, JitWait::waitQueueCharlie, 20, 25 * k),
		};
		synchronized (warmed) {
			while (nwarm < 3)
				warmed.wait();
		}
		if (args.length > 0)
			Files.write(Paths.get(args[0]), ("warm " + ProcessHandle.current().pid() + "\n").getBytes());
		for (Thread t : ts)
			t.join();
		System.out.println("pid " + ProcessHandle.current().pid());
		System.out.println("alpha " + measured[0]);
		System.out.println("bravo " + measured[1]);
		System.out.println("charlie " + measured[2]);
	}
}
