#!/usr/bin/python3
"""One forkfeedd's stream read remotely (forkfeed-gateway over UCX) beside the same stream
read through its Unix socket, on this machine.

usage: remote_stream.py [--bin DIR] [--data DIR] [--images N] [--epochs E] [--rounds R] [--workers W]

One forkfeedd serves a dataset by name and listens on loopback for remote clients. Each
row is a forkfeed-bench run of E epochs, batch 64, 224 px uint8 (train transform): through the Unix socket (shared memory, no copy), remotely with UCX_TLS=tcp (the
network path: TCP over loopback) and remotely with UCX's default transports (on one host
UCX picks shared memory). The daemon has W decode workers (default 2): on a 2-core
machine, 1 leaves a core to the transfer, as a decode node and a GPU node would. The runs alternate R rounds, and each row shows the median
round: images/s and its ratio to the local run, the batch bytes per second (GB/s) that
crossed the transport, the p50/p99 wait for a batch, and the CPU seconds forkfeed-gateway
spent per GB sent. Standard library only; the tools are this build's (--bin).
"""
import argparse
import json
import os
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


def bench(bin_dir, epochs, workers, how, env=None):
    cmd = [f"{bin_dir}/forkfeed-bench", "--dataset", "bench", "--workers", str(workers), "--batch", "64", "--size", "224",
           "--epochs", str(epochs), "--json", "--log-level", "warn"] + how
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
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="forkfeed-remote-") as tmp:
        data = args.data
        if not data:
            data = os.path.join(tmp, "data")
            subprocess.run([f"{args.bin}/forkfeed-mkdata", "--out", data, "--images", str(args.images),
                            "--classes", "8", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("benchmark-token\n")
        os.chmod(token, 0o600)
        socket = os.path.join(tmp, "forkfeedd.sock")
        # The gateway inherits no UCX_TLS: each remote client's choice decides the transport.
        env = {k: v for k, v in os.environ.items() if not k.startswith("UCX_")}
        daemon = subprocess.Popen([f"{args.bin}/forkfeedd", "--socket", socket, "--log-level", "warn",
                                   "--max-workers", str(args.workers), "--dataset", f"bench={data}", "--listen", "127.0.0.1:0",
                                   "--token-file", token], env=env)
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(socket):
                if daemon.poll() is not None or time.monotonic() > deadline:
                    sys.exit("remote_stream.py: forkfeedd did not start")
                time.sleep(0.05)
            stats = json.loads(subprocess.run([f"{args.bin}/forkfeed-ctl", "--socket", socket, "stats"],
                                              stdout=subprocess.PIPE, text=True, check=True).stdout)
            address = stats["daemon"]["listen"][0]
            gateway = gateway_of(daemon.pid)
            runs = {
                "Unix socket (shared memory)": (["--daemon", socket], env, False),
                "remote, UCX_TLS=tcp": (["--remote", address, "--token-file", token], dict(env, UCX_TLS="tcp"), True),
                "remote, UCX defaults": (["--remote", address, "--token-file", token], env, True),
            }
            results = {name: [] for name in runs}
            for _ in range(args.rounds):
                for name, (how, run_env, remote) in runs.items():
                    cpu = cpu_seconds(gateway)
                    report = bench(args.bin, args.epochs, args.workers, how, run_env)
                    report["gateway_cpu_s"] = cpu_seconds(gateway) - cpu if remote else 0.0
                    results[name].append(report)
        finally:
            daemon.terminate()
            daemon.wait()

    print(f"{os.cpu_count()} CPUs; {args.epochs} epochs of {args.images} images per run, 224 px uint8, batch 64, "
          f"{args.workers} decode workers; median of {args.rounds} rounds")
    print(f"{'':<30}{'img/s':>8}{'vs local':>10}{'GB/s':>8}{'wait p50':>10}{'wait p99':>10}{'gateway CPU/GB':>16}")
    local = None
    for name, reports in results.items():
        report = sorted(reports, key=lambda r: r["images_per_s"])[len(reports) // 2]
        rate = report["images_per_s"]
        local = local or rate
        gigabytes = report["images"] * SAMPLE_BYTES / 1e9
        cpu_per_gb = f"{report['gateway_cpu_s'] / gigabytes:.2f} s" if report["gateway_cpu_s"] else "-"
        print(f"{name:<30}{rate:>8.0f}{rate / local:>9.2f}x{rate * SAMPLE_BYTES / 1e9:>8.3f}"
              f"{report['wait_p50_ms']:>8.1f}ms{report['wait_p99_ms']:>8.1f}ms{cpu_per_gb:>16}")


if __name__ == "__main__":
    main()
