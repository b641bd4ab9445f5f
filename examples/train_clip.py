#!/usr/bin/python3
"""Image-text contrastive training (CLIP, as open_clip trains it) over WebDataset shards
whose samples are an image and its caption (000123.jpg + 000123.txt, the LAION shape).

forkfeed's workers decode and augment the images; the captions come as a list of str,
which the trainer tokenises (here a byte-level tokenizer stands in for open_clip's BPE).

    forkfeed-mkdata --out /tmp/pairs --images 2000 --format wds --fields jpg,txt
    examples/train_clip.py --shards '/tmp/pairs/shard-{000000..000001}.tar'
"""

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import forkfeed
from forkfeed.transforms import Normalize, RandomResizedCrop


def tokenize(captions, context=48):
    """[B, context] token ids: each caption's UTF-8 bytes + 1, 0 padding."""
    tokens = torch.zeros(len(captions), context, dtype=torch.long)
    for row, caption in enumerate(captions):
        ids = list(caption.encode("utf-8"))[:context]
        tokens[row, :len(ids)] = torch.tensor(ids, dtype=torch.long) + 1
    return tokens


class TextEncoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.embed = nn.Embedding(257, dim, padding_idx=0)
        self.project = nn.Linear(dim, dim)

    def forward(self, tokens):
        mask = (tokens != 0).unsqueeze(-1).float()
        mean = (self.embed(tokens) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.project(mean)


def image_encoder(dim):
    return nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.ReLU(),
                         nn.Conv2d(32, 64, 3, stride=2, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, dim))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", required=True, help="tar shards of .jpg/.png + .txt samples")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    args = parser.parse_args()

    torch.manual_seed(0)
    images, texts = image_encoder(128), TextEncoder(128)
    scale = nn.Parameter(torch.tensor(2.659))  # log(1 / 0.07), CLIP's initial temperature
    optimizer = torch.optim.AdamW([*images.parameters(), *texts.parameters(), scale], lr=1e-3)

    loader = forkfeed.Loader(shards=args.shards, fields={"image": "jpg;png", "caption": "txt"},
                             transform=[RandomResizedCrop(args.size, scale=(0.9, 1.0)), Normalize()],
                             batch_size=args.batch_size, workers=args.workers, drop_last=True)
    step = 0
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        samples, total = 0, 0.0
        for batch in loader:
            image = F.normalize(images(batch["image"]), dim=-1)  # float32 [B, 3, H, W], in shared memory
            text = F.normalize(texts(tokenize(batch["caption"])), dim=-1)
            logits = scale.exp() * image @ text.T
            target = torch.arange(len(logits))
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            samples += len(target)
            total += loss.item() * len(target)
            step += 1
            if step == args.steps:
                break
        print(f"epoch {epoch}: {samples} pairs, mean loss {total / max(samples, 1):.4f}", flush=True)
        if step == args.steps:
            break
    loader.close()


if __name__ == "__main__":
    main()
