"""Functions made by exec() one after another, each called once (it sleeps
a known time), then freed: the next one's code object is often made at the
address of the one before (issue 29: a recorder that names a code object by
its address alone charges many of them to one name).

  py_exec.py [-n FUNCTIONS] [-p PERIOD_S] [-w WARMUP_S] [-r FILE]

It sleeps WARMUP_S (default 0.5) first: a recorder looks at a process's
interpreter at its first blocks, which have native frames only meanwhile
(doc/runtimes.md), and this is about what comes after. -r FILE gets one
line per function: "NAME TID WAITED_NS". Run by
tests/integration/runtimes_python.sh.
"""
import sys
import threading
import time

SOURCE = """def func_%03d():
    t0 = time.monotonic_ns()
    time.sleep(%r)
    return time.monotonic_ns() - t0
"""


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    n = int(args.get("-n", 200))
    period = float(args.get("-p", 0.02))
    tid = threading.get_native_id()
    time.sleep(float(args.get("-w", 0.5)))
    lines = []
    for i in range(n):
        name = "func_%03d" % i
        ns = {"time": time}
        exec(SOURCE % (i, period), ns)
        waited = ns[name]()
        lines.append("%s %d %d\n" % (name, tid, waited))
        del ns
    if "-r" in args:
        with open(args["-r"], "w") as f:
            f.write("".join(lines))
    else:
        sys.stdout.write("".join(lines))


if __name__ == "__main__":
    main()
