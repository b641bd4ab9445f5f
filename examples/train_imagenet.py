#!/usr/bin/python3
"""Trains torchvision's ResNet-18 on an ImageFolder tree (ImageNet's train/ or a folder
made by forkfeed-mkdata), reading it with forkfeed or with PyTorch's DataLoader.

The two loaders give the same batches to the same loop: float32 NCHW images normalised
with ImageNet's mean and std, after RandomResizedCrop(size) and a random horizontal flip,
and int64 labels. --recipe resnet50-v2 takes the data side of torchvision's ResNet-50 v2
recipe instead: RandomResizedCrop(176), a flip, TrivialAugmentWide and RandomErasing(p=0.1)
in the loader, MixUp (alpha 0.2) or CutMix (alpha 1.0) on each batch, cross-entropy with
label smoothing 0.1, and Resize(232) + CenterCrop(224) for --val (its sizes scale with
--size, of which 224 is the recipe's). The mixing draws from (seed, rank, epoch, batch)
only, so a resumed run mixes as an uninterrupted one and each rank with its own lambda and
box. A checkpoint (model, optimizer, epoch and where the loader stands) is
written at the end of every epoch and after --steps steps, or on Ctrl-C or SIGTERM
after the step in progress; --resume goes on from it, mid-epoch included. With forkfeed
the resumed run trains on the batches of an uninterrupted one, crops included; with the
DataLoader on the same samples in the same order, with other crops.

  examples/train_imagenet.py --data DIR                           # forkfeed, 224x224
  examples/train_imagenet.py --data DIR --size 64 --steps 20      # a quick run on a CPU
  examples/train_imagenet.py --data DIR --resume                  # go on from checkpoint.pt
  examples/train_imagenet.py --data DIR --val VAL --recipe resnet50-v2   # top-1 on VAL each epoch
  torchrun --nproc_per_node 2 examples/train_imagenet.py --data DIR   # one shard per rank
  examples/train_imagenet.py --remote cpu1:13337,cpu2:13337 --dataset train  # decoded elsewhere

Under torchrun every rank reads its own shard (forkfeed takes the rank and world size
from $RANK and $WORLD_SIZE) and the model is wrapped in DistributedDataParallel; rank 0
writes the checkpoint, and each rank its loader's state beside it (CHECKPOINT.rankN).
Run it with PYTHONPATH=build/python /usr/bin/python3 from a forkfeed checkout, or with the
Python that has forkfeed, torch and torchvision installed.
"""
import argparse
import itertools
import os
import signal
import time

import torch
import torch.distributed as dist
import torchvision

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def recipe_sizes(args):
    """(train crop, eval resize, eval crop): torchvision's resnet50-v2 recipe trains at 176
    and evaluates Resize(232) + CenterCrop(224), here scaled to --size as the eval crop."""
    if args.recipe == "classic":
        return args.size, round(args.size / 0.875), args.size
    return round(args.size * 176 / 224), round(args.size * 232 / 224), args.size


def forkfeed_transforms(args):
    """The (train, eval) pipelines, as forkfeed.transforms ops or shorthands."""
    from forkfeed.transforms import (CenterCrop, Normalize, RandomErasing, RandomHorizontalFlip,
                                     RandomResizedCrop,
                                     Resize, TrivialAugmentWide)

    if args.recipe == "classic":
        return "train", "eval"
    train_crop, eval_resize, eval_crop = recipe_sizes(args)
    return ([RandomResizedCrop(train_crop), RandomHorizontalFlip(), TrivialAugmentWide(), Normalize(),
             RandomErasing(p=0.1)],
            [Resize(eval_resize), CenterCrop(eval_crop), Normalize()])


