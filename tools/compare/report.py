#!/usr/bin/python3
"""The table (or the --json object) of tools/compare.sh, from the JSON files its runs left
in one folder: probe.json, forkfeed.json + forkfeed.pss.json, shards.json +
shards.pss.json (the same images as tar shards, with --shards), python.json +
python.pss.json (forkfeed from Python) and torch.json + torch.pss.json (each absent when
its row was skipped, with the reason in python.skipped or torch.skipped), and
settings.json. Standard library only.

usage: report.py DIR... [--json]

One table per DIR (compare.sh --dtype both gives one per dtype, and then a last table of
float32 / uint8); with --json one object, or with several DIRs one object per DIR keyed
by its dtype, plus "float32_over_uint8". A DIR holding folders run1, run2, ... (compare.sh
--repeat R) reports the median of each figure over the runs, and the range of images/s.
"""
import json
import os
import statistics
import sys

LOADERS = ("forkfeed", "shards", "python", "torch")


def load(folder, name):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    # forkfeed-bench and torch_loader.py print their object as the last line.
    return json.loads(text.splitlines()[-1]) if text else None


def ratio(a, b):
    return a / b if a and b else None


def gather(folder):
    settings = load(folder, "settings.json")
    probe = load(folder, "probe.json")
    forkfeed = load(folder, "forkfeed.json")
    shards = load(folder, "shards.json")
    python = load(folder, "python.json")
    torch = load(folder, "torch.json")
    for name, run in zip(LOADERS, (forkfeed, shards, python, torch)):
        if run is not None:
            tree = load(folder, name + ".pss.json")
            run["peak_pss_bytes"] = tree["peak_pss_bytes"]
            # The whole process tree from start to end, startup (imports, forks) included.
            run["cpu_s"] = tree["cpu_s"]
            run["images_per_cpu_s"] = run["images"] / tree["cpu_s"] if tree["cpu_s"] > 0 else 0.0
    skipped = {}
    for name in ("torch", "python"):
        path = os.path.join(folder, name + ".skipped")
        skipped[name] = open(path).read().strip() if os.path.exists(path) else None
    fused = probe["fused"]["images_per_s"]
    workers = settings["workers"]
    # The batch slots: every slot holds one full batch. The rest of the arena is the rings
    # and the dataset index (its paths), whatever the batch size.
    slot_bytes = forkfeed["slots"] * forkfeed["batch_size"] * settings["sample_bytes"]
    return {
        "settings": settings,
        "probe": probe,
        "forkfeed": forkfeed,
        "shards": shards,
        "python": python,
        "torch": torch,
        "python_skipped": skipped["python"],
        "torch_skipped": skipped["torch"],
        "arena_bytes": forkfeed["arena_bytes"],
        "arena_slot_bytes": slot_bytes,
        "ratios": {
            "forkfeed_over_torch": ratio(forkfeed["images_per_s"], torch and torch["images_per_s"]),
            "shards_over_folder": ratio(shards and shards["images_per_s"], forkfeed["images_per_s"]),
            "python_over_forkfeed": ratio(python and python["images_per_s"], forkfeed["images_per_s"]),
            "python_over_torch": ratio(python and python["images_per_s"], torch and torch["images_per_s"]),
            "python_pss_over_torch": ratio(python and python["peak_pss_bytes"],
                                           torch and torch["peak_pss_bytes"]),
            "fused_over_opencv": ratio(fused, probe["opencv"]["images_per_s"]),
            "forkfeed_over_n_fused": ratio(forkfeed["images_per_s"], workers * fused),
            "forkfeed_pss_over_torch": ratio(forkfeed["peak_pss_bytes"], torch and torch["peak_pss_bytes"]),
            "forkfeed_over_torch_per_cpu_s": ratio(forkfeed["images_per_cpu_s"],
                                                   torch and torch["images_per_cpu_s"]),
            "fused_over_opencv_per_cpu_s": ratio(probe["fused"]["images_per_cpu_s"],
                                                 probe["opencv"]["images_per_cpu_s"]),
        },
    }


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def median_of(values):
    """Reports of the same shape, one per run, as one: the median of every number, the
    first run's value of anything else (names, settings, a row skipped in some run)."""
    first = values[0]
    if isinstance(first, dict) and all(isinstance(v, dict) for v in values):
        return {key: median_of([v.get(key) for v in values]) for key in first}
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return statistics.median_low(values)  # counts and sizes stay whole
    if is_number(first) and all(is_number(v) for v in values):
        return statistics.median(values)
    return first


