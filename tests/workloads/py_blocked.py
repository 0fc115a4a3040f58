"""Threads that wait in Python functions of their own for a long time, from
the start: a recorder that attaches (-p) meanwhile finds them all blocked.

  blocked_sleep   time.sleep
  blocked_lock    a threading.Lock the main thread holds
  blocked_queue   queue.Queue.get, fed at the end
  blocked_event   threading.Event.wait

  py_blocked.py [-t SECONDS] [-r FILE]

Once every thread waits, FILE (or stdout) gets one line per function:
"FUNCTION TID"; the waits end SECONDS (default 3) after. Run by
tests/integration/runtimes_python.sh.
"""
import queue
import sys
import threading
import time

lock = threading.Lock()
event = threading.Event()
q = queue.Queue()
tids = {}
SECONDS = 3.0


def blocked_sleep():
    tids["blocked_sleep"] = threading.get_native_id()
    time.sleep(SECONDS)


def blocked_lock():
    tids["blocked_lock"] = threading.get_native_id()
    lock.acquire()
    lock.release()


def blocked_queue():
    tids["blocked_queue"] = threading.get_native_id()
    q.get()


def blocked_event():
    tids["blocked_event"] = threading.get_native_id()
    event.wait()


def main():
    global SECONDS
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    SECONDS = float(args.get("-t", SECONDS))
    lock.acquire()
    threads = [threading.Thread(target=f) for f in
               (blocked_sleep, blocked_lock, blocked_queue, blocked_event)]
    for t in threads:
        t.start()
    while len(tids) < len(threads):
        time.sleep(0.01)
    time.sleep(0.05)  # each in its wait
    lines = "".join("%s %d\n" % (k, v) for k, v in sorted(tids.items()))
    if "-r" in args:
        with open(args["-r"] + ".tmp", "w") as f:
            f.write(lines)
        import os
        os.rename(args["-r"] + ".tmp", args["-r"])
    else:
        sys.stdout.write(lines)
        sys.stdout.flush()
    time.sleep(SECONDS)
    lock.release()
    q.put(1)
    event.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
