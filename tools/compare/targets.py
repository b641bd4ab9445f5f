#!/usr/bin/python3
"""What a sample's targets cost — a segmentation mask, or detection boxes with their labels —
measured side by side on WebDataset shards of photographs (.jpg, .seg.png: a palette PNG of
class ids, .json: the boxes of its classes' regions and their labels), from Python, 2 workers:

  image         forkfeed.Loader(fields={"image": "jpg"}), the recipe on the image alone;
  image+target  --target mask: fields "seg": "seg.png:mask(fill=255)", the mask decoded and
                moved by the image's draws; --target boxes: "boxes": "json:boxes(key=boxes,
                format=xywh)" and "labels": "json:per_box(key=labels)", the boxes moved by
                the image's draws and sanitised, their labels with them;
  dataloader    the PyTorch DataLoader over the same shards (an IterableDataset reading them
                with tarfile, split by shard between its workers), PIL decoding, and the
                recipe done as torchvision's references do it: each random op drawn once and
                applied to the image (bilinear) and the mask (nearest) with
                torchvision.transforms.functional, or to the boxes with the references' box
                arithmetic (crop: shift and clamp; resize: scale; flip: mirror; then boxes
                under a pixel across dropped with their labels).

The recipe (--recipe): "reference", RandomResizedCrop(224, scale=(0.25, 1.0)),
RandomHorizontalFlip(), Normalize() (float32 images, uint8 masks); "rotation" adds
RandomRotation(10) before Normalize (mask fill 255; boxes: the envelope of the turned
corners); "segmentation" (masks only) is torchvision's segmentation reference: the shorter
side resized to a size drawn in [260, 1040), a flip, a 480 crop padded where the image is
smaller (image fill 0, mask fill 255), Normalize; "ssd" (boxes only) is the detection
reference's SSD augmentation (RandomPhotometricDistort, RandomZoomOut with the mean as fill,
RandomIoUCrop, a flip) and SSD300's Resize((300, 300)) — its image row without RandomIoUCrop,
which needs the boxes.

Each row runs in a process of its own, in rounds that alternate the rows (--rounds, median
reported), timed from the first batch asked for to the last, touching every page. Prints
a table and the ratios the masks and boxes issue sets: image+target / image >= 0.87
(targets add at most 15%), image+target / dataloader >= 3.

--photos DIR writes the shards first: --images JPEGs cut from the photographs in DIR
(random crops of 40-100% of a side, rescaled to a shorter side of 256-512 pixels, JPEG
quality 90), each with a mask of 21 classes (the VOC count): the photo's luminance, blurred
(radius 6), in 7 bands times 3 vertical thirds — regions with smooth edges, as annotated
masks have, about 7.5 KB a palette PNG (VOC's masks: 2-5 KB) — and the boxes of its
classes (each class's pixels' extent, COCO's x, y, w, h; about 15 an image). scikit-image's
sample photographs serve (Debian's python3-skimage:
/usr/lib/python3/dist-packages/skimage/data). Run with /usr/bin/python3 and
PYTHONPATH=BUILD/python.
"""
import argparse
import io
import json
import pathlib
import random
import sys

import photo_shards
import time

ROWS = ("image", "image+target", "dataloader")
TARGET_FIELDS = {
    "mask": {"seg": "seg.png:mask(fill=255)"},
    "boxes": {"boxes": "json:boxes(key=boxes, format=xywh)", "labels": "json:per_box(key=labels)"},
}
RECIPES = {
    "reference": "RandomResizedCrop(224, scale=(0.25, 1.0)), RandomHorizontalFlip(), Normalize()",
    "rotation": "RandomResizedCrop(224, scale=(0.25, 1.0)), RandomHorizontalFlip(), RandomRotation(10), "
                "Normalize()",
    # torchvision's segmentation reference (base size 520, crop 480), its flip after the crop
    # as forkfeed orders them.
    "segmentation": "RandomResize(260, 1040), RandomCrop(480, pad_if_needed=True), RandomHorizontalFlip(), "
                    "Normalize()",
    # torchvision's detection reference's "ssd" augmentation and SSD300's resize, the photometric
    # distortion after the geometry as forkfeed orders them.
    "ssd": "RandomZoomOut(fill=(123, 117, 104)), RandomIoUCrop(), Resize((300, 300)), "
           "RandomPhotometricDistort(), RandomHorizontalFlip(), Normalize()",
}
RECIPE_TARGETS = {"segmentation": "mask", "ssd": "boxes"}


