#!/usr/bin/python3
"""Runs a command and records the peak memory of its whole process tree.

usage: peak_pss.py --out FILE [--interval-ms MS] -- COMMAND [ARG...]

Every MS milliseconds (default 100) it sums Pss from /proc/PID/smaps_rollup over the
command's process and all its descendants (workers included) and keeps the largest sum.
PSS splits each shared page among the processes that map it, so shared memory (a
forkfeed arena, PyTorch's shared tensors, the pages of a forked parent) counts once in
the sum. The command's stdin, stdout and stderr are its own. When it ends, FILE gets one
JSON object: {"peak_pss_bytes": N, "samples": K, "interval_ms": MS, "exit_code": C,
"cpu_s": S}, S the user + system CPU time of the whole tree (of every process that was
waited for by its parent); the exit status is the command's (128 + signal when killed). Standard library only.
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time


def children_map():
    """ppid -> [pid] for every process visible in /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited meanwhile
        # The command name is in parentheses and may hold spaces: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def tree(root):
    """root and all its descendants."""
    children = children_map()
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(children.get(pid, []))
    return pids


def pss_bytes(pid):
    """Pss of one process from smaps_rollup; 0 once it has exited."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def main():
    parser = argparse.ArgumentParser(
        description="Run COMMAND and record the peak PSS of its process tree.",
        usage="peak_pss.py --out FILE [--interval-ms MS] -- COMMAND [ARG...]")
    parser.add_argument("--out", required=True, help="where the JSON result goes")
    parser.add_argument("--interval-ms", type=int, default=100, help="sampling period (default 100)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no COMMAND given after --")
    if not os.path.exists("/proc/self/smaps_rollup"):
        sys.exit("peak_pss.py: /proc/PID/smaps_rollup is missing (Linux 4.14 or later is needed)")

    try:
        child = subprocess.Popen(command)
    except OSError as e:
        sys.exit(f"peak_pss.py: cannot run {command[0]}: {e.strerror}")
    # A Ctrl-C reaches the command through the terminal; wait for it instead of dying first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    peak, samples = 0, 0
    while True:
        total = sum(pss_bytes(pid) for pid in tree(child.pid))
        peak = max(peak, total)
        samples += 1
        try:
            code = child.wait(timeout=args.interval_ms / 1000.0)
            break
        except subprocess.TimeoutExpired:
            continue
    exit_code = code if code >= 0 else 128 - code
    with open(args.out, "w") as f:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        json.dump({"peak_pss_bytes": peak, "samples": samples, "interval_ms": args.interval_ms,
                   "exit_code": exit_code, "cpu_s": usage.ru_utime + usage.ru_stime}, f)
        f.write("\n")
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
