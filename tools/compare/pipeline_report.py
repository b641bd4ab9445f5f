#!/usr/bin/python3
"""The table (or the --json object) of tools/compare.sh --transforms, from the JSON files
its runs left: DIR/settings.json, and for each pipeline i (0 the shorthand every pipeline
is set against) DIR/runR/pI/python.json and torch.json (+ .pss.json; absent when the row
was skipped, with the reason in python.skipped or torch.skipped). Standard library only.

usage: pipeline_report.py DIR [--json]

Per pipeline: images/s of forkfeed from Python and of the PyTorch DataLoader with the same
pipeline, their ratio, and each one's cost per sample: the time one worker spends on a
sample, workers / (images/s), which holds while the workers are what limits the rate (the
consumer only reads the batches). forkfeed's cost is also set against the shorthand's, so
the line says what the pipeline's ops add to decoding and cropping. Every figure is the
median over the runs (--repeat), with the range of images/s.
"""
import json
import os
import sys

from report import load, median_of, ratio

ROWS = ("python", "torch")


def gather_pipeline(folder, index):
    """One pipeline's figures: the median over the runs, and the range of images/s."""
    runs = sorted((d for d in os.listdir(folder) if d.startswith("run")), key=lambda d: int(d[3:]))
    out = {}
    for row in ROWS:
        results, skipped = [], None
        for run in runs:
            path = os.path.join(folder, run, f"p{index}")
            result = load(path, row + ".json")
            if result is None:
                reason = os.path.join(path, row + ".skipped")
                skipped = open(reason).read().strip() if os.path.exists(reason) else "no result"
                continue
            result["cpu_s"] = load(path, row + ".pss.json")["cpu_s"]
            results.append(result)
        rates = [r["images_per_s"] for r in results]
        out[row] = median_of(results) if results else None
        out[row + "_skipped"] = skipped if not results else None
        out[row + "_range"] = [min(rates), max(rates)] if rates else None
    return out


def cost_us(run, workers):
    """Microseconds of one worker's time per sample."""
    return workers / run["images_per_s"] * 1e6 if run and run["images_per_s"] > 0 else None


def gather(folder):
    settings = load(folder, "settings.json")
    workers = settings["workers"]
    pipelines = []
    for index, spec in enumerate(settings["pipelines"]):
        p = gather_pipeline(folder, index)
        p["spec"] = spec
        p["forkfeed_over_torch"] = ratio(p["python"] and p["python"]["images_per_s"],
                                         p["torch"] and p["torch"]["images_per_s"])
        p["forkfeed_us_per_sample"] = cost_us(p["python"], workers)
        p["torch_us_per_sample"] = cost_us(p["torch"], workers)
        pipelines.append(p)
    base = pipelines[0]["forkfeed_us_per_sample"]
    for p in pipelines:
        cost = p["forkfeed_us_per_sample"]
        p["forkfeed_us_over_shorthand"] = cost - base if cost is not None and base is not None else None
        p["forkfeed_cost_over_shorthand"] = ratio(cost, base)
    return {"settings": settings, "pipelines": pipelines}


def figure(x, form="{:.0f}"):
    return "-" if x is None else form.format(x)


def print_table(r):
    s = r["settings"]
    n = s["workers"]
    print(f"compare.sh --transforms: {s['data']}, batch {s['batch']}, {n} worker{'s' if n != 1 else ''}, "
          f"{s['cpus']} CPUs, {s['schedule']} per measurement, median of {s['repeat']} run(s)")
    busy = " - the machine was busy, figures will be low" if s["load_before"] > 0.5 * s["cpus"] else ""
    print(f"  load average before the runs: {s['load_before']:.2f}{busy}")
    print("  cost: one worker's time per sample, workers / (images/s); +: over the shorthand's")
    print()
    labels = [s["pipelines"][0]] + [f"({chr(ord('a') + i)})" for i in range(len(r["pipelines"]) - 1)]
    for label, p in zip(labels[1:], r["pipelines"][1:]):
        print(f"  {label} {p['spec']}")
    print()
    rows = [("", "forkfeed img/s", "PyTorch img/s", "forkfeed / PyTorch", "forkfeed cost", "+ over "
             + s["pipelines"][0], "PyTorch cost", "dtype", "forkfeed range", "PyTorch range")]
    for label, p in zip(labels, r["pipelines"]):
        f, t = p["python"], p["torch"]
        extra = p["forkfeed_us_over_shorthand"]
        rows.append((
            label, figure(f and f["images_per_s"], "{:.1f}"), figure(t and t["images_per_s"], "{:.1f}"),
            figure(p["forkfeed_over_torch"], "{:.2f}x"), figure(p["forkfeed_us_per_sample"], "{:.0f} us"),
            "" if p is r["pipelines"][0] else "-" if extra is None
            else f"{extra:+.0f} us ({p['forkfeed_cost_over_shorthand']:.2f}x)",
            figure(p["torch_us_per_sample"], "{:.0f} us"), (f or t or {}).get("batch_dtype") or "-",
            "-".join(f"{x:.0f}" for x in p["python_range"]) if p["python_range"] else "-",
            "-".join(f"{x:.0f}" for x in p["torch_range"]) if p["torch_range"] else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print((row[0].ljust(widths[0]) + "".join("  " + row[i].rjust(widths[i])
                                                 for i in range(1, len(row)))).rstrip())
    notes = {}
    for p in r["pipelines"]:
        for row, name in (("python", "forkfeed from Python"), ("torch", "PyTorch")):
            if p[row + "_skipped"]:
                notes.setdefault(f"{name} skipped: {p[row + '_skipped']}", None)
    for note in notes:
        print(note)


def main():
    args = sys.argv[1:]
    folders = [a for a in args if a != "--json"]
    if len(folders) != 1 or folders[0] in ("-h", "--help"):
        sys.exit(__doc__)
    r = gather(folders[0])
    if "--json" in args:
        print(json.dumps(r))
    else:
        print_table(r)


if __name__ == "__main__":
    main()
