#!/usr/bin/python3
"""Trains torchvision's ResNet-18 on an ImageFolder tree (ImageNet's train/ or a folder
made by forkfeed-mkdata), reading it with forkfeed or with PyTorch's DataLoader.

The two loaders give the same batches to the same loop: float32 NCHW images normalised
with ImageNet's mean and std, after RandomResizedCrop(size) and a random horizontal flip,
and int64 labels. A checkpoint (model, optimizer, epoch and where the loader stands) is
written at the end of every epoch, after --steps steps and on Ctrl-C; --resume goes on
from it, mid-epoch included, with the batches an uninterrupted run would have trained on.

  examples/train_imagenet.py --data DIR                           # forkfeed, 224x224
  examples/train_imagenet.py --data DIR --size 64 --steps 20      # a quick run on a CPU
  examples/train_imagenet.py --data DIR --resume                  # go on from checkpoint.pt
  torchrun --nproc-per-node 2 examples/train_imagenet.py --data DIR   # one shard per rank

Under torchrun every rank reads its own shard (forkfeed takes the rank and world size
from $RANK and $WORLD_SIZE) and the model is wrapped in DistributedDataParallel; rank 0
writes the checkpoint. Run it with PYTHONPATH=build/python /usr/bin/python3 from a
forkfeed checkout, or with the Python that has forkfeed, torch and torchvision installed.
"""
import argparse
import itertools
import os
import time

import torch
import torch.distributed as dist
import torchvision

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def forkfeed_loader(args):
    import forkfeed

    return forkfeed.Loader(args.data, batch_size=args.batch_size, workers=args.workers,
                           transform="train", size=args.size, dtype="float32", mean=MEAN, std=STD,
                           seed=args.seed, drop_last=True)


class ResumableSampler(torch.utils.data.DistributedSampler):
    """DistributedSampler (an order that depends on seed and epoch only, one shard per
    rank) that can start part-way through an epoch, which the DataLoader cannot."""

    skip = 0  # samples of the epoch already trained on

    def __iter__(self):
        return itertools.islice(super().__iter__(), self.skip, None)

    def __len__(self):
        return super().__len__() - self.skip


def torch_loader(args):
    from torchvision import datasets, transforms

    dataset = datasets.ImageFolder(args.data, transforms.Compose([
        transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(), transforms.Normalize(MEAN, STD)]))
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    sampler = ResumableSampler(dataset, world_size, rank, shuffle=True, seed=args.seed, drop_last=True)
    return torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                                       num_workers=args.workers, drop_last=True)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="ImageFolder root: one subfolder of images per class")
    parser.add_argument("--loader", choices=["forkfeed", "torch"], default="forkfeed",
                        help="forkfeed.Loader, or torchvision's ImageFolder through a DataLoader (default forkfeed)")
    parser.add_argument("--epochs", type=int, default=90, help="train until this epoch (default 90)")
    parser.add_argument("--steps", type=int, default=0,
                        help="stop after this many steps of this run, with a checkpoint (default 0: no limit)")
    parser.add_argument("--size", type=int, default=224, help="crop height and width (default 224; 64 for a quick run)")
    parser.add_argument("--batch-size", type=int, default=32, help="images per step and rank (default 32)")
    parser.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1),
                        help="decode worker processes per rank (default: the CPUs, at most 8)")
    parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the model, the order and the crops")
    parser.add_argument("--checkpoint", default="checkpoint.pt", help="where checkpoints go (default checkpoint.pt)")
    parser.add_argument("--resume", action="store_true", help="go on from --checkpoint")
    return parser.parse_args()


def main():
    args = parse_args()
    # forkfeed first, before torch.distributed or CUDA start threads: its workers are
    # then forked, which is quicker than spawning them (forkfeed.fork_report() says why).
    loader = forkfeed_loader(args) if args.loader == "forkfeed" else None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # started by torchrun
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if loader is None:
        loader = torch_loader(args)
    rank = dist.get_rank() if dist.is_initialized() else 0
    log = print if rank == 0 else (lambda *_, **__: None)
    device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', 0)}" if torch.cuda.is_available() else "cpu")
    classes = loader.classes if args.loader == "forkfeed" else loader.dataset.classes
    batches_per_epoch = len(loader)

    torch.manual_seed(args.seed)
    model = torchvision.models.resnet18(num_classes=len(classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    trained = model
    if dist.is_initialized():
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)

    epoch, batch, step, loader_state = 0, 0, 0, None
    if args.resume:
        checkpoint = torch.load(args.checkpoint, map_location=device)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        epoch, batch, step, loader_state = (checkpoint[k] for k in ("epoch", "batch", "step", "loader"))
        if args.loader == "forkfeed":
            loader.load_state_dict(loader_state)  # the epoch, and the batch within it
        log(f"resuming at epoch {epoch}, batch {batch} of {batches_per_epoch}, step {step}", flush=True)

    def save():
        if rank == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                        "batch": batch, "step": step, "loader": loader_state}, args.checkpoint)

    steps_this_run = 0
    try:
        while epoch < args.epochs and not (args.steps and steps_this_run == args.steps):
            if args.loader == "forkfeed":
                if batch == 0:
                    loader.set_epoch(epoch)
                # Not `for ... in loader`: iterating is a reset, which would start an epoch
                # resumed part-way again. next_batch() goes on from where the loader stands.
                batches = iter(loader.next_batch, None)
            else:
                loader.sampler.set_epoch(epoch)
                loader.sampler.skip = batch * args.batch_size
                batches = loader
            samples = label_sum = 0
            started = time.perf_counter()
            for images, labels, *_ in batches:  # forkfeed's batches also hold indices, epoch, index
                images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
                loss = torch.nn.functional.cross_entropy(trained(images), labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                batch, step, steps_this_run = batch + 1, step + 1, steps_this_run + 1
                if args.loader == "forkfeed":
                    loader_state = loader.state_dict()  # what a checkpoint from here resumes
                samples, label_sum = samples + len(labels), label_sum + int(labels.sum())
                if step % 10 == 0:
                    log(f"epoch {epoch} batch {batch}/{batches_per_epoch} step {step} loss {loss.item():.3f} "
                        f"({samples / (time.perf_counter() - started):.1f} images/s)", flush=True)
                if steps_this_run == args.steps:
                    break
            # What this run trained on in this epoch: an interrupted run and its resumed
            # run add up to an uninterrupted one.
            log(f"epoch {epoch}: {samples} samples, label sum {label_sum}, step {step}", flush=True)
            if batch == batches_per_epoch:
                epoch, batch = epoch + 1, 0
            save()
    except KeyboardInterrupt:
        save()  # as of the last step taken: the batch cut short is trained on again
        log(f"interrupted at epoch {epoch}, batch {batch}; --resume goes on from {args.checkpoint}")
        raise SystemExit(130)
    log(f"checkpoint at epoch {epoch}, batch {batch}, step {step}: {args.checkpoint}", flush=True)


if __name__ == "__main__":
    main()