def image_recipe(recipe: str) -> str:
    """The recipe of the image row: RandomIoUCrop draws among the boxes, so that row goes without it."""
    return RECIPES[recipe].replace("RandomIoUCrop(), ", "")


def write_shards(photos: pathlib.Path, out: pathlib.Path, images: int, shard_size: int, seed: int) -> None:
    import numpy as np
    from PIL import Image, ImageFilter

    sources = photo_shards.photo_sources(photos, "targets.py")
    palette = np.random.default_rng(0).integers(0, 256, (256, 3), dtype=np.uint8).tobytes()
    rng = random.Random(seed)

    def sample(n: int) -> list:
        image = photo_shards.cut(sources[n % len(sources)], rng)
        grey = np.asarray(image.convert("L").filter(ImageFilter.GaussianBlur(6)), dtype=np.int32)
        thirds = np.arange(grey.shape[0])[:, None] * 3 // grey.shape[0]
        ids = (grey * 7 // 256 * 3 + thirds).astype(np.uint8)
        mask = Image.fromarray(ids, "P")
        mask.putpalette(palette)
        png = io.BytesIO()
        mask.save(png, "PNG")
        boxes, labels = [], []
        for k in np.unique(ids).tolist():
            ys, xs = np.nonzero(ids == k)
            boxes.append([int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1),
                          int(ys.max() - ys.min() + 1)])
            labels.append(k)
        record = json.dumps({"boxes": boxes, "labels": labels}).encode()
        return [("jpg", photo_shards.jpeg(image)), ("seg.png", png.getvalue()), ("json", record)]

    photo_shards.write_shards(out, images, shard_size, sample)
    print(f"wrote {images} samples from {len(sources)} photographs into {out}", file=sys.stderr)


def run_forkfeed(args, row: str) -> dict:
    import forkfeed

    fields = {"image": "jpg", **(TARGET_FIELDS[args.target] if row == "image+target" else {})}
    recipe = RECIPES[args.recipe] if row == "image+target" else image_recipe(args.recipe)
    loader = forkfeed.Loader(shards=args.shards, fields=fields, batch_size=args.batch, workers=args.workers,
                             transform=recipe, seed=args.seed)
    images, checksum = 0, 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            checksum += sum(touch_field(batch[name]) for name in fields)
            images += len(batch["image"])
    seconds = time.perf_counter() - start
    loader.close()
    return {"images_per_s": images / seconds, "checksum": checksum}


def touch_field(value) -> int:
    """A dense field's pages, or a ragged field's tensors."""
    return sum(map(photo_shards.touch, value)) if isinstance(value, list) else photo_shards.touch(value)


