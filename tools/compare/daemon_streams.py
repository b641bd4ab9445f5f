#!/usr/bin/python3
"""How one forkfeedd serves 1, 2, 4 and 8 concurrent streams from its one pool of workers,
beside 4 independent in-process loaders of 2 workers each (a pool per trainer).

usage: daemon_streams.py [--bin DIR] [--data DIR] [--images N] [--epochs E] [--streams 1,2,4,8]

Each stream is a forkfeed-bench --daemon run over the whole dataset (its own seed, 2
workers asked, batch 64, 224 px train transform), all started together. For each count
it prints the total images/s (all streams' images over the wall time until the last one
ended), the ratio to one stream alone, the slowest and the fastest stream's own images/s,
and the daemon's peak worker count and peak PSS (daemon and workers, sampled every 100
ms). The same for 4 forkfeed-bench runs without the daemon, each with 2 workers of its
own (the trainer's PSS counted too). Standard library only; the daemon and the benches
are this build's (--bin, default build/bin).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peak_pss import pss_bytes, tree  # noqa: E402


class TreeSampler:
    """Peak PSS of the process trees under `roots()` and peak count of their children."""

    def __init__(self, roots, interval=0.1):
        self.roots, self.interval = roots, interval
        self.peak_pss = self.peak_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            pids = [p for root in self.roots() for p in tree(root)]
            self.peak_pss = max(self.peak_pss, sum(pss_bytes(p) for p in pids))
            self.peak_children = max(self.peak_children, len(pids) - len(self.roots()))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_benches(bin_dir, data, epochs, count, daemon_socket=None, pids=None):
    """Starts `count` forkfeed-bench runs together (their pids appended to `pids`); their
    JSON reports and the wall time until the last one ended."""
    procs = []
    started = time.monotonic()
    for k in range(count):
        cmd = [f"{bin_dir}/forkfeed-bench", "--data", data, "--workers", "2", "--batch", "64",
               "--size", "224", "--epochs", str(epochs), "--seed", str(k), "--json", "--log-level", "warn"]
        if daemon_socket:
            cmd += ["--daemon", daemon_socket]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
        if pids is not None:
            pids.append(procs[-1].pid)
    reports = []
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            sys.exit(f"daemon_streams.py: a forkfeed-bench run failed (exit {p.returncode})")
        reports.append(json.loads(out))
    return reports, time.monotonic() - started


def row(name, reports, wall, alone, sampler):
    images = sum(r["images"] for r in reports)
    rates = [r["images_per_s"] for r in reports]
    total = images / wall
    ratio = total / alone if alone else 1.0
    print(f"{name:<34}{total:>9.0f}{ratio:>8.2f}x{min(rates):>10.0f}{max(rates):>10.0f}"
          f"{min(rates) / max(rates):>8.2f}{sampler.peak_children:>9}{sampler.peak_pss / 2**20:>10.0f} MiB",
          flush=True)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--bin", default=os.path.join(root, "build", "bin"), help="where the tools are")
    parser.add_argument("--data", help="an ImageFolder (default: a generated one)")
    parser.add_argument("--images", type=int, default=512, help="images to generate (default 512)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per stream (default 2)")
    parser.add_argument("--streams", default="1,2,4,8", help="stream counts (default 1,2,4,8)")
    args = parser.parse_args()
    counts = [int(c) for c in args.streams.split(",")]

    with tempfile.TemporaryDirectory(prefix="forkfeed-streams-") as tmp:
        data = args.data
        if not data:
            data = os.path.join(tmp, "data")
            subprocess.run([f"{args.bin}/forkfeed-mkdata", "--out", data, "--images", str(args.images),
                            "--classes", "8", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
        socket = os.path.join(tmp, "forkfeedd.sock")
        daemon = subprocess.Popen([f"{args.bin}/forkfeedd", "--socket", socket, "--log-level", "warn"])
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(socket):
                if daemon.poll() is not None or time.monotonic() > deadline:
                    sys.exit("daemon_streams.py: forkfeedd did not start")
                time.sleep(0.05)
            print(f"{os.cpu_count()} CPUs; {args.epochs} epochs of the dataset per stream, 224 px, batch 64")
            print(f"{'':<34}{'img/s':>9}{'vs 1':>9}{'slowest':>10}{'fastest':>10}{'ratio':>8}"
                  f"{'workers':>9}{'peak PSS':>14}")
            alone = None
            for count in counts:
                with TreeSampler(lambda: [daemon.pid]) as sampler:
                    reports, wall = run_benches(args.bin, data, args.epochs, count, socket)
                total = row(f"forkfeedd, {count} stream(s)", reports, wall, alone, sampler)
                alone = alone or total
        finally:
            daemon.terminate()
            daemon.wait()
        # 4 trainers, each with a Loader of 2 workers of its own: 8 decode processes. The
        # trainers count in this PSS; the daemon's clients do not in the rows above.
        benches = []
        with TreeSampler(lambda: [p for p in benches if os.path.exists(f"/proc/{p}")]) as sampler:
            reports, wall = run_benches(args.bin, data, args.epochs, 4, pids=benches)
        row("4 Loaders, 2 workers each", reports, wall, alone, sampler)


if __name__ == "__main__":
    main()
