#!/usr/bin/python3
"""What samples of several fields cost, measured side by side on WebDataset shards of
photographs with captions (.jpg + .txt + .cls), from Python, 2 workers by default:

  tuple        forkfeed.Loader(shards), (images, labels) per batch: the reference;
  dict         the same samples with fields={"image": "jpg", "label": "cls"}: a dict per batch;
  caption      fields={"image": "jpg", "caption": "txt", "label": "cls"};
  two views    fields={"image": "jpg", "view2": "jpg", "label": "cls"}, against two tuple
               loaders' time (each view is a sample's decode and pipeline, the file read once);
  webdataset   WebDataset's way in the PyTorch DataLoader: an IterableDataset reading the
               shards with tarfile, PIL decoding, torchvision's same transform, captions and
               labels with each image, split between the DataLoader's workers by shard;
  bench tuple, bench caption
               forkfeed-bench (--bench, or $FORKFEED_BIN_DIR's) on the same shards, without
               and with --fields "image=jpg, caption=txt, label=cls": the C++ loop.

Each row runs in a process of its own, in rounds that alternate the rows (--rounds, median
reported), timed from the first batch asked for to the last received, reading every
image's pages as a trainer would. Prints a table and the ratios the multi-field issue
sets: dict / tuple >= 0.95, caption / tuple >= 0.95 (from Python and from forkfeed-bench),
two views / (tuple / 2) >= 0.9, caption / webdataset >= 4; and the index's bytes per sample
of each.

--photos DIR writes the shards first: --images JPEGs cut from the photographs in DIR
(random crops of 40-100% of a side, rescaled to a shorter side of 256-512 pixels, JPEG
quality 90, as ImageNet's photos are), each with a caption of 5-30 words and a label,
--shard-size samples a shard. scikit-image's sample photographs serve (Debian's
python3-skimage: /usr/lib/python3/dist-packages/skimage/data). Run with /usr/bin/python3
and PYTHONPATH=BUILD/python.
"""
import argparse
import io
import json
import os
import pathlib
import random
import subprocess
import sys
import tarfile
import time

import photo_shards

FIELDS = {
    "tuple": None,
    "dict": {"image": "jpg", "label": "cls"},
    "caption": {"image": "jpg", "caption": "txt", "label": "cls"},
    "two views": {"image": "jpg", "view2": "jpg", "label": "cls"},
}
WORDS = ("a photo of the cat dog sky street tree red blue small large old new city river field "
         "café 東京 zürich naïve").split()


def write_shards(photos: pathlib.Path, out: pathlib.Path, images: int, shard_size: int, seed: int) -> None:
    sources = photo_shards.photo_sources(photos, "fields.py")
    rng = random.Random(seed)

    def sample(n: int) -> list:
        image = photo_shards.jpeg(photo_shards.cut(sources[n % len(sources)], rng))
        caption = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(5, 31)))
        return [("jpg", image), ("txt", caption.encode()), ("cls", str(n % 10).encode())]

    photo_shards.write_shards(out, images, shard_size, sample)
    print(f"wrote {images} samples from {len(sources)} photographs into {out}", file=sys.stderr)


def run_forkfeed(args, row: str) -> dict:
    import forkfeed

    fields = FIELDS[row]
    loader = forkfeed.Loader(shards=args.shards, fields=fields, batch_size=args.batch, workers=args.workers,
                             transform=TRANSFORM, seed=args.seed)
    images, checksum = 0, 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            if fields is None:
                pixels, labels = batch
                checksum += photo_shards.touch(pixels)
            else:
                checksum += sum(photo_shards.touch(batch[name]) for name in fields if fields[name] == "jpg")
                labels = batch["label"]
                if "caption" in batch:
                    checksum += sum(len(c) for c in batch["caption"])
            images += len(labels)
    seconds = time.perf_counter() - start
    stats = loader.stats()
    loader.close()
    return {"images_per_s": images / seconds, "index_bytes_per_sample": stats["index_bytes"] / args.samples,
            "checksum": checksum}


BENCH_FIELDS = {"bench tuple": None, "bench caption": "image=jpg, caption=txt, label=cls"}
TRANSFORM = "RandomResizedCrop(224), RandomHorizontalFlip()"