def gather_runs(folder):
    """The report of one dtype: one run, or the median of the runs in run1, run2, ..."""
    runs = sorted((d for d in os.listdir(folder) if d.startswith("run")), key=lambda d: int(d[3:]))
    reports = [gather(os.path.join(folder, d)) for d in runs] if runs else [gather(folder)]
    report = median_of(reports)
    report["repeat"] = len(reports)
    report["images_per_s_range"] = {}
    for name in LOADERS + ("probe",):
        rates = [(r["probe"]["fused"] if name == "probe" else r[name] or {}).get("images_per_s")
                 for r in reports]
        if all(is_number(x) for x in rates):
            report["images_per_s_range"][name] = [min(rates), max(rates)]
    return report


def float32_over_uint8(by_dtype):
    """images/s of each loader (and the fused probe) with float32 over uint8."""
    u, f = by_dtype["uint8"], by_dtype["float32"]
    out = {name: ratio(f[name] and f[name]["images_per_s"], u[name] and u[name]["images_per_s"])
           for name in LOADERS}
    out["probe_fused"] = ratio(f["probe"]["fused"]["images_per_s"], u["probe"]["fused"]["images_per_s"])
    return out


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def times(x, suffix="x"):
    return "-" if x is None else f"{x:.2f}{suffix}"


def loader_names(n):
    return (("forkfeed", f"forkfeed ({n} workers)"), ("shards", f"forkfeed, tar shards ({n} workers)"),
            ("python", f"forkfeed from Python ({n} workers)"), ("torch", f"PyTorch DataLoader ({n} workers)"))


def print_dtype_ratios(by_dtype, q):
    n = by_dtype["uint8"]["settings"]["workers"]
    names = [("probe_fused", "probe, fused decode (1 core)")] + list(loader_names(n))
    lines = [(name, times(q[key])) for key, name in names if key != "shards" or q[key] is not None]
    width = max(len(name) for name, _ in lines)
    print(f"{'float32 / uint8'.ljust(width)}  images/s")
    for name, value in lines:
        print(f"{name.ljust(width)}  {value}")


