"""What a caller that keeps its batches costs: passes of one Loader read two ways, side by
side, alternating, on one ImageFolder —

  released: each batch dropped before the next is asked for (every batch read in place);
  kept:     every batch of the pass kept (batches = list(loader)), so that each one asked
            for while the caller holds every slot has the oldest copied aside first.

It prints each way's median seconds a pass, the batches and bytes copied a pass, and what
a copied batch cost: (kept - released) / copies. Run by hand, with the build's package:

  PYTHONPATH=build/python /usr/bin/python3 tools/compare/held_batches.py --data DIR
"""
import argparse
import statistics
import time

import forkfeed


def one_pass(loader, keep):
    started = time.perf_counter()
    kept = []
    for images, labels in loader:
        if keep:
            kept.append((images, labels))
    took = time.perf_counter() - started
    del kept
    return took


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--prefetch", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5, help="passes of each way, alternating")
    args = parser.parse_args()
    times = {"released": [], "kept": []}
    copied = []
    with forkfeed.Loader(args.data, batch_size=args.batch, size=args.size, workers=args.workers,
                         prefetch=args.prefetch, transform="eval", log_level="error") as loader:
        one_pass(loader, False)  # the page cache and the slots warm
        for _ in range(args.runs):
            for way in ("released", "kept"):
                before = loader.stats()
                times[way].append(one_pass(loader, way == "kept"))
                after = loader.stats()
                if way == "kept":
                    copied.append((after["copied_batches"] - before["copied_batches"],
                                   after["copied_bytes"] - before["copied_bytes"]))
        batches, slots = len(loader), loader.stats()["slots"]
    released, kept = statistics.median(times["released"]), statistics.median(times["kept"])
    copies = statistics.median(c for c, _ in copied)
    mib = statistics.median(b for _, b in copied) / copies / 2**20 if copies else 0.0
    print(f"held_batches.py: {batches} batches of {args.batch} at {args.size}x{args.size} a pass, "
          f"{args.workers} workers, {slots} slots, medians of {args.runs} passes each")
    print(f"{'released':<10}{released:>8.3f} s a pass, 0 copied")
    print(f"{'kept':<10}{kept:>8.3f} s a pass, {copies:.0f} copied of {mib:.1f} MiB each")
    if copies:
        print(f"a copied batch: {(kept - released) / copies * 1000:+.2f} ms "
              f"({(kept - released) / released * 100:+.1f}% on the pass)")


if __name__ == "__main__":
    main()