def run_bench(args, row: str) -> dict:
    command = [args.bench, "--shards", args.shards, "--transform", TRANSFORM, "--workers", str(args.workers),
               "--batch", str(args.batch), "--epochs", str(args.epochs), "--seed", str(args.seed), "--json"]
    if BENCH_FIELDS[row]:
        command += ["--fields", BENCH_FIELDS[row]]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    report = json.loads(out.stdout.splitlines()[-1])
    return {"images_per_s": report["images_per_s"],
            "index_bytes_per_sample": report["index_bytes"] / report["dataset_size"]}


def run_webdataset(args) -> dict:
    import torch
    import torchvision.transforms as T
    from PIL import Image

    transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()])

    class Shards(torch.utils.data.IterableDataset):
        def __iter__(self):
            for sample in photo_shards.shard_samples(args.shards):
                image = Image.open(io.BytesIO(sample["jpg"])).convert("RGB")
                yield transform(image), sample["txt"].decode("utf-8"), int(sample["cls"])

    loader = torch.utils.data.DataLoader(Shards(), batch_size=args.batch, num_workers=args.workers,
                                         persistent_workers=True)
    images, checksum = 0, 0
    start = time.perf_counter()
    for _ in range(args.epochs):
        for pixels, captions, labels in loader:
            checksum += photo_shards.touch(pixels) + sum(len(c) for c in captions)
            images += len(labels)
    return {"images_per_s": images / (time.perf_counter() - start), "checksum": checksum}


def measure(args) -> None:
    rows = [*FIELDS, "webdataset", *(BENCH_FIELDS if args.bench else ())]
    results = photo_shards.alternate(rows, args.rounds, __file__)
    rates = {row: [r["images_per_s"] for r in rs] for row, rs in results.items()}
    index_bytes = {row: rs[-1].get("index_bytes_per_sample") for row, rs in results.items()}
    median = {row: photo_shards.median(r) for row, r in rates.items()}
    print(f"{'row':12} {'images/s (median of ' + str(args.rounds) + ')':28} rounds")
    for row in rows:
        print(f"{row:12} {median[row]:28.0f} " + " ".join(f"{r:.0f}" for r in rates[row]))
    tuple_ = median["tuple"]
    print(f"dict / tuple:                  {median['dict'] / tuple_:.3f}   (goal >= 0.95)")
    print(f"caption / tuple:               {median['caption'] / tuple_:.3f}   (goal >= 0.95)")
    print(f"two views / two tuple loaders: {median['two views'] / (tuple_ / 2):.3f}   (goal >= 0.9)")
    print(f"caption / webdataset:          {median['caption'] / median['webdataset']:.2f}    (goal >= 4)")
    if args.bench:
        print(f"forkfeed-bench caption / tuple: {median['bench caption'] / median['bench tuple']:.3f}   "
              "(goal >= 0.95)")
    print("index bytes per sample: " + ", ".join(f"{row} {b:.1f}" for row, b in index_bytes.items() if b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    photo_shards.add_arguments(parser)
    bin_dir = os.environ.get("FORKFEED_BIN_DIR")
    parser.add_argument("--bench", default=os.path.join(bin_dir, "forkfeed-bench") if bin_dir else None,
                        help="forkfeed-bench, for its rows (default: $FORKFEED_BIN_DIR/forkfeed-bench; "
                             "without either, no bench rows)")
    args = parser.parse_args()
    if args.run is None:
        if args.photos:
            write_shards(pathlib.Path(args.photos), pathlib.Path(args.shards), args.images, args.shard_size,
                         args.seed)
        measure(args)
        return
    if args.run == "webdataset":
        print(json.dumps(run_webdataset(args)))
    elif args.run in BENCH_FIELDS:
        print(json.dumps(run_bench(args, args.run)))
    else:
        args.samples = sum(1 for p in pathlib.Path(args.shards).glob("*.tar")
                           for m in tarfile.open(p) if m.name.endswith(".jpg"))
        print(json.dumps(run_forkfeed(args, args.run)))


if __name__ == "__main__":
    main()