def print_table(r):
    s, p, f, sh, py, t = r["settings"], r["probe"], r["forkfeed"], r["shards"], r["python"], r["torch"]
    n = s["workers"]
    print(f"compare.sh: {f['dataset_size']} images in {s['data']}, {s['transform']} {s['size']}x{s['size']} "
          f"{s['dtype']}, batch {s['batch']}, {n} worker{'s' if n != 1 else ''}, {s['cpus']} CPUs")
    print(f"  each loader: {f['images']} images ({s['schedule']}); probe: {p['probed']} files, one thread")
    busy = " - the machine was busy, figures will be low" if s["load_before"] > 0.5 * s["cpus"] else ""
    print(f"  load average before the runs: {s['load_before']:.2f}{busy}")
    spread = r["images_per_s_range"]
    if r["repeat"] > 1:
        print(f"  every figure is the median of {r['repeat']} runs; the last column is the range of images/s")
    print()

    def span(name):
        low, high = spread.get(name, (None, None))
        return f"{low:.0f}-{high:.0f}" if r["repeat"] > 1 and low is not None else ""

    rows = [("", "images/s", "per CPU s", "peak PSS", "wait p50", "wait p99",
             "range" if r["repeat"] > 1 else "")]
    for name, path in (("probe, OpenCV full decode (1 core)", "opencv"),
                       ("probe, fused decode (1 core)", "fused")):
        run = p[path]
        rows.append((name, f"{run['images_per_s']:.1f}", f"{run['images_per_cpu_s']:.1f}", "", "", "",
                     span("probe") if path == "fused" else ""))
    for key, name in loader_names(n):
        run = r[key]
        if key == "shards" and run is None:
            continue
        if run is None:
            rows.append((name, "skipped", "", "", "", "", ""))
        else:
            rows.append((name, f"{run['images_per_s']:.1f}", f"{run['images_per_cpu_s']:.1f}",
                         mib(run["peak_pss_bytes"]), f"{run['wait_p50_ms']:.2f} ms",
                         f"{run['wait_p99_ms']:.2f} ms",
                         span(key)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = "".join("  " + row[i].rjust(widths[i]) for i in range(1, len(row)))
        print((row[0].ljust(widths[0]) + cells).rstrip())
    q = r["ratios"]
    rest = r["arena_bytes"] - r["arena_slot_bytes"]
    lines = [
        ("forkfeed / PyTorch", times(q["forkfeed_over_torch"])),
        *([("tar shards / folder", times(q["shards_over_folder"]))] if sh is not None else []),
        ("same, per CPU second of each tree", times(q["forkfeed_over_torch_per_cpu_s"])),
        ("from Python / forkfeed-bench", times(q["python_over_forkfeed"])),
        ("from Python / PyTorch", times(q["python_over_torch"])),
        ("fused / OpenCV, single core", times(q["fused_over_opencv"])),
        ("same, per CPU second", times(q["fused_over_opencv_per_cpu_s"])),
        (f"forkfeed / ({n} x single-core fused)", times(q["forkfeed_over_n_fused"], "")),
        ("peak PSS, forkfeed / PyTorch", times(q["forkfeed_pss_over_torch"])),
        ("peak PSS, from Python / PyTorch", times(q["python_pss_over_torch"])),
        ("forkfeed arena", f"{mib(r['arena_bytes'])}: {f['slots']} slots x {f['batch_size']} x "
                           f"{s['sample_bytes']} bytes = {mib(r['arena_slot_bytes'])}, "
                           f"rings and index {mib(rest)}"),
    ]
    width = max(len(name) for name, _ in lines)
    print()
    for name, value in lines:
        print(f"{name.ljust(width)}  {value}")
    for name in ("opencv", "fused"):
        if p[name]["failed"]:
            print(f"probe {name}: {p[name]['failed']} file(s) failed; first: {p[name]['first_error']}")
    if f["skipped"]:
        print(f"forkfeed skipped {f['skipped']} sample(s) that failed to decode")
    if py is not None and py["start_method"] != "fork":
        print(f"forkfeed from Python started its workers by {py['start_method']} "
              "(forkfeed.fork_report() says why)")
    if r["python_skipped"]:
        print(f"forkfeed from Python row skipped: {r['python_skipped']}")
    if r["torch_skipped"]:
        print(f"PyTorch row skipped: {r['torch_skipped']}")


def main():
    folders = [a for a in sys.argv[1:] if a != "--json"]
    if not folders or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    reports = [gather_runs(folder) for folder in folders]
    by_dtype = {r["settings"]["dtype"]: r for r in reports}
    q = float32_over_uint8(by_dtype) if {"uint8", "float32"} <= by_dtype.keys() else None
    if "--json" in sys.argv[1:]:
        print(json.dumps(reports[0] if len(reports) == 1 else {**by_dtype, "float32_over_uint8": q}))
        return
    for i, r in enumerate(reports):
        if i > 0:
            print()
        print_table(r)
    if q is not None:
        print()
        print_dtype_ratios(by_dtype, q)


if __name__ == "__main__":
    main()