def forkfeed_loader(args, root, train=True):
    import forkfeed

    transform = forkfeed_transforms(args)[0 if train else 1]
    options = dict(batch_size=args.batch_size, workers=args.workers, transform=transform, dtype="float32",
                   mean=MEAN, std=STD, seed=args.seed, drop_last=train, shuffle=train)
    if isinstance(transform, str):  # a pipeline's size is its last crop's
        options["size"] = args.size
    if args.remote:
        # Decoded on other machines: every rank draws its own pass from all the daemons, and
        # goes on without one that dies (token: $FORKFEED_TOKEN_FILE).
        return forkfeed.Client(dataset=root, address=args.remote.split(","), **options)
    return forkfeed.Loader(root, **options)


def save_whole(state, path):
    """Saves `state` at `path`, whole or not at all."""
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def rank_state_path(args, rank):
    """Where a rank of a torchrun job keeps its loader's state, beside the checkpoint."""
    return f"{args.checkpoint}.rank{rank}"


def rank_state(args, rank, world_size, step):
    """This rank's loader state, saved at the checkpoint's step by a job of as many ranks."""
    path = rank_state_path(args, rank)
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing: --resume needs the loader state each rank saved, under as many "
                         f"ranks ({world_size}) as the checkpoint's job")
    saved = torch.load(path)
    if (saved["step"], saved["world_size"]) != (step, world_size):
        raise SystemExit(f"{path} is of step {saved['step']} in a job of {saved['world_size']} ranks, the "
                         f"checkpoint of step {step} in one of {world_size}: the job stopped between their "
                         f"writes; resume from an earlier checkpoint pair")
    return saved["loader"]


def batch_mix(args, num_classes, rank):
    """What mixes each training batch: None for the classic recipe; for resnet50-v2 MixUp or
    CutMix, one of them per batch, keyed by the loader's seed, this process's rank and
    (epoch, batch): each rank draws its own lambda and box, and a resumed run the same ones."""
    if args.recipe == "classic":
        return None
    from forkfeed.transforms import CutMix, MixUp, MixUpOrCutMix

    return MixUpOrCutMix([MixUp(num_classes, p=1.0, alpha=0.2, seed=args.seed, rank=rank),
                          CutMix(num_classes, p=1.0, alpha=1.0, seed=args.seed, rank=rank)])


class ResumableSampler(torch.utils.data.DistributedSampler):
    """DistributedSampler (an order that depends on seed and epoch only, one shard per
    rank) that can start part-way through an epoch, which the DataLoader cannot."""

    skip = 0  # samples of the epoch already trained on

    def __iter__(self):
        return itertools.islice(super().__iter__(), self.skip, None)

    def __len__(self):
        return super().__len__() - self.skip


def torchvision_transforms(args):
    """The (train, eval) pipelines of forkfeed_transforms(), in torchvision's objects."""
    from torchvision import transforms as T

    train_crop, eval_resize, eval_crop = recipe_sizes(args)
    train = [T.RandomResizedCrop(train_crop), T.RandomHorizontalFlip()]
    if args.recipe == "resnet50-v2":
        train.append(T.TrivialAugmentWide())
    train += [T.ToTensor(), T.Normalize(MEAN, STD)]
    if args.recipe == "resnet50-v2":
        train.append(T.RandomErasing(p=0.1))
    evaluate = [T.Resize(eval_resize), T.CenterCrop(eval_crop), T.ToTensor(), T.Normalize(MEAN, STD)]
    return T.Compose(train), T.Compose(evaluate)


def torch_loader(args, root, train=True):
    from torchvision import datasets

    dataset = datasets.ImageFolder(root, torchvision_transforms(args)[0 if train else 1])
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    sampler = ResumableSampler(dataset, world_size, rank, shuffle=train, seed=args.seed, drop_last=train)
    return torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                                       num_workers=args.workers, drop_last=train,
                                       worker_init_fn=ignore_sigint)