def paired_boxes(boxes, labels, top: int, left: int, h: int, w: int, size: int, flip: bool, angle: float):
    """The references' box arithmetic for a resized crop, a flip and a turn about the centre."""
    import math

    import torch

    boxes = boxes - torch.tensor([left, top, left, top], dtype=torch.float32)
    boxes[:, 0::2] = boxes[:, 0::2].clamp(0, w)
    boxes[:, 1::2] = boxes[:, 1::2].clamp(0, h)
    boxes = boxes * torch.tensor([size / w, size / h, size / w, size / h])
    if flip:
        boxes[:, [0, 2]] = size - boxes[:, [2, 0]]
    if angle:
        a = math.radians(-angle)
        m = torch.tensor([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float32)
        c = torch.tensor([size / 2, size / 2])
        corners = boxes[:, [[0, 1], [2, 1], [2, 3], [0, 3]]] - c
        turned = corners @ m.T + c
        boxes = torch.cat([turned.amin(1), turned.amax(1)], 1).clamp(0, size)
    keep = ((boxes[:, 2] - boxes[:, 0]) >= 1) & ((boxes[:, 3] - boxes[:, 1]) >= 1)
    return boxes[keep], labels[keep]


def run_dataloader(args) -> dict:
    import numpy as np
    import torch
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    from PIL import Image
    from torchvision.ops import box_iou

    normalize = T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])

    def segmentation(image, mask):
        """torchvision's segmentation reference: RandomResize, the flip, RandomCrop padded as
        v2.RandomCrop(pad_if_needed=True) pads (both sides by what the image lacks)."""
        size = int(torch.randint(260, 1040, ()))
        image, mask = F.resize(image, size), F.resize(mask, size, interpolation=T.InterpolationMode.NEAREST)
        if bool(torch.rand(1) < 0.5):
            image, mask = F.hflip(image), F.hflip(mask)
        lack_w, lack_h = max(480 - image.width, 0), max(480 - image.height, 0)
        if lack_w or lack_h:
            image = F.pad(image, [lack_w, lack_h], fill=0)
            mask = F.pad(mask, [lack_w, lack_h], fill=255)
        top, left, h, w = T.RandomCrop.get_params(image, (480, 480))
        image, mask = F.crop(image, top, left, h, w), F.crop(mask, top, left, h, w)
        return normalize(F.to_tensor(image)), torch.as_tensor(np.asarray(mask), dtype=torch.uint8)

    def photometric_distort(image):
        """v2.RandomPhotometricDistort's defaults on a PIL image."""
        factors = [float(torch.empty(1).uniform_(lo, hi)) if torch.rand(1) < 0.5 else None
                   for lo, hi in ((0.875, 1.125), (0.5, 1.5), (0.5, 1.5), (-0.05, 0.05))]
        contrast_before = bool(torch.rand(()) < 0.5)
        order = torch.randperm(3).tolist() if torch.rand(1) < 0.5 else None
        if factors[0] is not None:
            image = F.adjust_brightness(image, factors[0])
        if factors[1] is not None and contrast_before:
            image = F.adjust_contrast(image, factors[1])
        if factors[2] is not None:
            image = F.adjust_saturation(image, factors[2])
        if factors[3] is not None:
            image = F.adjust_hue(image, factors[3])
        if factors[1] is not None and not contrast_before:
            image = F.adjust_contrast(image, factors[1])
        if order is not None:
            channels = image.split()
            image = Image.merge("RGB", [channels[c] for c in order])
        return image

    def iou_crop(image, boxes, labels):
        """v2.RandomIoUCrop's defaults: the crop, and the boxes whose centre it holds."""
        width, height = image.size
        while True:
            least = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)[int(torch.randint(0, 7, (1,)))]
            if least >= 1.0:
                return image, boxes, labels
            for _ in range(40):
                r = 0.3 + 0.7 * torch.rand(2)
                w, h = int(width * r[0]), int(height * r[1])
                if h == 0 or not 0.5 <= w / h <= 2.0:
                    continue
                r = torch.rand(2)
                left, top = int((width - w) * r[0]), int((height - h) * r[1])
                if w == 0 or h == 0:
                    continue
                cx, cy = 0.5 * (boxes[:, 0] + boxes[:, 2]), 0.5 * (boxes[:, 1] + boxes[:, 3])
                inside = (left < cx) & (cx < left + w) & (top < cy) & (cy < top + h)
                if not inside.any():
                    continue
                crop = torch.tensor([[left, top, left + w, top + h]], dtype=torch.float32)
                if box_iou(boxes[inside], crop).max() < least:
                    continue
                boxes = boxes[inside] - torch.tensor([left, top, left, top], dtype=torch.float32)
                boxes[:, 0::2] = boxes[:, 0::2].clamp(0, w)
                boxes[:, 1::2] = boxes[:, 1::2].clamp(0, h)
                return F.crop(image, top, left, h, w), boxes, labels[inside]

    def ssd(image, target):
        """The detection reference's SSD augmentation, then SSD300's resize."""
        boxes, labels = target
        image = photometric_distort(image)
        if torch.rand(1) < 0.5:  # RandomZoomOut(fill=mean)
            width, height = image.size
            r = 1.0 + torch.rand(1) * 3.0
            canvas_width, canvas_height = int(width * r), int(height * r)
            r = torch.rand(2)
            left, top = int((canvas_width - width) * r[0]), int((canvas_height - height) * r[1])
            image = F.pad(image, [left, top, canvas_width - left - width, canvas_height - top - height],
                          fill=(123, 117, 104))
            boxes = boxes + torch.tensor([left, top, left, top], dtype=torch.float32)
        image, boxes, labels = iou_crop(image, boxes, labels)
        width, height = image.size
        image = F.resize(image, [300, 300])
        boxes = boxes * torch.tensor([300 / width, 300 / height, 300 / width, 300 / height])
        if torch.rand(1) < 0.5:
            image = F.hflip(image)
            boxes[:, [0, 2]] = 300 - boxes[:, [2, 0]]
        keep = ((boxes[:, 2] - boxes[:, 0]) >= 1) & ((boxes[:, 3] - boxes[:, 1]) >= 1)
        return normalize(F.to_tensor(image)), (boxes[keep], labels[keep])

    def paired(image, target):
        """The recipe, each op drawn once for the image and its target, as the references do."""
        if args.recipe == "segmentation":
            return segmentation(image, target)
        if args.recipe == "ssd":
            return ssd(image, target)
        top, left, h, w = T.RandomResizedCrop.get_params(image, scale=(0.25, 1.0), ratio=(3 / 4, 4 / 3))
        flip = bool(torch.rand(1) < 0.5)
        angle = float(torch.empty(1).uniform_(-10.0, 10.0)) if args.recipe == "rotation" else 0.0
        image = F.resized_crop(image, top, left, h, w, [224, 224])
        image = F.hflip(image) if flip else image
        image = F.rotate(image, angle) if angle else image
        if args.target == "boxes":
            return normalize(F.to_tensor(image)), paired_boxes(*target, top, left, h, w, 224, flip, angle)
        mask = F.resized_crop(target, top, left, h, w, [224, 224], interpolation=T.InterpolationMode.NEAREST)
        mask = F.hflip(mask) if flip else mask
        mask = F.rotate(mask, angle, fill=255) if angle else mask
        return normalize(F.to_tensor(image)), torch.as_tensor(np.asarray(mask), dtype=torch.uint8)

    def target_of(sample):
        if args.target == "mask":
            return Image.open(io.BytesIO(sample["seg.png"]))  # "P": its indices
        record = json.loads(sample["json"])
        boxes = torch.tensor(record["boxes"], dtype=torch.float32).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        return boxes, torch.tensor(record["labels"], dtype=torch.int64)

    def collate(samples):
        """Images stacked; masks stacked, or boxes and labels as lists, as forkfeed gives them."""
        images, targets = zip(*samples)
        if args.target == "mask":
            return torch.stack(images), torch.stack(targets)
        return torch.stack(images), [b for b, _ in targets] + [l for _, l in targets]

    class Shards(torch.utils.data.IterableDataset):
        def __iter__(self):
            for sample in photo_shards.shard_samples(args.shards):
                image = Image.open(io.BytesIO(sample["jpg"])).convert("RGB")
                yield paired(image, target_of(sample))

    loader = torch.utils.data.DataLoader(Shards(), batch_size=args.batch, num_workers=args.workers,
                                         persistent_workers=True, collate_fn=collate)
    images, checksum = 0, 0
    start = time.perf_counter()
    for _ in range(args.epochs):
        for pixels, targets in loader:
            checksum += photo_shards.touch(pixels) + touch_field(targets)
            images += len(pixels)
    return {"images_per_s": images / (time.perf_counter() - start), "checksum": checksum}


