"""Threads that wait in Python functions of their own, for known times.

  sleeper_wait      time.sleep, ROUNDS times PERIOD
  lock_waiter_wait  a threading.Lock that lock_holder_hold (another thread)
                    holds for PERIOD, then releases: the waiter's waker
  queue_waiter_wait queue.Queue.get, fed every PERIOD by queue_feeder_feed

PY_WAITS_ROUNDS in the environment sets ROUNDS (default 8).
Each waiting thread measures its own waits; -r FILE gets one line per
function: "FUNCTION TID WAITED_NS". The line of each wait says "# waits:
FUNCTION". Run by tests/integration/runtimes_python.sh
under Debian's /usr/bin/python3.11.
"""
import os
import queue
import sys
import threading
import time

ROUNDS = int(os.environ.get("PY_WAITS_ROUNDS", "8"))
PERIOD = 0.2

truth = {}
lock = threading.Lock()
held = threading.Event()
done = threading.Event()
q = queue.Queue()


def sleeper_wait():
    waited = 0
    for _ in range(ROUNDS):
        t0 = time.monotonic_ns()
        time.sleep(PERIOD)  # waits: sleeper_wait
        waited += time.monotonic_ns() - t0
    truth["sleeper_wait"] = (threading.get_native_id(), waited)


def lock_holder_hold():
    for _ in range(ROUNDS):
        lock.acquire()
        held.set()
        time.sleep(PERIOD)
        lock.release()  # wakes: lock_waiter_wait
        done.wait()
        done.clear()


def lock_waiter_wait():
    waited = 0
    for _ in range(ROUNDS):
        held.wait()
        held.clear()
        t0 = time.monotonic_ns()
        lock.acquire()  # waits: lock_waiter_wait
        waited += time.monotonic_ns() - t0
        lock.release()
        done.set()
    truth["lock_waiter_wait"] = (threading.get_native_id(), waited)


def queue_feeder_feed():
    for i in range(ROUNDS):
        time.sleep(PERIOD)
        q.put(i)


def queue_waiter_wait():
    waited = 0
    for _ in range(ROUNDS):
        t0 = time.monotonic_ns()
        q.get()  # waits: queue_waiter_wait
        waited += time.monotonic_ns() - t0
    truth["queue_waiter_wait"] = (threading.get_native_id(), waited)


def main():
    out = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "-r" else None
    threads = [threading.Thread(target=f) for f in
               (sleeper_wait, lock_holder_hold, lock_waiter_wait, queue_feeder_feed,
                queue_waiter_wait)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = "".join("%s %d %d\n" % (k, v[0], v[1]) for k, v in sorted(truth.items()))
    if out:
        with open(out, "w") as f:
            f.write(lines)
    else:
        sys.stdout.write(lines)


if __name__ == "__main__":
    main()
