#!/usr/bin/python3
"""Shares of worker time between two greedy streams on one pool of workers, over sliding windows.

usage: fair_shares.py [--bin DIR] [--python DIR] [--data DIR] [--images N] [--workers N]
                      [--seconds S] [--window W] [CASE ...]

Cases (default: all four):
  daemon-750-4    forkfeedd, a stream of batch 750 beside one of batch 4
  daemon-256-16   forkfeedd, batch 256 beside batch 16
  daemon-heavy    forkfeedd, "RandomResizedCrop(1024), AugMix()" batch 16 beside train batch 16
  pool-256-4      one process, a forkfeed.WorkerPool shared by a batch-256 and a batch-4 Loader
The "train" transform at 224 px unless said. Each stream reads as fast as it can (a
forkfeed-bench --daemon run, or a thread per Loader) for S seconds after a warm-up of 2 s.
Each stream's worker_ns (worker time spent on its batches, counted sample by sample) is
read as it changes: forkfeedd publishes a stream's stats at each of its deliveries
(forkfeed-ctl stats, asked every 0.25 s), a Loader's are read after each of its batches.
Between two readings the worker time is interpolated linearly. For every window of W
seconds, sliding by 0.25 s, the second stream's share is its worker time over both
streams'. Printed per case: that share's minimum, median and maximum over the windows
and over the whole run, each stream's images/s and the second stream's wait for a batch
(p50, p99).

Builds from before worker_ns was counted sample by sample count a batch's worker time
when it completes: a stream of big batches then moves in lumps, and only the whole run's
share means much. Shares are ratios between two streams on the same workers, so other
load on the machine matters less than to images/s; say what the load was (uptime).
Standard library only, but the pool case imports the forkfeed package (--python, default
build/python) with numpy.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TICK = 0.25
WARMUP = 2.0
HEAVY = "RandomResizedCrop(1024), AugMix()"
CASES = {
    # name: ((batch, transform), (batch, transform))
    "daemon-750-4": ((750, "train"), (4, "train")),
    "daemon-256-16": ((256, "train"), (16, "train")),
    "daemon-heavy": ((16, HEAVY), (16, "train")),
    "pool-256-4": ((256, "train"), (4, "train")),
}


def percentile(values, p):
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def at(series, t):
    """A cumulative series [(t, value)] (t increasing) read at time t, linearly between points."""
    if t <= series[0][0]:
        return series[0][1]
    for (t0, v0), (t1, v1) in zip(series, series[1:]):
        if t <= t1:
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
    return series[-1][1]


def window_shares(series, start, end, window):
    """The second stream's share of the worker time in each window of `window` seconds
    between start and end, sliding by TICK."""
    shares = []
    t = start
    while t + window <= end + 1e-9:
        a = at(series[0], t + window) - at(series[0], t)
        b = at(series[1], t + window) - at(series[1], t)
        if a + b > 0:
            shares.append(b / (a + b))
        t += TICK
    return shares


def report(name, series, window, rates, waits):
    # Measured from the first reading after the warm-up to the last reading of either.
    start = max(s[0][0] for s in series)
    end = min(s[-1][0] for s in series)
    shares = window_shares(series, start, end, window)
    a = at(series[0], end) - at(series[0], start)
    b = at(series[1], end) - at(series[1], start)
    whole = b / max(1, a + b)
    if shares:
        low, mid, high = min(shares), statistics.median(shares), max(shares)
    else:
        low = mid = high = float("nan")
    print(f"{name:<15}{low:>7.2f}{mid:>7.2f}{high:>7.2f}{whole:>7.2f}{rates[0]:>9.0f}{rates[1]:>9.0f}"
          f"{waits[0]:>9.1f}{waits[1]:>9.1f}", flush=True)


def changes(points):
    """[(t, value)] read at intervals -> the points where the value changed (the first
    reading kept), so that interpolation runs between the moments it was updated."""
    kept = [points[0]]
    for t, v in points[1:]:
        if v != kept[-1][1]:
            kept.append((t, v))
    if kept[-1] != points[-1]:
        kept.append(points[-1])
    return kept


def daemon_case(args, data, tmp, streams):
    socket = os.path.join(tmp, "forkfeedd.sock")
    if os.path.exists(socket):
        os.unlink(socket)
    daemon = subprocess.Popen([f"{args.bin}/forkfeedd", "--socket", socket, "--max-workers",
                               str(args.workers),
                               "--log-level", "warn"])
    benches = []
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(socket):
            if daemon.poll() is not None or time.monotonic() > deadline:
                sys.exit("fair_shares.py: forkfeedd did not start")
            time.sleep(0.05)
        for k, (batch, transform) in enumerate(streams):
            cmd = [f"{args.bin}/forkfeed-bench", "--daemon", socket, "--data", data, "--workers",
                   str(args.workers),
                   "--batch", str(batch), "--transform", transform, "--epochs", "100000", "--seed", str(k),
                   "--json", "--log-level", "warn"]
            if transform == "train":
                cmd += ["--size", "224"]
            benches.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))

        time.sleep(WARMUP)
        points = ([], [])
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            out = subprocess.run([f"{args.bin}/forkfeed-ctl", "--socket", socket, "stats"],
                                 capture_output=True,
                                 text=True, check=True).stdout
            now = time.monotonic()
            by_pid = {s["pid"]: s.get("worker_ns", 0) for s in json.loads(out).get("streams", [])}
            for k, b in enumerate(benches):
                points[k].append((now, by_pid.get(b.pid, 0)))
            time.sleep(TICK)
        reports = []
        for b in benches:
            b.send_signal(signal.SIGINT)  # stops after the current batch and prints its summary
        for b in benches:
            out, _ = b.communicate(timeout=120)
            reports.append(json.loads(out))
        rates = [r["images_per_s"] for r in reports]
        return [changes(p) for p in points], rates, (reports[1]["wait_p50_ms"], reports[1]["wait_p99_ms"])
    finally:
        for b in benches:
            if b.poll() is None:
                b.kill()
                b.wait()
        daemon.terminate()
        daemon.wait()


def pool_case(args, data, streams):
    sys.path.insert(0, args.python)
    import forkfeed  # noqa: E402

    pool = forkfeed.WorkerPool(args.workers)
    loaders = [forkfeed.Loader(data, batch_size=batch, pool=pool, workers=args.workers, transform=transform,
                               size=224, output="numpy", seed=k)
               for k, (batch, transform) in enumerate(streams)]
    stop = threading.Event()
    images = [0, 0]
    waits_ms = []
    points = ([], [])  # (t, worker_ns) after each batch past the warm-up
    started = time.monotonic()

    def read_loader(k):
        # Loader.stats() waits for a next() in progress, so each thread reads its own.
        loader = loaders[k]
        while not stop.is_set():
            it = iter(loader)
            while not stop.is_set():
                asked = time.monotonic()
                try:
                    batch_images, _ = next(it)
                except StopIteration:
                    break
                now = time.monotonic()
                if now - started > WARMUP:
                    if k == 1:
                        waits_ms.append((now - asked) * 1e3)
                    points[k].append((now, loader.stats()["worker_ns"]))
                images[k] += len(batch_images)
                del batch_images

    threads = [threading.Thread(target=read_loader, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    time.sleep(WARMUP + args.seconds)
    stop.set()
    for t in threads:
        t.join()
    rates = [images[k] / (time.monotonic() - started) for k in range(2)]
    for loader in loaders:
        loader.close()
    return [changes(p) for p in points], rates, (percentile(waits_ms, 50), percentile(waits_ms, 99))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--bin", default=os.path.join(root, "build", "bin"), help="where the tools are")
    parser.add_argument("--python", default=os.path.join(root, "build", "python"),
                        help="the forkfeed package")
    parser.add_argument("--data", help="an ImageFolder (default: a generated one of --images)")
    parser.add_argument("--images", type=int, default=1500, help="images to generate (default 1500)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the pool (default 2)")
    parser.add_argument("--seconds", type=float, default=30, help="measured seconds per case (default 30)")
    parser.add_argument("--window", type=float, default=3, help="window in seconds (default 3)")
    parser.add_argument("cases", nargs="*", default=list(CASES), help="cases to run (default: all)")
    args = parser.parse_args()
    for case in args.cases:
        if case not in CASES:
            sys.exit(f"fair_shares.py: no case {case!r}; the cases are {', '.join(CASES)}")

    with tempfile.TemporaryDirectory(prefix="forkfeed-shares-") as tmp:
        data = args.data
        if not data:
            data = os.path.join(tmp, "data")
            subprocess.run([f"{args.bin}/forkfeed-mkdata", "--out", data, "--images", str(args.images),
                            "--classes", "10", "--seed", "5"], check=True, stdout=subprocess.DEVNULL)
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.workers} workers; "
              f"{args.seconds:g} s per case; the second stream's share of the worker time over "
              f"{args.window:g} s windows, then over the whole run")
        print(f"{'':<15}{'min':>7}{'median':>7}{'max':>7}{'whole':>7}{'1st img/s':>10}{'2nd img/s':>9}"
              f"{'wait p50':>9}{'p99 ms':>9}")
        for case in args.cases:
            streams = CASES[case]
            if case.startswith("pool"):
                series, rates, waits = pool_case(args, data, streams)
            else:
                series, rates, waits = daemon_case(args, data, tmp, streams)
            report(case, series, args.window, rates, waits)
        print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