def ignore_sigint(_worker_id):
    """Ctrl-C reaches the whole process group: DataLoader workers leave stopping to the trainer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remote", metavar="HOST:PORT[,...]",
                        help="read from forkfeedd(s) on other machines (their --listen) instead of --data; "
                             "every rank draws from all of them, going on without one that dies; the token "
                             "file is $FORKFEED_TOKEN_FILE")
    parser.add_argument("--dataset", metavar="NAME", default="train",
                        help="with --remote: the dataset's name in the daemons' config (default train)")
    parser.add_argument("--data", required=False, metavar="DIR",
                        help="ImageFolder root: one subfolder of images per class")
    parser.add_argument("--val", metavar="DIR",
                        help="ImageFolder root of validation images (with --remote: the daemons' dataset "
                             "name): top-1 accuracy after every epoch")
    parser.add_argument("--recipe", choices=("classic", "resnet50-v2"), default="classic",
                        help="classic: RandomResizedCrop + flip (the default); resnet50-v2: the data side of "
                             "torchvision's ResNet-50 v2 recipe: TrivialAugmentWide, RandomErasing, MixUp or "
                             "CutMix per batch, label smoothing 0.1, trained at 176/224 of --size")
    parser.add_argument("--loader", choices=["forkfeed", "torch"], default="forkfeed",
                        help="forkfeed.Loader, or torchvision's ImageFolder through a DataLoader "
                             "(default forkfeed)")
    parser.add_argument("--epochs", type=int, metavar="E", default=90,
                        help="train until this epoch (default 90)")
    parser.add_argument("--steps", type=int, metavar="N", default=0,
                        help="stop after this many steps of this run, with a checkpoint "
                             "(default 0: no limit)")
    parser.add_argument("--size", type=int, metavar="S", default=224,
                        help="crop height and width (default 224; 64 for a quick run)")
    parser.add_argument("--batch-size", type=int, metavar="B", default=32,
                        help="images per step and rank (default 32)")
    parser.add_argument("--workers", type=int, metavar="N", default=min(8, os.cpu_count() or 1),
                        help="decode worker processes per rank (default: the CPUs, at most 8)")
    parser.add_argument("--lr", type=float, metavar="LR", default=0.1, help="SGD learning rate (default 0.1)")
    parser.add_argument("--seed", type=int, metavar="X", default=0,
                        help="seed of the model, the order and the crops")
    parser.add_argument("--checkpoint", metavar="PATH", default="checkpoint.pt",
                        help="where checkpoints go (default checkpoint.pt)")
    parser.add_argument("--resume", action="store_true", help="go on from --checkpoint")
    args = parser.parse_args()
    if not args.data and not args.remote:
        parser.error("give --data DIR, or --remote HOST:PORT for daemons that decode elsewhere")
    if args.remote and args.loader != "forkfeed":
        parser.error("--remote reads through forkfeed")
    return args


def evaluate(model, loader, device):
    """Top-1 accuracy over the loader's pass, all ranks' shards together."""
    model.eval()
    counts = torch.zeros(2, dtype=torch.int64, device=device)  # correct, seen
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            counts += torch.stack([(model(images).argmax(1) == labels).sum(),
                                   torch.tensor(len(labels), device=device)])
    model.train()
    if dist.is_initialized():
        dist.all_reduce(counts)
    return counts[0].item() / max(counts[1].item(), 1)


def main():
    args = parse_args()
    # forkfeed first, before torch.distributed or CUDA start threads: its workers are
    # then forked, which is quicker than spawning them (forkfeed.fork_report() says why).
    train_root = args.dataset if args.remote else args.data
    loader = val_loader = None
    if args.loader == "forkfeed":
        loader = forkfeed_loader(args, train_root)
        val_loader = forkfeed_loader(args, args.val, train=False) if args.val else None
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # started by torchrun
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if loader is None:
        loader = torch_loader(args, train_root)
        val_loader = torch_loader(args, args.val, train=False) if args.val else None
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    log = print if rank == 0 else (lambda *_, **__: None)
    device = torch.device(f"cuda:{os.environ.get('LOCAL_RANK', 0)}" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    classes = loader.classes if args.loader == "forkfeed" else loader.dataset.classes
    batches_per_epoch = len(loader)

    torch.manual_seed(args.seed)
    model = torchvision.models.resnet18(num_classes=len(classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    mix = batch_mix(args, len(classes), rank)
    label_smoothing = 0.1 if args.recipe == "resnet50-v2" else 0.0
    trained = model
    if dist.is_initialized():
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)

    epoch, batch, step = 0, 0, 0
    if args.resume:
        checkpoint = torch.load(args.checkpoint, map_location=device)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        epoch, batch, step = checkpoint["epoch"], checkpoint["batch"], checkpoint["step"]
        if args.loader == "forkfeed":  # the epoch, and the batch within it: this rank's own
            loader.load_state_dict(checkpoint["loader"] if world_size == 1 else
                                   rank_state(args, rank, world_size, step))
        log(f"resuming at epoch {epoch}, batch {batch} of {batches_per_epoch}, step {step}", flush=True)

    # Ctrl-C or SIGTERM (a preempted job) stops after the step in progress, with a
    # checkpoint; stopping within a step would leave the weights half-updated.
    stop = []

    def request_stop(signum, _frame):
        stop.append(signum)
        signal.signal(signum, signal.SIG_DFL)  # a second one ends the run at once
    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    steps_this_run = 0
    while epoch < args.epochs and not stop and not (args.steps and steps_this_run == args.steps):
        if args.loader == "forkfeed":
            # After load_state_dict(), neither set_epoch() of the resumed epoch nor the
            # `for` moves the loader: the pass goes on from the batch it resumed at.
            loader.set_epoch(epoch)
            batches = loader
        else:
            loader.sampler.set_epoch(epoch)
            loader.sampler.skip = batch * args.batch_size
            batches = loader
        samples = label_sum = 0
        started = time.perf_counter()
        for images, labels in batches:
            images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            targets = labels
            if mix is not None:
                # On the device, keyed by the batch's place in the pass (`batch` counts from where
                # a resumed run resumed): a resumed run mixes exactly as an uninterrupted one.
                images, targets = mix(images, labels, epoch=epoch, batch_index=batch)
            loss = torch.nn.functional.cross_entropy(trained(images), targets,
                                                     label_smoothing=label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            batch, step, steps_this_run = batch + 1, step + 1, steps_this_run + 1
            samples, label_sum = samples + len(labels), label_sum + int(labels.sum())
            if step % 10 == 0:
                log(f"epoch {epoch} batch {batch}/{batches_per_epoch} step {step} loss {loss.item():.3f} "
                    f"({samples / (time.perf_counter() - started):.1f} images/s)", flush=True)
            if stop or steps_this_run == args.steps:
                break
        # What this run trained on in this epoch: an interrupted run and its resumed run
        # add up to an uninterrupted one.
        log(f"epoch {epoch}: {samples} samples, label sum {label_sum}, step {step}", flush=True)
        if batch == batches_per_epoch:
            if val_loader is not None:
                log(f"epoch {epoch}: top-1 {evaluate(model, val_loader, device):.4f} on {args.val}",
                    flush=True)
            epoch, batch = epoch + 1, 0
        # The loader has delivered exactly the batches trained on: its state resumes after them.
        # A state resumes only the rank that took it, so under torchrun each rank keeps its own.
        loader_state = loader.state_dict() if args.loader == "forkfeed" else None
        if world_size > 1:
            save_whole({"loader": loader_state, "step": step, "world_size": world_size},
                       rank_state_path(args, rank))
        if rank == 0:
            save_whole({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                        "batch": batch, "step": step, "loader": loader_state if world_size == 1 else None},
                       args.checkpoint)
    log(f"checkpoint at epoch {epoch}, batch {batch}, step {step}: {args.checkpoint}", flush=True)
    if stop:
        raise SystemExit(128 + stop[0])


if __name__ == "__main__":
    main()
