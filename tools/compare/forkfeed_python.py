#!/usr/bin/python3
"""The "forkfeed from Python" row of tools/compare.sh: forkfeed.Loader iterated as a
trainer iterates it (`for images, labels in loader`, torch tensors that are views of the
batch slots), timed the way forkfeed-bench times the C++ loader. Prints one JSON object
on one line, with the fields of torch_loader.py's and forkfeed-bench's.

As forkfeed-bench does, it reads one byte of every page of each batch (a trainer reads
all of it) and keeps no batch past the next one, as a training loop keeps none.
The clock runs from the first batch asked for to the last one received; the wait per
batch is the time spent in next(). Run it with /usr/bin/python3 and
PYTHONPATH=BUILD/python (compare.sh passes the one next to its --bin).
"""
import json
import sys
import time

from loader_run import is_shorthand, parse_arguments, percentile


def main():
    args = parse_arguments(__doc__)

    start = time.perf_counter()
    try:
        import torch
        import forkfeed
    except ImportError as e:
        sys.exit(f"forkfeed_python.py: {e}; build forkfeed with its Python package (python3-dev, "
                 f"python3-pybind11, python3-torch) and set PYTHONPATH=BUILD/python")

    # A pipeline makes its own size (its last crop) and its dtype (float32 with Normalize()).
    size = dict(size=args.size) if is_shorthand(args.transform) else {}
    loader = forkfeed.Loader(args.data, batch_size=args.batch, workers=args.workers, transform=args.transform,
                             dtype=args.dtype, seed=args.seed, on_error="skip", **size)
    startup_s = time.perf_counter() - start

    waits_ms, images, batches, epochs, checksum = [], 0, 0, 0, 0
    stopped = False
    first = None
    shape = dtype = None
    while epochs < args.epochs and not stopped:
        it = iter(loader)  # a new pass: the next epoch once one is over
        while True:
            asked = time.perf_counter()
            if first is None:
                first = asked
            try:
                pixels, labels = next(it)
            except StopIteration:
                epochs += 1
                break
            waits_ms.append((time.perf_counter() - asked) * 1000.0)
            checksum += int(pixels.view(-1)[:: 4096 // pixels.element_size()].sum())
            images += len(labels)
            batches += 1
            shape, dtype = list(pixels.shape), str(pixels.dtype).replace("torch.", "")
            if batches == args.stop_after_batches:
                stopped = True
                break
    wall_s = time.perf_counter() - first if first is not None else 0.0
    stats = loader.stats()
    classes = len(loader.classes)
    loader.close()

    print(json.dumps({
        "images": images, "batches": batches, "epochs": epochs, "stopped": stopped,
        "startup_s": startup_s, "wall_s": wall_s,
        "images_per_s": images / wall_s if wall_s > 0 else 0.0,
        "wait_p50_ms": percentile(waits_ms, 50), "wait_p99_ms": percentile(waits_ms, 99),
        "classes": classes, "skipped": stats["skipped_samples"],
        "workers": args.workers, "batch_size": args.batch, "size": args.size,
        "transform": args.transform, "dtype": args.dtype, "seed": args.seed,
        "batch_shape": shape, "batch_dtype": dtype, "start_method": stats["start_method"],
        "arena_bytes": stats["arena_bytes"], "slots": stats["slots"],
        "checksum": checksum, "torch_version": torch.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()
