#!/usr/bin/python3
"""Self-supervised training with two views of each image (SimCLR), over WebDataset shards.

The fields "view1" and "view2" both read the sample's image: forkfeed reads and decodes
it once, and augments it twice with draws of each view's own, so the two views of a
sample differ while a rerun (or a resume) draws them again exactly.

    forkfeed-mkdata --out /tmp/shards --images 2000 --format wds
    examples/train_simclr.py --shards '/tmp/shards/shard-{000000..000001}.tar'
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import forkfeed
from forkfeed.transforms import (ColorJitter, Normalize, RandomGrayscale, RandomHorizontalFlip,
                                 RandomResizedCrop)


def nt_xent(a, b, temperature=0.5):
    """SimCLR's loss: each view's positive is the other view of its image, the other 2B - 2
    views of the batch its negatives."""
    z = F.normalize(torch.cat([a, b]), dim=-1)
    similarity = z @ z.T / temperature
    similarity.fill_diagonal_(float("-inf"))
    n = len(a)
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(similarity, target)


def encoder(dim):
    return nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(32, 64, 3, stride=2, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 128), nn.ReLU(),
                         nn.Linear(128, dim))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", required=True, help="tar shards of .jpg/.png samples")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = encoder(64)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # One pipeline for both views: each draws its own crop, flip and colours.
    augment = [RandomResizedCrop(args.size), RandomHorizontalFlip(), ColorJitter(0.4, 0.4, 0.4, 0.1),
               RandomGrayscale(p=0.2), Normalize()]
    loader = forkfeed.Loader(shards=args.shards, fields={"view1": "jpg;png", "view2": "jpg;png"},
                             transform=augment,
                             batch_size=args.batch_size, workers=args.workers, drop_last=True)
    step = 0
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        samples, total = 0, 0.0
        for batch in loader:
            loss = nt_xent(model(batch["view1"]), model(batch["view2"]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            samples += len(batch["view1"])
            total += loss.item() * len(batch["view1"])
            step += 1
            if step == args.steps:
                break
        print(f"epoch {epoch}: {samples} images, mean loss {total / max(samples, 1):.4f}", flush=True)
        if step == args.steps:
            break
    loader.close()


if __name__ == "__main__":
    main()
