#!/usr/bin/python3
"""One forkfeedd's stream read remotely (forkfeed-gateway over UCX) beside the same stream
read through its Unix socket, on this machine.

usage: remote_stream.py [--bin DIR] [--data DIR] [--images N] [--epochs E] [--rounds R] [--workers W]
                        [--stream-workers S] [--step-ms MS] [--daemons K,K,...]

One forkfeedd serves a dataset by name and listens on loopback for remote clients. Each
row is a forkfeed-bench run of E epochs, batch 64, 224 px uint8 (train transform): through
the Unix socket (shared memory, no copy), remotely with UCX_TLS=tcp (the network path: TCP
over loopback) and remotely with UCX's default transports (on one host
UCX picks shared memory). The daemon has W decode workers (default 2): on a 2-core
machine, 1 leaves a core to the transfer, as a decode node and a GPU node would. The
trainer's stream asks for S workers (default W): its batch slots are S x 2 + 1, so S=1 on
a pool of 2 workers is a stream of few slots that the pool decodes for at full speed (the
network path must keep enough batches moving to keep up). --step-ms MS holds each batch MS
ms after reading it, the CPU idle, as a trainer whose step runs on an accelerator would
(forkfeed-bench --step-ms): batches must keep moving while it computes. The runs
alternate R rounds, and each row shows the median round: images/s and its ratio to the
local run, the batch bytes per second (GB/s) that crossed the transport, the p50/p99 wait
for a batch, the CPU seconds forkfeed-gateway spent per GB sent and the CPU seconds the
trainer (forkfeed-bench) spent per GB it read, each the median of the rounds. The CPU per
GB leaves start-up out: each run has a run of one batch beside it, whose CPU (UCX's
start, the connection, the stream's opening) and batch are taken off. Standard library
only; the tools are this build's (--bin).

--daemons 1,2,3 measures a fan-in instead: for each K, K forkfeedd (each on its own
socket, listening on a free loopback port, serving the same dataset by the same name
with --max-workers W) and one forkfeed-bench --remote A1,...,AK reading from all of them
(UCX_TLS=tcp: the network path), R rounds, the median shown. Each row: K, images/s, the
CPU seconds per 1000 images and what each daemon delivered (images/s of its own). The CPU
is everything the run took on this machine: the utime + stime, from /proc before and
after the run, of each forkfeedd's whole process tree (forkfeedd, its forkfeed-gateway,
its decode workers, and any of them that exited and were reaped meanwhile, through their
parents' cutime + cstime), plus forkfeed-bench's own (getrusage of this script's
children). "K machines (est.)" is K x the 1-daemon images/s: what K daemons on K
machines of this one's speed would give if nothing else bounds the trainer. It is an
estimate, not a measurement; on one machine the K daemons share its cores, so the
measured images/s cannot scale so.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

SAMPLE_BYTES = 224 * 224 * 3  # uint8 HWC


def cpu_seconds(pid):
    """utime + stime of `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gateway_of(daemon_pid):
    for task in os.listdir(f"/proc/{daemon_pid}/task"):
        with open(f"/proc/{daemon_pid}/task/{task}/children") as f:
            for child in f.read().split():
                with open(f"/proc/{child}/comm") as c:
                    if c.read().startswith("forkfeed-gatewa"):
                        return int(child)
    sys.exit("remote_stream.py: forkfeedd has no forkfeed-gateway")


def descendants(pid):
    """`pid` and every process below it, by /proc's children lists."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:  # it exited meanwhile
            pass
    return found


def tree_cpu_seconds(pid):
    """CPU seconds of `pid`'s process tree: each live process's utime + stime, plus the
    cutime + cstime of the children it has reaped (which are no longer in the tree)."""
    total = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def start_daemon(bin_dir, tmp, name, data, token, workers, env):
    """A forkfeedd serving `data` as "bench", listening on a free loopback port:
    (process, socket, address)."""
    socket = os.path.join(tmp, f"{name}.sock")
    daemon = subprocess.Popen([f"{bin_dir}/forkfeedd", "--socket", socket, "--log-level", "warn",
                               "--max-workers", str(workers), "--dataset", f"bench={data}",
                               "--listen", "127.0.0.1:0",
                               "--token-file", token], env=env)
    deadline = time.monotonic() + 30
    while True:
        if daemon.poll() is not None or time.monotonic() > deadline:
            daemon.kill()
            daemon.wait()
            sys.exit(f"remote_stream.py: forkfeedd {name} did not start")
        if os.path.exists(socket):
            ctl = subprocess.run([f"{bin_dir}/forkfeed-ctl", "--socket", socket, "stats"],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
            if ctl.returncode == 0:
                return daemon, socket, json.loads(ctl.stdout)["daemon"]["listen"][0]
        time.sleep(0.05)


def stop_daemons(daemons):
    for daemon in daemons:
        daemon.terminate()
    for daemon in daemons:
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()


def bench(bin_dir, epochs, workers, how, env=None, step_ms=0, batches=0):
    """One forkfeed-bench run (of `batches` only, if not 0), its --json report."""
    cmd = [f"{bin_dir}/forkfeed-bench", "--dataset", "bench", "--workers", str(workers), "--batch", "64",
           "--size", "224",
           "--epochs", str(epochs), "--json", "--log-level", "warn"] + how
    if step_ms:
        cmd += ["--step-ms", str(step_ms)]
    if batches:
        cmd += ["--stop-after-batches", str(batches)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"remote_stream.py: {' '.join(cmd)} failed (exit {out.returncode})")
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--bin", default=os.path.join(root, "build", "bin"), help="where the tools are")
    parser.add_argument("--data", help="an ImageFolder (default: a generated one)")
    parser.add_argument("--images", type=int, default=1024, help="images to generate (default 1024)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per run (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three runs (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="the daemon's decode workers (default 2)")
    parser.add_argument("--stream-workers", type=int,
                        help="the workers the trainer's stream asks for (default: --workers)")
    parser.add_argument("--step-ms", type=int, default=0,
                        help="hold each batch MS ms after reading it, as a training step would (default 0)")
    parser.add_argument("--daemons", metavar="K,K,...",
                        help="a fan-in instead: for each K, K daemons read by one forkfeed-bench --remote")
    args = parser.parse_args()
    if args.daemons is not None:
        try:
            counts = [int(k) for k in args.daemons.split(",")]
        except ValueError:
            parser.error("--daemons takes daemon counts separated by commas, e.g. 1,2,3; "
                         f"got {args.daemons!r}")
        if not counts or any(k < 1 or k > 64 for k in counts):
            parser.error(f"--daemons: each count must be 1 to 64, got {args.daemons!r}")
        if args.workers < 1:
            parser.error("--workers must be at least 1")
        return fan_in(args, counts)
    stream_workers = args.workers if args.stream_workers is None else args.stream_workers
    if args.workers < 1 or stream_workers < 1:
        parser.error("--workers and --stream-workers must be at least 1")

    with tempfile.TemporaryDirectory(prefix="forkfeed-remote-") as tmp:
        data, token = prepare(args, tmp)
        # The gateway inherits no UCX_TLS: each remote client's choice decides the transport.
        env = {k: v for k, v in os.environ.items() if not k.startswith("UCX_")}
        daemon, socket, address = start_daemon(args.bin, tmp, "forkfeedd", data, token, args.workers, env)
        try:
            gateway = gateway_of(daemon.pid)
            runs = {
                "Unix socket (shared memory)": (["--daemon", socket], env, False),
                "remote, UCX_TLS=tcp": (["--remote", address, "--token-file", token],
                                        dict(env, UCX_TLS="tcp"), True),
                "remote, UCX defaults": (["--remote", address, "--token-file", token], env, True),
            }
            results = {name: [] for name in runs}

            def measured(how, run_env, remote, batches=0):
                cpu = cpu_seconds(gateway)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                report = bench(args.bin, args.epochs, stream_workers, how, run_env, args.step_ms, batches)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                report["gateway_cpu_s"] = cpu_seconds(gateway) - cpu if remote else 0.0
                # forkfeed-bench is the only child this script waits for: the trainer's CPU.
                report["trainer_cpu_s"] = ((after.ru_utime + after.ru_stime) -
                                           (before.ru_utime + before.ru_stime))
                return report

            for _ in range(args.rounds):
                for name, (how, run_env, remote) in runs.items():
                    report = measured(how, run_env, remote)
                    # What a run of one batch costs (start-up: UCX, the connection, the stream's
                    # opening) is not a cost per GB: taken off both ends' CPU and the bytes.
                    start = measured(how, run_env, remote, batches=1)
                    for key in ("gateway_cpu_s", "trainer_cpu_s"):
                        report[key + "_moving"] = max(0.0, report[key] - start[key])
                    report["images_moving"] = report["images"] - start["images"]
                    results[name].append(report)
        finally:
            stop_daemons([daemon])

    images = f"the images of {args.data}" if args.data else f"{args.images} images"
    print(f"{os.cpu_count()} CPUs; {args.epochs} epochs of {images} per run, 224 px uint8, batch 64, "
          f"{args.workers} decode workers, the stream asking for {stream_workers}"
          + (f", a {args.step_ms} ms step a batch" if args.step_ms else "")
          + f"; median of {args.rounds} rounds")
    print("trainer CPU/GB: forkfeed-bench's CPU seconds per GB of batches it read (the Unix socket's is the")
    print("reading alone; a remote row's excess over it is the receive); CPU/GB leaves out "
          "start-up (what a run")
    print("of one batch costs, measured beside each run); each column the median of the rounds")
    print(f"{'':<30}{'img/s':>8}{'vs local':>10}{'GB/s':>8}{'wait p50':>10}{'wait p99':>10}"
          f"{'gateway CPU/GB':>16}{'trainer CPU/GB':>16}")
    local = None
    for name, reports in results.items():
        report = sorted(reports, key=lambda r: r["images_per_s"])[len(reports) // 2]
        rate = report["images_per_s"]
        local = local or rate
        per_gb = {key: statistics.median(r[key + "_moving"] / (r["images_moving"] * SAMPLE_BYTES / 1e9)
                                         for r in reports)
                  for key in ("gateway_cpu_s", "trainer_cpu_s")}
        gateway = f"{per_gb['gateway_cpu_s']:.2f} s" if per_gb["gateway_cpu_s"] else "-"
        trainer = f"{per_gb['trainer_cpu_s']:.2f} s"
        print(f"{name:<30}{rate:>8.0f}{rate / local:>9.2f}x{rate * SAMPLE_BYTES / 1e9:>8.3f}"
              f"{report['wait_p50_ms']:>8.1f}ms{report['wait_p99_ms']:>8.1f}ms{gateway:>16}{trainer:>16}")


def prepare(args, tmp):
    """(the dataset, the token file) of a run."""
    data = args.data
    if not data:
        data = os.path.join(tmp, "data")
        subprocess.run([f"{args.bin}/forkfeed-mkdata", "--out", data, "--images", str(args.images),
                        "--classes", "8", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("benchmark-token-of-the-comparison\n")
    os.chmod(token, 0o600)
    return data, token


def fan_in(args, counts):
    """--daemons: for each K, K daemons and one forkfeed-bench --remote over all of them."""
    if 1 not in counts:
        counts = [1] + counts  # the single-daemon rate the estimate multiplies
    rows = {}
    with tempfile.TemporaryDirectory(prefix="forkfeed-fan-in-") as tmp:
        data, token = prepare(args, tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("UCX_")}
        for k in counts:
            started = []
            try:
                for i in range(k):
                    started.append(start_daemon(args.bin, tmp, f"k{k}-d{i}", data, token, args.workers, env))
                how = ["--remote", ",".join(address for _, _, address in started), "--token-file", token]
                reports = []
                for _ in range(args.rounds):
                    daemons_cpu = sum(tree_cpu_seconds(d.pid) for d, _, _ in started)
                    children = resource.getrusage(resource.RUSAGE_CHILDREN)
                    report = bench(args.bin, args.epochs, args.workers, how, dict(env, UCX_TLS="tcp"))
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    bench_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
                    report["cpu_s"] = (sum(tree_cpu_seconds(d.pid) for d, _, _ in started)
                                       - daemons_cpu + bench_cpu)
                    reports.append(report)
                rows[k] = sorted(reports, key=lambda r: r["images_per_s"])[len(reports) // 2]
            finally:
                stop_daemons([d for d, _, _ in started])

    single = rows[1]["images_per_s"]
    images = f"the images of {args.data}" if args.data else f"{args.images} images"
    print(f"{os.cpu_count()} CPUs; {args.epochs} epochs of {images} per run, 224 px uint8, batch 64; "
          f"each daemon {args.workers} decode workers; forkfeed-bench --remote over UCX_TLS=tcp (loopback); "
          f"median of {args.rounds} rounds")
    print("CPU: forkfeedd + forkfeed-gateway + decode workers of every daemon, and forkfeed-bench, "
          "per 1000 images")
    print(f"{'K':>3}{'img/s':>9}{'CPU s/1k img':>14}{'K machines (est.)':>19}  per daemon img/s")
    for k in sorted(rows):
        report = rows[k]
        cpu_per_k = report["cpu_s"] / report["images"] * 1000 if report["images"] else float("nan")
        shares = " ".join(f"{d['images_per_s']:.0f}" + ("" if d["losses"] == 0
                                                        else f" ({d['losses']} losses)")
                          for d in report.get("daemons", []))
        print(f"{k:>3}{report['images_per_s']:>9.0f}{cpu_per_k:>14.3f}{k * single:>19.0f}  {shares}")
    print("K machines (est.) = K x the 1-daemon img/s: an estimate for K daemons on K machines, "
          "not measured here")


if __name__ == "__main__":
    main()
