#!/usr/bin/python3
"""Object detection over WebDataset shards: each sample an image, its boxes and their labels.

The fields "boxes" and "labels" are read from the sample's boxes.json (COCO's x, y, w, h
under "boxes", class ids under "labels") and moved by the image's own draws — the detection
reference's SSD augmentation below (a zoom-out, an IoU crop drawn among the boxes, a flip),
as torchvision.transforms.v2 moves boxes; a box the crop leaves out or cuts to under a pixel
across is dropped with its label. No op resizes to one size, so each image comes at its own
size (max_size bounds them): Faster R-CNN takes a list of images, resizes and batches them
itself, and a list of {"boxes", "labels"} targets. The loop is torchvision's detection
reference's (references/detection) without a transform that takes (image, target) pairs.

    forkfeed-mkdata --out /tmp/det --images 2000 --format wds --fields jpg,boxes.json
    examples/train_detection.py --shards '/tmp/det/shard-{000000..000001}.tar'
"""

import argparse

import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import MultiScaleRoIAlign

import forkfeed
from forkfeed.transforms import ColorJitter, RandomHorizontalFlip, RandomIoUCrop, RandomZoomOut

CLASSES = 256  # forkfeed-mkdata's boxes.json labels are 0..255; Faster R-CNN's 0 is the background


def detector(size, classes):
    """A small Faster R-CNN: torchvision's FasterRCNN on a two-layer backbone, as its tutorial
    builds one for a backbone of your own, with few proposals so that a CPU trains it."""
    backbone = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU())
    backbone.out_channels = 64
    return FasterRCNN(backbone, min_size=size, max_size=size,
                      rpn_anchor_generator=AnchorGenerator(((8, 16, 32),), ((0.5, 1.0, 2.0),)),
                      rpn_pre_nms_top_n_train=200, rpn_post_nms_top_n_train=100, rpn_batch_size_per_image=64,
                      box_roi_pool=MultiScaleRoIAlign(["0"], output_size=3, sampling_ratio=2),
                      box_head=TwoMLPHead(64 * 3 * 3, 128), box_predictor=FastRCNNPredictor(128, classes + 1),
                      box_batch_size_per_image=64)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", required=True, help="tar shards of .jpg/.png samples with .boxes.json")
    parser.add_argument("--size", type=int, default=96, help="the side the model resizes images to")
    parser.add_argument("--max-size", type=int, default=1333,
                        help="the longest side an augmented image may have")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = detector(args.size, CLASSES)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # The zoom-out, the crop and the flip move the boxes too; the colour jitter does not.
    # float32 in [0, 1]: the model normalises its inputs itself.
    augment = [RandomZoomOut(fill=(123, 117, 104), side_range=(1.0, 2.0)), RandomIoUCrop(),
               RandomHorizontalFlip(),
               ColorJitter(0.2, 0.2, 0.2)]
    fields = {"image": "jpg;png", "boxes": "boxes.json:boxes(key=boxes, format=xywh)",
              "labels": "boxes.json:per_box(key=labels)"}
    loader = forkfeed.Loader(shards=args.shards, fields=fields, transform=augment, dtype="float32",
                             max_size=args.max_size, batch_size=args.batch_size, workers=args.workers,
                             drop_last=True)
    step = 0
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        samples, boxes, total = 0, 0, 0.0
        for batch in loader:
            images = batch["image"]  # a list of [3, H_i, W_i], each its own size
            targets = [{"boxes": b, "labels": l + 1} for b, l in zip(batch["boxes"], batch["labels"])]
            losses = model(images, targets)
            loss = sum(losses.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            samples += len(images)
            boxes += sum(len(t["boxes"]) for t in targets)
            total += loss.item() * len(images)
            step += 1
            if step == args.steps:
                break
        print(f"epoch {epoch}: {samples} images, {boxes} boxes, mean loss {total / max(samples, 1):.4f}",
              flush=True)
        if step == args.steps:
            break
    loader.close()


if __name__ == "__main__":
    main()
