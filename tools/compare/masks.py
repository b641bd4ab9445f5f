#!/usr/bin/python3
"""What a segmentation mask costs, measured side by side on WebDataset shards of
photographs with masks (.jpg + .seg.png, a palette PNG of class ids), from Python, 2 workers:

  image        forkfeed.Loader(fields={"image": "jpg"}), the recipe on the image alone;
  image+mask   fields={"image": "jpg", "seg": "seg.png:mask(fill=255)"}: the mask decoded
               and moved by the image's draws;
  dataloader   the PyTorch DataLoader over the same shards (an IterableDataset reading them
               with tarfile, split by shard between its workers), PIL decoding both, and the
               recipe done as torchvision's segmentation reference does it: each random op
               drawn once and applied to the image (bilinear) and the mask (nearest) with
               torchvision.transforms.functional.

The recipe (--recipe): "reference", torchvision's segmentation reference's shape,
RandomResizedCrop(224, scale=(0.25, 1.0)), RandomHorizontalFlip(), Normalize() (float32
images, uint8 masks); "rotation" adds RandomRotation(10) before Normalize (mask fill 255).

Each row runs in a process of its own, in rounds that alternate the rows (--rounds, median
reported), timed from the first batch asked for to the last, touching every page. Prints
a table and the ratios the masks issue sets: image+mask / image >= 0.87 (masks add at most
15%), image+mask / dataloader >= 3.

--photos DIR writes the shards first: --images JPEGs cut from the photographs in DIR
(random crops of 40-100% of a side, rescaled to a shorter side of 256-512 pixels, JPEG
quality 90), each with a mask of 21 classes (the VOC count): the photo's luminance, blurred
(radius 6), in 7 bands times 3 vertical thirds — regions with smooth edges, as annotated
masks have, about 7.5 KB a palette PNG (VOC's masks: 2-5 KB). scikit-image's sample photographs
serve (Debian's python3-skimage: /usr/lib/python3/dist-packages/skimage/data). Run with
/usr/bin/python3 and PYTHONPATH=BUILD/python.
"""
import argparse
import io
import json
import pathlib
import random
import sys

import photo_shards
import time

ROWS = ("image", "image+mask", "dataloader")
FIELDS = {"image": {"image": "jpg"}, "image+mask": {"image": "jpg", "seg": "seg.png:mask(fill=255)"}}
RECIPES = {
    "reference": "RandomResizedCrop(224, scale=(0.25, 1.0)), RandomHorizontalFlip(), Normalize()",
    "rotation": "RandomResizedCrop(224, scale=(0.25, 1.0)), RandomHorizontalFlip(), RandomRotation(10), Normalize()",
}


def write_shards(photos: pathlib.Path, out: pathlib.Path, images: int, shard_size: int, seed: int) -> None:
    import numpy as np
    from PIL import Image, ImageFilter

    sources = photo_shards.photo_sources(photos, "masks.py")
    palette = np.random.default_rng(0).integers(0, 256, (256, 3), dtype=np.uint8).tobytes()
    rng = random.Random(seed)

    def sample(n: int) -> list:
        image = photo_shards.cut(sources[n % len(sources)], rng)
        grey = np.asarray(image.convert("L").filter(ImageFilter.GaussianBlur(6)), dtype=np.int32)
        thirds = np.arange(grey.shape[0])[:, None] * 3 // grey.shape[0]
        mask = Image.fromarray((grey * 7 // 256 * 3 + thirds).astype(np.uint8), "P")
        mask.putpalette(palette)
        png = io.BytesIO()
        mask.save(png, "PNG")
        return [("jpg", photo_shards.jpeg(image)), ("seg.png", png.getvalue())]

    photo_shards.write_shards(out, images, shard_size, sample)
    print(f"wrote {images} samples from {len(sources)} photographs into {out}", file=sys.stderr)


def run_forkfeed(args, row: str) -> dict:
    import forkfeed

    loader = forkfeed.Loader(shards=args.shards, fields=FIELDS[row], batch_size=args.batch, workers=args.workers,
                             transform=RECIPES[args.recipe], seed=args.seed)
    images, checksum = 0, 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            checksum += sum(photo_shards.touch(batch[name]) for name in FIELDS[row])
            images += len(batch["image"])
    seconds = time.perf_counter() - start
    loader.close()
    return {"images_per_s": images / seconds, "checksum": checksum}


def run_dataloader(args) -> dict:
    import numpy as np
    import torch
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    from PIL import Image

    normalize = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])

    def paired(image, mask):
        """The recipe, each op drawn once for both, as the segmentation reference's own."""
        top, left, h, w = T.RandomResizedCrop.get_params(image, scale=(0.25, 1.0), ratio=(3 / 4, 4 / 3))
        image = F.resized_crop(image, top, left, h, w, [224, 224])
        mask = F.resized_crop(mask, top, left, h, w, [224, 224], interpolation=T.InterpolationMode.NEAREST)
        if torch.rand(1) < 0.5:
            image, mask = F.hflip(image), F.hflip(mask)
        if args.recipe == "rotation":
            angle = float(torch.empty(1).uniform_(-10.0, 10.0))
            image = F.rotate(image, angle)
            mask = F.rotate(mask, angle, fill=255)
        return normalize(F.to_tensor(image)), torch.as_tensor(np.asarray(mask), dtype=torch.uint8)

    class Shards(torch.utils.data.IterableDataset):
        def __iter__(self):
            for sample in photo_shards.shard_samples(args.shards):
                image = Image.open(io.BytesIO(sample["jpg"])).convert("RGB")
                mask = Image.open(io.BytesIO(sample["seg.png"]))  # "P": its indices
                yield paired(image, mask)

    loader = torch.utils.data.DataLoader(Shards(), batch_size=args.batch, num_workers=args.workers,
                                         persistent_workers=True)
    images, checksum = 0, 0
    start = time.perf_counter()
    for _ in range(args.epochs):
        for pixels, masks in loader:
            checksum += photo_shards.touch(pixels) + photo_shards.touch(masks)
            images += len(pixels)
    return {"images_per_s": images / (time.perf_counter() - start), "checksum": checksum}


def measure(args) -> None:
    results = photo_shards.alternate(ROWS, args.rounds, __file__)
    rates = {row: [r["images_per_s"] for r in rs] for row, rs in results.items()}
    median = {row: photo_shards.median(r) for row, r in rates.items()}
    print(f"recipe {args.recipe}: {RECIPES[args.recipe]}")
    print(f"{'row':12} {'images/s (median of ' + str(args.rounds) + ')':28} rounds")
    for row in ROWS:
        print(f"{row:12} {median[row]:28.0f} " + " ".join(f"{r:.0f}" for r in rates[row]))
    print(f"image+mask / image:      {median['image+mask'] / median['image']:.3f}   (goal >= 0.87)")
    print(f"image+mask / dataloader: {median['image+mask'] / median['dataloader']:.2f}    (goal >= 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    photo_shards.add_arguments(parser)
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="reference")
    args = parser.parse_args()
    if args.run is None:
        if args.photos:
            write_shards(pathlib.Path(args.photos), pathlib.Path(args.shards), args.images, args.shard_size,
                         args.seed)
        measure(args)
    elif args.run == "dataloader":
        print(json.dumps(run_dataloader(args)))
    else:
        print(json.dumps(run_forkfeed(args, args.run)))


if __name__ == "__main__":
    main()
