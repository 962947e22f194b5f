#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright(c) 2026 droce developers
"""Says where a test's processes wait when it runs long.

lib.sh starts one beside every integration test. At each of the given
ages (seconds since the test began) it prints every process that descends
from the test's shell: its state, where in the kernel it waits and its
kernel stack, each thread that is not running; then the machine's
pressure figures and the kernel's last messages (hung-task reports).

It reads only /proc and /dev/kmsg and starts no process: a test that
hangs in the kernel may hang any fork too (CI once lost a whole test to a
shell that sat 590 s in the kernel with nothing printed).
"""
import argparse
import os
import sys
import time


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def parents():
    """pid -> parent pid for every process there is now."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        stat = read("/proc/%s/stat" % name)
        # The command name may hold spaces and parentheses: the fields
        # after it start past the last ')'.
        rest = stat[stat.rfind(")") + 2:].split()
        if len(rest) > 1:
            out[int(name)] = int(rest[1])
    return out


def descendants(root):
    tree = parents()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(p for p, pp in tree.items() if pp == pid)
    return sorted(found)


def show_thread(pid, tid):
    stat = read("/proc/%d/task/%d/stat" % (pid, tid))
    comm = stat[stat.find("(") + 1:stat.rfind(")")]
    state = stat[stat.rfind(")") + 2:].split(" ")[0] if stat else "?"
    wchan = read("/proc/%d/task/%d/wchan" % (pid, tid)) or "-"
    print("  %s %d/%d state %s, waits in %s" % (comm, pid, tid, state, wchan))
    if state not in ("R", "S", "?"):
        for line in read("/proc/%d/task/%d/stack" % (pid, tid)).splitlines():
            print("      " + line)


def kernel_messages(last):
    """The kernel's last messages, read without waiting for new ones."""
    lines = []
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return ["(no /dev/kmsg: %s)" % e]
    try:
        while True:
            try:
                rec = os.read(fd, 8192).decode("utf-8", "replace")
            except BlockingIOError:
                break
            except OSError:
                # A record overwritten while read (EPIPE): go on.
                continue
            head, _, text = rec.partition(";")
            fields = head.split(",")
            usec = int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else 0
            lines.append("[%10.3f] %s" % (usec / 1e6, text.rstrip("\n")))
            lines = lines[-last:]
    finally:
        os.close(fd)
    return lines


def report(root, age):
    print("--- watchdog: the test has run %d s; its processes:" % age)
    for pid in descendants(root):
        if pid == os.getpid():
            continue
        cmd = read("/proc/%d/cmdline" % pid).replace("\0", " ").strip()
        print("pid %d: %s" % (pid, cmd[:300]))
        try:
            tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
        except OSError:
            continue
        for tid in tids:
            show_thread(pid, tid)
    for what in ("cpu", "memory", "io"):
        print("pressure %s: %s" % (what, " | ".join(read("/proc/pressure/" + what).split("\n")).strip()))
    print("loadavg: " + read("/proc/loadavg").strip())
    print("--- the kernel's last messages:")
    for line in kernel_messages(60):
        print(line)
    print("--- watchdog: end of report", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pid", type=int, required=True, help="the test's shell")
    ap.add_argument("--at", default="240,480",
                    help="ages in seconds to report at, comma-separated")
    o = ap.parse_args()
    start = time.monotonic()
    ages = sorted(int(a) for a in o.at.split(",") if a)
    for age in ages:
        while time.monotonic() - start < age:
            if not os.path.exists("/proc/%d" % o.pid) or os.getppid() == 1:
                return 0
            time.sleep(1)
        report(o.pid, age)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
