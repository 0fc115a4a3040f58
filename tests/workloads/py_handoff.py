"""A token passed round-robin between Python threads, each waiting for it on
a threading.Lock of its own in a Python function (bench/README.md, Python
frames: the cost per block): one blocking switch per pass.

  py_handoff.py [-t THREADS] [-n PASSES] [-d DELAY_S]

DELAY_S: seconds to sleep first (a tracer attaches meanwhile). Prints the
passes and the seconds they took.
"""
import sys
import threading
import time


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    nthreads = int(args.get("-t", 4))
    passes = int(args.get("-n", 100000))
    time.sleep(float(args.get("-d", 0)))
    locks = [threading.Lock() for _ in range(nthreads)]
    for lk in locks:
        lk.acquire()
    per = passes // nthreads

    def wait_for_token(i):
        mine, nxt = locks[i], locks[(i + 1) % nthreads]
        for _ in range(per):
            mine.acquire()
            nxt.release()

    threads = [threading.Thread(target=wait_for_token, args=(i,)) for i in range(nthreads)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    locks[0].release()
    for t in threads:
        t.join()
    print(per * nthreads, "passes", "%.3f" % (time.monotonic() - t0), "s")


if __name__ == "__main__":
    main()
