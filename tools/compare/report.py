#!/usr/bin/python3
"""The table (or the --json object) of tools/compare.sh, from the JSON files its runs left
in one folder: probe.json, forkfeed.json + forkfeed.pss.json, shards.json +
shards.pss.json (the same images as tar shards, with --shards), python.json +
python.pss.json (forkfeed from Python) and torch.json + torch.pss.json (each absent when
its row was skipped, with the reason in python.skipped or torch.skipped), and
settings.json. Standard library only.

usage: report.py DIR... [--json]

One table per DIR (compare.sh --dtype both gives one per dtype); with --json one object,
or with several DIRs one object per DIR keyed by its dtype.
"""
import json
import os
import sys


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
    for name, run in (("forkfeed", forkfeed), ("shards", shards), ("python", python), ("torch", torch)):
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
            "python_pss_over_torch": ratio(python and python["peak_pss_bytes"], torch and torch["peak_pss_bytes"]),
            "fused_over_opencv": ratio(fused, probe["opencv"]["images_per_s"]),
            "forkfeed_over_n_fused": ratio(forkfeed["images_per_s"], workers * fused),
            "forkfeed_pss_over_torch": ratio(forkfeed["peak_pss_bytes"], torch and torch["peak_pss_bytes"]),
            "forkfeed_over_torch_per_cpu_s": ratio(forkfeed["images_per_cpu_s"],
                                                   torch and torch["images_per_cpu_s"]),
            "fused_over_opencv_per_cpu_s": ratio(probe["fused"]["images_per_cpu_s"],
                                                 probe["opencv"]["images_per_cpu_s"]),
        },
    }


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def times(x, suffix="x"):
    return "-" if x is None else f"{x:.2f}{suffix}"


def print_table(r):
    s, p, f, sh, py, t = r["settings"], r["probe"], r["forkfeed"], r["shards"], r["python"], r["torch"]
    n = s["workers"]
    print(f"compare.sh: {f['dataset_size']} images in {s['data']}, {s['transform']} {s['size']}x{s['size']} "
          f"{s['dtype']}, batch {s['batch']}, {n} worker{'s' if n != 1 else ''}, {s['cpus']} CPUs")
    print(f"  each loader: {f['images']} images ({s['schedule']}); probe: {p['probed']} files, one thread")
    busy = " - the machine was busy, figures will be low" if s["load_before"] > 0.5 * s["cpus"] else ""
    print(f"  load average before the runs: {s['load_before']:.2f}{busy}\n")
    rows = [("", "images/s", "per CPU s", "peak PSS", "wait p50", "wait p99")]
    for name, path in (("probe, OpenCV full decode (1 core)", "opencv"), ("probe, fused decode (1 core)", "fused")):
        run = p[path]
        rows.append((name, f"{run['images_per_s']:.1f}", f"{run['images_per_cpu_s']:.1f}", "", "", ""))
    loaders = [(f"forkfeed ({n} workers)", f)]
    if sh is not None:
        loaders.append((f"forkfeed, tar shards ({n} workers)", sh))
    loaders += [(f"forkfeed from Python ({n} workers)", py), (f"PyTorch DataLoader ({n} workers)", t)]
    for name, run in loaders:
        if run is None:
            rows.append((name, "skipped", "", "", "", ""))
        else:
            rows.append((name, f"{run['images_per_s']:.1f}", f"{run['images_per_cpu_s']:.1f}",
                         mib(run["peak_pss_bytes"]), f"{run['wait_p50_ms']:.2f} ms", f"{run['wait_p99_ms']:.2f} ms"))
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
        print(f"forkfeed from Python started its workers by {py['start_method']} (forkfeed.fork_report() says why)")
    if r["python_skipped"]:
        print(f"forkfeed from Python row skipped: {r['python_skipped']}")
    if r["torch_skipped"]:
        print(f"PyTorch row skipped: {r['torch_skipped']}")


def main():
    folders = [a for a in sys.argv[1:] if a != "--json"]
    if not folders or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    reports = [gather(folder) for folder in folders]
    if "--json" in sys.argv[1:]:
        print(json.dumps(reports[0] if len(reports) == 1 else {r["settings"]["dtype"]: r for r in reports}))
    else:
        for i, r in enumerate(reports):
            if i > 0:
                print()
            print_table(r)


if __name__ == "__main__":
    main()
