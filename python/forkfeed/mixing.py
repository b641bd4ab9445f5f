"""MixUp, CutMix and MixUpOrCutMix: the batch-level mixing a trainer applies to each batch,
on the batch tensors and on their device (``forkfeed.transforms`` exports them beside the
ops the workers run).

Their random draws come from (seed, rank, epoch, batch index) only, as forkfeed's
per-sample draws come from (seed, epoch, sample index): a resumed run mixes its batches
exactly as an uninterrupted one did, and the ranks of a data-parallel job draw their own
lambdas and boxes, as torchvision's reference (one generator per process) does.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any, Optional, Sequence, Tuple

from forkfeed._rank import default_rank_and_world_size

__all__ = ["MixUp", "CutMix", "MixUpOrCutMix"]


# Mixed into each generator's key, so the draws of MixUp, CutMix and the choice between them
# for one batch are independent even with the same seed.
_MIXUP_SALT, _CUTMIX_SALT, _CHOICE_SALT = 0x6D69787570, 0x6375746D6978, 0x63686F696365

# alpha's range. numpy's Beta(alpha, alpha) sampler (Johnk's algorithm for alpha < 1) takes
# longer and longer as alpha shrinks and does not return at all near 1e-10 (numpy 1.24:
# about 5 ms a draw at 1e-8, a hang at 1e-10), and an infinite alpha draws NaN; below 1e-3
# lambda is already 0 or 1 nearly always (no mixing) and above 1e3 it is 1/2 within a few
# hundredths, so nothing a recipe wants lies outside.
_ALPHA_MIN, _ALPHA_MAX = 1e-3, 1e3


def _generator(seed: int, rank: int, epoch: int, batch_index: int, salt: int) -> Any:
    """numpy's generator for one batch of one rank: its SeedSequence hashes the whole key,
    so nearby keys (batch 7, batch 8; rank 0, rank 1) give unrelated streams."""
    import numpy as np

    for name, value in (("seed", seed), ("rank", rank), ("epoch", epoch), ("batch_index", batch_index)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return np.random.default_rng([int(seed), int(rank), int(epoch), int(batch_index), salt])


def _default_rank(name: str) -> int:
    """The rank a mix keys its draws by when given none: the Loader's default (torch.distributed's
    rank when it is initialised, else $RANK, else 0)."""
    try:
        return default_rank_and_world_size()[0]
    except ValueError:
        raise ValueError(f"{name}: RANK={os.environ.get('RANK')!r} must be an integer "
                         "(or pass rank=)") from None


class _BatchMix:
    """What MixUp and CutMix share: the arguments, the key, the checks of a batch and the
    one-hot targets, following torchvision's references/classification/transforms.py
    (RandomMixup, RandomCutmix): with probability ``p`` each sample is mixed with the
    previous one in the batch (the batch rolled by one), in a proportion lambda drawn
    from Beta(alpha, alpha), and so are their one-hot targets.

    ``alpha`` is finite, from 1e-3 to 1e3; ``p`` from 0 to 1. The draws of a batch are keyed
    by (``seed``, ``rank``, epoch, batch index): one seed for all ranks of a data-parallel
    job, and each rank mixes its batch with its own lambda (and box), as torchvision's
    reference does. ``rank=None`` is the Loader's default, taken when the mix is made:
    torch.distributed's rank when it is initialised, else $RANK (torchrun sets it), else 0;
    make the mix after ``init_process_group`` or pass ``rank=``. A resumed run on the same
    ranks repeats every draw."""

    _salt = 0

    def __init__(self, num_classes: int, p: float = 0.5, alpha: float = 1.0, seed: int = 0,
                 rank: Optional[int] = None) -> None:
        name = type(self).__name__
        if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1:
            raise ValueError(f"{name}: num_classes must be a positive int, got {num_classes!r}")
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:  # also NaN
            raise ValueError(f"{name}: p is a probability, a number from 0 to 1, got {p!r}")
        if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
                or not _ALPHA_MIN <= alpha <= _ALPHA_MAX):  # also NaN and inf
            raise ValueError(f"{name}: alpha (of Beta(alpha, alpha)) must be a finite number from "
                             f"{_ALPHA_MIN:g} to {_ALPHA_MAX:g}, got {alpha!r}")
        if rank is None:
            rank = _default_rank(name)
        _generator(seed, rank, 0, 0, 0)  # checks the seed and rank now rather than at the first batch
        self.num_classes, self.p, self.alpha = int(num_classes), float(p), float(alpha)
        self.seed, self.rank = int(seed), int(rank)

    def __call__(self, images: Any, labels: Any = None, *, epoch: Optional[int] = None,
                 batch_index: Optional[int] = None) -> Tuple[Any, Any]:
        """``(mixed images, targets)`` on the images' device: the images a new tensor (or
        themselves, when the draw leaves the batch unmixed), the targets float (the images'
        dtype) of shape (batch, num_classes), each row summing to 1.

        Either ``mix(batch)`` with a ``forkfeed.Batch`` (from ``next_batch()``, which
        carries its epoch and index), or ``mix(images, labels, epoch=e, batch_index=b)``
        with the pass's epoch and the batch's index in it (after a resume, the index the
        pass resumed at, not 0). ``images`` are float NCHW; ``labels`` int64 class indices."""
        images, labels, epoch, batch_index = _unpack(type(self).__name__, images, labels, epoch, batch_index)
        return self._mix(images, labels, epoch, batch_index)

    def _mix(self, images: Any, labels: Any, epoch: int, batch_index: int) -> Tuple[Any, Any]:
        import torch

        name = type(self).__name__
        if not isinstance(images, torch.Tensor) or not isinstance(labels, torch.Tensor):
            raise TypeError(f"{name} mixes torch tensors, got {type(images).__name__} and "
                            f"{type(labels).__name__} "
                            "(a Loader with output=\"numpy\" gives numpy arrays: torch.from_numpy() them)")
        if not images.is_floating_point():
            raise TypeError(f"{name} needs float images to mix, got {images.dtype}: end the loader's "
                            "transform with Normalize() (float32 batches), "
                            "or convert the batch before mixing")
        if images.dim() != 4 or labels.dim() != 1 or len(labels) != len(images):
            raise ValueError(f"{name} takes a batch of images (N, C, H, W) and N class indices, got images "
                             f"{tuple(images.shape)} and labels {tuple(labels.shape)}")
        if labels.dtype != torch.int64:
            raise TypeError(f"{name} takes int64 class indices as labels, got {labels.dtype}")
        targets = torch.nn.functional.one_hot(labels, self.num_classes).to(images.dtype)
        rng = _generator(self.seed, self.rank, epoch, batch_index, self._salt)
        if rng.random() >= self.p:
            return images, targets
        lam = float(rng.beta(self.alpha, self.alpha))
        mixed, lam = self._mix_images(images, images.roll(1, 0), lam, rng)
        return mixed, targets * lam + targets.roll(1, 0) * (1.0 - lam)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_classes={self.num_classes}, p={self.p}, alpha={self.alpha}, "
                f"seed={self.seed}, rank={self.rank})")


class MixUp(_BatchMix):
    """Each image becomes ``lambda * image + (1 - lambda) * previous image`` (torchvision's
    RandomMixup). torchvision's ResNet-50 recipe uses ``alpha=0.2``, ``p=1.0``, in a
    ``MixUpOrCutMix`` with ``CutMix(alpha=1.0, p=1.0)``."""

    _salt = _MIXUP_SALT

    def _mix_images(self, images: Any, rolled: Any, lam: float, rng: Any) -> Tuple[Any, float]:
        return images * lam + rolled * (1.0 - lam), lam


class CutMix(_BatchMix):
    """Pastes a box of the previous image into each image (torchvision's RandomCutmix): the
    box covers about ``1 - lambda`` of the image around a uniformly drawn center, clipped
    at the borders, and lambda becomes the area left, so the targets weigh what is seen."""

    _salt = _CUTMIX_SALT

    def _mix_images(self, images: Any, rolled: Any, lam: float, rng: Any) -> Tuple[Any, float]:
        if images.shape[1] not in (1, 3) and images.shape[-1] in (1, 3):
            raise ValueError(f"CutMix takes NCHW images, got shape {tuple(images.shape)}, which looks NHWC: "
                             "open the loader with layout=\"nchw\" (float32's default) or pass "
                             "images.permute(0, 3, 1, 2)")
        y1, y2, x1, x2 = self.box(images.shape[-2], images.shape[-1], lam, rng)
        mixed = images.clone()
        mixed[:, :, y1:y2, x1:x2] = rolled[:, :, y1:y2, x1:x2]
        return mixed, 1.0 - (x2 - x1) * (y2 - y1) / (images.shape[-1] * images.shape[-2])

    @staticmethod
    def box(height: int, width: int, lam: float, rng: Any) -> Tuple[int, int, int, int]:
        """``(y1, y2, x1, x2)``: a box of half-sides ``sqrt(1 - lam) / 2`` of the image's,
        centred at a uniform pixel, clipped (RandomCutmix's arithmetic)."""
        center_x, center_y = int(rng.integers(width)), int(rng.integers(height))
        r = 0.5 * math.sqrt(1.0 - lam)
        half_w, half_h = int(r * width), int(r * height)
        return (max(center_y - half_h, 0), min(center_y + half_h, height),
                max(center_x - half_w, 0), min(center_x + half_w, width))


class MixUpOrCutMix:
    """One of ``mixes`` per batch (torchvision.transforms.RandomChoice, as torchvision's
    recipe picks RandomMixup or RandomCutmix), with probabilities ``p`` (default equal),
    drawn from the same (seed, rank, epoch, batch index) as the mixes' own draws; the mixes
    must share a seed and a rank, which are the key's (so each rank picks for itself)."""

    def __init__(self, mixes: Sequence[_BatchMix], p: Optional[Sequence[float]] = None) -> None:
        mixes = list(mixes)
        if not mixes or not all(isinstance(m, _BatchMix) for m in mixes):
            raise TypeError(f"MixUpOrCutMix takes a list of MixUp and CutMix, got {mixes!r}")
        if len({m.seed for m in mixes}) != 1:
            raise ValueError(f"MixUpOrCutMix: the mixes have seeds {[m.seed for m in mixes]}; give them one "
                             "seed, the batch key of all three draws")
        if len({m.rank for m in mixes}) != 1:
            raise ValueError(f"MixUpOrCutMix: the mixes have ranks {[m.rank for m in mixes]}; give them one "
                             "rank, this process's")
        if len({m.num_classes for m in mixes}) != 1:
            raise ValueError(f"MixUpOrCutMix: the mixes have num_classes {[m.num_classes for m in mixes]}; "
                             "the targets of every batch must have one width")
        if p is not None and (len(p) != len(mixes)
                              or not all(isinstance(w, numbers.Real) and 0 <= w < math.inf for w in p)
                              or sum(p) <= 0):
            raise ValueError(f"MixUpOrCutMix: p must be {len(mixes)} finite weights, not negative, "
                             f"not all 0, got {p!r}")
        self.mixes, self.seed, self.rank = mixes, mixes[0].seed, mixes[0].rank
        self.p = None if p is None else [w / sum(p) for w in p]

    def __call__(self, images: Any, labels: Any = None, *, epoch: Optional[int] = None,
                 batch_index: Optional[int] = None) -> Tuple[Any, Any]:
        """As ``MixUp.__call__``: ``mix(batch)`` or ``mix(images, labels, epoch=e, batch_index=b)``."""
        images, labels, epoch, batch_index = _unpack("MixUpOrCutMix", images, labels, epoch, batch_index)
        rng = _generator(self.seed, self.rank, epoch, batch_index, _CHOICE_SALT)
        choice = int(rng.choice(len(self.mixes), p=self.p))
        return self.mixes[choice]._mix(images, labels, epoch, batch_index)

    def __repr__(self) -> str:
        return f"MixUpOrCutMix({self.mixes!r}, p={self.p!r})"


def _unpack(name: str, images: Any, labels: Any, epoch: Optional[int],
            batch_index: Optional[int]) -> Tuple[Any, Any, int, int]:
    """(images, labels, epoch, batch index) of a mix's call: from a forkfeed.Batch, or as given."""
    if labels is None and hasattr(images, "epoch") and hasattr(images, "index"):  # a forkfeed.Batch
        if epoch is not None or batch_index is not None:
            raise TypeError(f"{name}(batch) takes the epoch and index from the batch; give neither epoch= "
                            "nor batch_index=")
        return images.images, images.labels, images.epoch, images.index
    if labels is None or epoch is None or batch_index is None:
        raise TypeError(f"{name} takes a forkfeed.Batch (from next_batch()), or images, labels and the "
                        "keywords epoch= and batch_index= (the batch's index in its pass), which key its "
                        "random draws")
    return images, labels, epoch, batch_index
