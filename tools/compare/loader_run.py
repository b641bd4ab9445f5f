"""What the two Python rows of tools/compare.sh (forkfeed_python.py, torch_loader.py)
share: the loader options they take, which compare.sh passes to forkfeed-bench too, and
the percentile forkfeed-bench reports waits with. Standard library only."""
import argparse
import math


def parse_arguments(description):
    """The command line both rows take, parsed."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--transform", default="train",
                        help="train, eval, or a pipeline of torchvision's ops as forkfeed takes it "
                             "(\"RandomResizedCrop(224), RandomHorizontalFlip(), Normalize()\")")
    parser.add_argument("--dtype", choices=["uint8", "float32"], default="uint8")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--stop-after-batches", type=int, default=0, help="0: run every epoch")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def is_shorthand(transform):
    """Whether `transform` is a shorthand, whose size is --size; a pipeline's is its last crop's."""
    return transform in ("train", "eval")


def percentile(values, p):
    """Nearest-rank percentile, as forkfeed-bench computes it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(max(math.ceil(p / 100.0 * len(ordered)), 1), len(ordered)) - 1
    return ordered[k]
