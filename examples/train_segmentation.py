#!/usr/bin/python3
"""Semantic segmentation over WebDataset shards: each sample an image and its mask of class ids.

The field "seg" is the sample's seg.png, read as class ids (a palette PNG's indices, never
its colours) and moved by the image's own draws — torchvision's segmentation reference's
recipe (references/segmentation): a random scale of the shorter side (RandomResize), a crop
padded where the scaled image is smaller (the mask's padding comes in as 255, the class the
loss ignores), a flip — without a transform that takes (image, target) pairs.

    forkfeed-mkdata --out /tmp/seg --images 2000 --format wds --fields jpg,seg.png
    examples/train_segmentation.py --shards '/tmp/seg/shard-{000000..000001}.tar'
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import forkfeed
from forkfeed.transforms import ColorJitter, Normalize, RandomCrop, RandomHorizontalFlip, RandomResize

IGNORE = 255
CLASSES = 256  # forkfeed-mkdata's masks use ids up to 255


def segmenter(classes):
    """A small fully convolutional net: [B, 3, H, W] -> [B, classes, H, W]."""
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(32, 32, 3, padding=2, dilation=2),
                         nn.ReLU(), nn.Conv2d(32, classes, 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", required=True, help="tar shards of .jpg/.png samples with .seg.png masks")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = segmenter(CLASSES)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # The reference's base size is 520 for a 480 crop: a scale drawn in [base / 2, 2 base).
    # Scale, crop and flip move the mask too; the colour jitter and Normalize do not.
    base = args.size * 520 // 480
    augment = [RandomResize(base // 2, 2 * base), RandomCrop(args.size, pad_if_needed=True),
               RandomHorizontalFlip(),
               ColorJitter(0.3, 0.3, 0.3), Normalize()]
    loader = forkfeed.Loader(shards=args.shards, fields={"image": "jpg;png",
                                                         "seg": f"seg.png:mask(fill={IGNORE})"},
                             transform=augment, batch_size=args.batch_size, workers=args.workers,
                             drop_last=True)
    step = 0
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        samples, total, pixels, correct = 0, 0.0, 0, 0
        for batch in loader:
            images, target = batch["image"], batch["seg"].long()  # [B, 3, H, W] float32, [B, H, W]
            logits = model(images)
            loss = F.cross_entropy(logits, target, ignore_index=IGNORE)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            counted = target != IGNORE
            pixels += int(counted.sum())
            correct += int((logits.argmax(1) == target)[counted].sum())
            samples += len(images)
            total += loss.item() * len(images)
            step += 1
            if step == args.steps:
                break
        print(f"epoch {epoch}: {samples} images, mean loss {total / max(samples, 1):.4f}, "
              f"pixel accuracy {correct / max(pixels, 1):.3f}", flush=True)
        if step == args.steps:
            break
    loader.close()


if __name__ == "__main__":
    main()
