#!/usr/bin/python3
"""The PyTorch side of tools/compare.sh: a torchvision ImageFolder read through a
torch.utils.data.DataLoader with the transform forkfeed applies, timed the way
forkfeed-bench times a loader. Prints one JSON object on one line.

train: RandomResizedCrop(size) + RandomHorizontalFlip(); eval: Resize(round(size / 0.875))
+ CenterCrop(size). Then PILToTensor() for uint8 (forkfeed's uint8, though CHW), or
ToTensor() + Normalize(ImageNet mean/std) for float32. A pipeline (--transform
"RandomResizedCrop(224), TrivialAugmentWide(), Normalize()") is read as Python with
torchvision.transforms' names in scope: forkfeed spells its ops as torchvision does, so
the text is the same pipeline to both. Normalize() takes ImageNet's mean and std, as
forkfeed's does by default, with ToTensor() before it; without Normalize(), PILToTensor()
goes before the first op that needs a tensor (RandomErasing) or last: both loaders then
give the same dtype. Workers are kept across epochs
(persistent_workers) as forkfeed keeps its own; the clock runs from the first batch
asked for to the last one received, as in forkfeed-bench, and the wait per batch is
the time spent in next(). Run it with Debian's /usr/bin/python3 and python3-torch,
python3-torchvision installed.
"""
import json
import sys
import time

from loader_run import is_shorthand, parse_arguments, percentile

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # forkfeed's defaults: ImageNet's

# Ops that take a tensor in torchvision 0.14: the conversion from PIL goes before the first.
TENSOR_OPS = ("Normalize", "RandomErasing")


def pipeline(spec, transforms):
    """torchvision's transforms for forkfeed's pipeline text `spec`, with the conversion to a
    tensor inserted."""
    names = {name: getattr(transforms, name) for name in dir(transforms) if not name.startswith("_")}
    names["Normalize"] = lambda mean=MEAN, std=STD, inplace=False: transforms.Normalize(mean, std, inplace)
    names["T"] = names["transforms"] = transforms  # "T.RandomCrop(...)", as forkfeed takes it too
    steps = eval(f"[{spec}]", {"__builtins__": {}}, names)
    kinds = [type(step).__name__ for step in steps]
    to_tensor = transforms.ToTensor() if "Normalize" in kinds else transforms.PILToTensor()
    at = next((i for i, kind in enumerate(kinds) if kind in TENSOR_OPS), len(steps))
    return steps[:at] + [to_tensor] + steps[at:]


def main():
    args = parse_arguments(__doc__)

    try:
        import torch
        import torchvision
        from torchvision import datasets, transforms
    except ImportError as e:
        sys.exit(f"torch_loader.py: {e}; install python3-torch and python3-torchvision "
                 f"(apt-get install python3-torch python3-torchvision) and run with /usr/bin/python3")

    if not is_shorthand(args.transform):
        steps = pipeline(args.transform, transforms)
    else:
        if args.transform == "train":
            steps = [transforms.RandomResizedCrop(args.size), transforms.RandomHorizontalFlip()]
        else:
            steps = [transforms.Resize(round(args.size / 0.875)), transforms.CenterCrop(args.size)]
        if args.dtype == "uint8":
            steps.append(transforms.PILToTensor())
        else:
            steps += [transforms.ToTensor(), transforms.Normalize(MEAN, STD)]

    torch.manual_seed(args.seed)
    start = time.perf_counter()
    dataset = datasets.ImageFolder(args.data, transform=transforms.Compose(steps))
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers,
                                         persistent_workers=args.workers > 0)
    # The first iterator starts the workers, as forkfeed's Loader::open starts its own:
    # both are startup, not part of the timed passes.
    it = iter(loader)
    startup_s = time.perf_counter() - start

    waits_ms, images, batches, epochs = [], 0, 0, 0
    stopped = False
    first = None
    for epoch in range(args.epochs):
        if epoch > 0:
            it = iter(loader)
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
            images += len(labels)
            batches += 1
            if batches == args.stop_after_batches:
                stopped = True
                break
        if stopped:
            break
    wall_s = time.perf_counter() - first if first is not None else 0.0

    print(json.dumps({
        "images": images, "batches": batches, "epochs": epochs, "stopped": stopped,
        "startup_s": startup_s, "wall_s": wall_s,
        "images_per_s": images / wall_s if wall_s > 0 else 0.0,
        "wait_p50_ms": percentile(waits_ms, 50), "wait_p99_ms": percentile(waits_ms, 99),
        "dataset_size": len(dataset), "classes": len(dataset.classes),
        "workers": args.workers, "batch_size": args.batch, "size": args.size,
        "transform": args.transform, "dtype": args.dtype, "seed": args.seed,
        "batch_shape": list(pixels.shape) if batches else None,
        "batch_dtype": str(pixels.dtype).replace("torch.", "") if batches else None,
        "torch_version": torch.__version__, "torchvision_version": torchvision.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()
