#!/usr/bin/python3
"""Runs a command and kills it with SIGKILL the moment an object whose name matches a pattern
appears in a RADOS namespace: a writer stopped at a chosen point of its work (rados_faults.sh).

  kill_when_object.py --conf C --user U --pool P --namespace N --pattern REGEX --timeout S --log F -- CMD...

Only objects that were not there when the command started count. Polls every 2 ms (a listing of
the namespace takes about 1 ms on a test cluster). Prints one line, the outcome:
  killed when NAME appeared (after X s)      exit 0
  finished before REGEX appeared (exit N)    exit 3
  the command ran past S s                   exit 4 (it is killed too)
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

import rados


def main():
    ap = argparse.ArgumentParser()
    for name in ("conf", "user", "pool", "namespace", "pattern", "log"):
        ap.add_argument("--" + name, required=True)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command after --")
    pattern = re.compile(args.pattern)

    cluster = rados.Rados(conffile=args.conf, rados_id=args.user)
    cluster.connect(timeout=20)
    try:
        io = cluster.open_ioctx(args.pool)
        io.set_namespace(args.namespace)
        there = {o.key for o in io.list_objects()}
        with open(args.log, "ab") as log:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        started = time.monotonic()
        while True:
            for o in io.list_objects():
                if o.key not in there and pattern.search(o.key):
                    os.kill(child.pid, signal.SIGKILL)
                    child.wait()
                    print("killed when %s appeared (after %.2f s)" % (o.key, time.monotonic() - started))
                    return 0
            status = child.poll()
            if status is not None:
                print("finished before %s appeared (exit %d)" % (args.pattern, status))
                return 3
            if time.monotonic() - started > args.timeout:
                os.kill(child.pid, signal.SIGKILL)
                child.wait()
                print("the command ran past %g s" % args.timeout)
                return 4
            time.sleep(0.002)
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