def measure(args) -> None:
    results = photo_shards.alternate(ROWS, args.rounds, __file__)
    rates = {row: [r["images_per_s"] for r in rs] for row, rs in results.items()}
    median = {row: photo_shards.median(r) for row, r in rates.items()}
    print(f"target {args.target}, recipe {args.recipe}: {RECIPES[args.recipe]}")
    if image_recipe(args.recipe) != RECIPES[args.recipe]:
        print(f"the image row's: {image_recipe(args.recipe)}")
    print(f"{'row':12} {'images/s (median of ' + str(args.rounds) + ')':28} rounds")
    for row in ROWS:
        print(f"{row:12} {median[row]:28.0f} " + " ".join(f"{r:.0f}" for r in rates[row]))
    print(f"image+target / image:      {median['image+target'] / median['image']:.3f}   (goal >= 0.87)")
    print(f"image+target / dataloader: {median['image+target'] / median['dataloader']:.2f}    (goal >= 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    photo_shards.add_arguments(parser)
    parser.add_argument("--target", choices=sorted(TARGET_FIELDS), default="mask")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="reference")
    args = parser.parse_args()
    if RECIPE_TARGETS.get(args.recipe, args.target) != args.target:
        parser.error(f"--recipe {args.recipe} takes --target {RECIPE_TARGETS[args.recipe]}")
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
