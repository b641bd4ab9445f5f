"""Transform pipelines for forkfeed.Loader and forkfeed.Client, written as with
torchvision.transforms, and the batch-level MixUp and CutMix for the training loop.

    from forkfeed.transforms import (RandomResizedCrop, RandomHorizontalFlip, TrivialAugmentWide,
                                     Normalize, RandomErasing)
    loader = forkfeed.Loader(root, batch_size=256, transform=[
        RandomResizedCrop(176), RandomHorizontalFlip(), TrivialAugmentWide(), Normalize(),
        RandomErasing(p=0.1)])

The ops do nothing in Python: each keeps its arguments and prints itself as the spec text
the C++ workers run (``str(RandomResizedCrop(176))`` is ``"RandomResizedCrop(176)"``), so
a list of them and the string ``"RandomResizedCrop(176), RandomHorizontalFlip(), ..."``
are the same pipeline, and the string is also what forkfeed-bench's ``--transform`` and
forkfeedd's ``transform:`` take. Names, arguments and defaults are torchvision 0.14's; the
C++ side checks the values when the loader opens and names the op and argument it refuses.
Two differences: ``Normalize()``'s mean and std default to the loader's ``mean`` and
``std`` (ImageNet's unless given), and there is no ToTensor: a pipeline with Normalize
gives float32 batches, one without gives uint8. The output size is the last crop's.

MixUp and CutMix (``forkfeed.mixing``) mix whole batches, so they run in the trainer, on the
batch tensors and on their device. Their random draws come from (seed, rank, epoch, batch index) only, as
forkfeed's per-sample draws come from (seed, epoch, sample index): a resumed run mixes its
batches exactly as an uninterrupted one did, and the ranks of a data-parallel job draw
their own lambdas and boxes, as torchvision's reference (one generator per process) does.
"""

from __future__ import annotations

import enum
import inspect
import math
import numbers
from typing import Any, Dict, Sequence, Union

from forkfeed.mixing import CutMix, MixUp, MixUpOrCutMix  # the batch-level mixes, kept in their own module

__all__ = [
    "InterpolationMode", "AutoAugmentPolicy", "Op", "pipeline_spec",
    "Resize", "CenterCrop", "RandomCrop", "RandomResize", "RandomZoomOut", "RandomIoUCrop", "ScaleJitter",
    "RandomShortestSize", "FixedSizeCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip",
    "ColorJitter", "RandomPhotometricDistort", "RandomGrayscale", "Grayscale", "GaussianBlur",
    "RandomRotation", "RandomAffine",
    "RandomPosterize", "RandomSolarize", "RandomAutocontrast", "RandomEqualize", "RandomAdjustSharpness",
    "RandomInvert", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix", "Normalize",
    "RandomErasing",
    "MixUp", "CutMix", "MixUpOrCutMix",
]


class InterpolationMode(enum.Enum):
    """torchvision.transforms.InterpolationMode's members and values; torchvision's own
    members and their strings ("bilinear") are taken as well."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class AutoAugmentPolicy(enum.Enum):
    """torchvision.transforms.AutoAugmentPolicy's members and values."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# Arguments whose values are members of an enum, by name, as in torchvision's signatures.
_ENUM_ARGUMENTS = {"interpolation": InterpolationMode, "policy": AutoAugmentPolicy}


class Op:
    """One sample-level op of a pipeline: its arguments as attributes, and ``str()`` the
    spec text that builds it, with only the arguments that differ from the defaults.

    Values are kept as the spec spells them (ints, floats, strings, None, tuples for
    sequences, the enums above), so they can be printed back exactly: floats as
    ``repr()`` prints them, which reads back as the same double."""

    def __init__(self, arguments: Dict[str, Any]) -> None:
        """Keeps a subclass's ``__init__`` arguments, given as its ``locals()``."""
        for name in self._parameters():
            setattr(self, name, _canonical(type(self).__name__, name, arguments[name]))

    @classmethod
    def _parameters(cls) -> Dict[str, inspect.Parameter]:
        parameters = dict(inspect.signature(cls.__init__).parameters)
        del parameters["self"]
        return parameters

    def __str__(self) -> str:
        parts = []
        for name, parameter in self._parameters().items():
            value = getattr(self, name)
            if parameter.default is inspect.Parameter.empty:  # required: positional, as usually written
                parts.append(_render(value))
            elif value != _canonical(type(self).__name__, name, parameter.default):
                parts.append(f"{name}={_render(value)}")
        return f"{type(self).__name__}({', '.join(parts)})"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _canonical(op: str, name: str, value: Any) -> Any:
    """`value` as the spec spells it; TypeError naming the op and argument for a value
    that has no spelling (an object, a function, an image)."""
    if name in _ENUM_ARGUMENTS:
        return _enum_member(op, name, _ENUM_ARGUMENTS[name], value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ValueError(f"{op}: {name}={value!r} is not a finite number")
        return float(value)
    if hasattr(value, "tolist"):  # numpy arrays, torch tensors
        return _canonical(op, name, value.tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(op, name, item) for item in value)
    raise TypeError(f"{op}: {name}={value!r} is a {type(value).__name__}; a pipeline's arguments are "
                    "numbers, strings, None or tuples of them, as the spec text spells them")


def _enum_member(op: str, name: str, kind: type, value: Any) -> enum.Enum:
    """The member of `kind` that `value` names: one of its own, torchvision's member of the
    same name (InterpolationMode.BILINEAR), or its value as a string ("bilinear")."""
    if isinstance(value, kind):
        return value
    text = value.value if isinstance(value, enum.Enum) else value
    for member in kind:
        if isinstance(text, str) and text.lower() == member.value:
            return member
    choices = ", ".join(f"{kind.__name__}.{m.name}" for m in kind)
    raise ValueError(f"{op}: {name}={value!r} is not one of {choices} (or their strings, e.g. "
                     f"{next(iter(kind)).value!r})")


def _render(value: Any) -> str:
    """A canonical value as Python would write it, which is how the spec reads it."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(_render, value)) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, str):
        if '"' in value or "\\" in value:
            raise ValueError(f"the string {value!r} has a quote or a backslash, "
                             "which the spec text cannot hold")
        return f'"{value}"'
    return repr(value)  # None, True, ints; floats round-trip


# The ops, in torchvision.transforms' order, each with torchvision 0.14's constructor. An
# argument forkfeed cannot honour (RandomCrop's padding_mode="reflect", RandomRotation's expand) is still
# taken here, so that torchvision's code ports as it is; the loader refuses it when it opens,
# saying why. `inplace` is taken and changes nothing: each sample is written in its own slot.


class Resize(Op):
    """Resizes the shorter side to ``size`` (an int), or to ``(height, width)``."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=None):
        super().__init__(locals())


class CenterCrop(Op):
    """Crops the center ``size`` (an int for a square, or ``(height, width)``)."""

    def __init__(self, size):
        super().__init__(locals())


class RandomCrop(Op):
    """Crops ``size`` at a random place, after ``padding`` (and, with ``pad_if_needed``, as
    much more on both sides as the image lacks), padded with ``fill`` (a mask field with its
    own ``fill``); ``padding_mode="constant"`` only."""

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__(locals())


class RandomResize(Op):
    """torchvision.transforms.v2's: resizes the shorter side to a size drawn in
    ``[min_size, max_size)`` (the segmentation reference's random scale)."""

    def __init__(self, min_size, max_size, interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__(locals())


class RandomZoomOut(Op):
    """torchvision.transforms.v2's (SSD's "expand"): with probability ``p``, the image on a
    canvas ``side_range`` times its size, at a random place, the rest ``fill``."""

    def __init__(self, fill=0, side_range=(1.0, 4.0), p=0.5):
        super().__init__(locals())


class RandomIoUCrop(Op):
    """torchvision.transforms.v2's (SSD's): a crop that holds the centre of a box and overlaps
    one by a minimum drawn among ``sampler_options``; the boxes whose centre it leaves out are
    dropped. Needs a boxes field."""

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40):
        super().__init__(locals())


class ScaleJitter(Op):
    """torchvision.transforms.v2's (the detection reference's large-scale jitter): resized by
    ``min(target_size[1] / height, target_size[0] / width)`` times a scale drawn in ``scale_range``."""

    def __init__(self, target_size, scale_range=(0.1, 2.0), interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
        super().__init__(locals())


class RandomShortestSize(Op):
    """torchvision.transforms.v2's: the shorter side resized to one of ``min_size`` (drawn), the
    longer at most ``max_size``."""

    def __init__(self, min_size, max_size=None, interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__(locals())


class FixedSizeCrop(Op):
    """torchvision.transforms.v2's: a crop of at most ``size`` at a random place, padded at the
    bottom and right to ``size`` with ``fill``."""

    def __init__(self, size, fill=0, padding_mode="constant"):
        super().__init__(locals())


class RandomResizedCrop(Op):
    """Crops a random area (a ``scale`` of the image's, of aspect ``ratio``) and resizes it
    to ``size``; forkfeed decodes only that area of a JPEG."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=None):
        super().__init__(locals())


class RandomHorizontalFlip(Op):
    """Flips left to right with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__(locals())


class RandomVerticalFlip(Op):
    """Flips upside down with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__(locals())


class ColorJitter(Op):
    """Each factor a number x (drawn from [max(0, 1 - x), 1 + x]; for hue [-x, x]) or a
    (min, max) pair; the four adjustments in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__(locals())


class RandomPhotometricDistort(Op):
    """torchvision.transforms.v2's (the SSD recipe's): brightness, contrast, saturation and
    hue each with probability ``p`` (factors drawn as ColorJitter draws them), contrast
    before or after saturation and hue by a coin, then with probability ``p`` the channels
    in a random order. Masks and boxes are left alone."""

    def __init__(self, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
                 hue=(-0.05, 0.05),
                 p=0.5):
        super().__init__(locals())


class RandomGrayscale(Op):
    """Makes the sample gray (three equal channels) with probability ``p``."""

    def __init__(self, p=0.1):
        super().__init__(locals())


class Grayscale(Op):
    """Makes the sample gray (ITU-R 601-2 luma, as torchvision); the batch keeps three channels."""

    def __init__(self, num_output_channels=1):
        super().__init__(locals())


class GaussianBlur(Op):
    """Blurs with a ``kernel_size`` Gaussian of a sigma drawn from ``sigma`` (a number or (min, max))."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__(locals())


class RandomRotation(Op):
    """Rotates by an angle drawn from ``degrees`` (x: [-x, x], or (min, max)), filling with ``fill``."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__(locals())


class RandomAffine(Op):
    """Rotates, translates, scales and shears by amounts drawn from the arguments' ranges."""

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__(locals())


class RandomPosterize(Op):
    """Keeps ``bits`` bits of each channel, with probability ``p``."""

    def __init__(self, bits, p=0.5):
        super().__init__(locals())


class RandomSolarize(Op):
    """Inverts the pixels at or above ``threshold``, with probability ``p``."""

    def __init__(self, threshold, p=0.5):
        super().__init__(locals())


class RandomAutocontrast(Op):
    """Stretches each channel to the full range, with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__(locals())


class RandomEqualize(Op):
    """Equalizes each channel's histogram, with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__(locals())


class RandomAdjustSharpness(Op):
    """Sharpens by ``sharpness_factor`` (below 1 blurs), with probability ``p``."""

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(locals())


class RandomInvert(Op):
    """Inverts the colours, with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__(locals())


class AutoAugment(Op):
    """AutoAugment's learned ``policy``: two ops of a sub-policy drawn per sample."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(locals())


class RandAugment(Op):
    """``num_ops`` ops drawn per sample, each of ``magnitude`` out of ``num_magnitude_bins``."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__(locals())


class TrivialAugmentWide(Op):
    """One op per sample, of a magnitude drawn too (torchvision's ResNet-50 recipe uses it)."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(locals())


class AugMix(Op):
    """Mixes ``mixture_width`` chains of ops with the sample by Dirichlet and Beta(``alpha``) weights."""

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__(locals())


class Normalize(Op):
    """``(x / 255 - mean) / std`` per channel, making the batch float32. Unlike
    torchvision's, mean and std may be left out: they are then the loader's ``mean`` and
    ``std`` options (ImageNet's unless given)."""

    def __init__(self, mean=None, std=None, inplace=False):
        super().__init__(locals())


class RandomErasing(Op):
    """Erases a random rectangle; ``value`` is a number, a per-channel tuple or "random"."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__(locals())


# Every op by name, in the order above.
_OPS = {op.__name__: op for op in Op.__subclasses__()}

# What torchvision's objects that have no op here become, for the message that refuses them.
_TORCHVISION_HINTS = {
    "ToTensor": "leave it out: batches are tensors already, and Normalize() makes them float32",
    "PILToTensor": "leave it out: batches are tensors already (uint8 without Normalize())",
    "ConvertImageDtype": "leave it out: Normalize() makes the batch float32; without it, it is uint8",
    "Compose": "pass the list of its ops (forkfeed.transforms objects) or the string form",
}


def pipeline_spec(transform: Union[str, Sequence[Union[Op, str]]]) -> str:
    """The spec text of a pipeline: a str as it is (``"train"``, ``"eval"`` or ops), a list
    or tuple of ops (or of spec strings) joined with ", ". Refuses torchvision's own
    objects, batch-level ops and anything else with a TypeError naming ``transform``."""
    if isinstance(transform, str):
        return transform
    if not isinstance(transform, (list, tuple)):
        raise TypeError(f"transform must be a str (\"train\", \"eval\" or a pipeline such as "
                        f"\"RandomResizedCrop(224), RandomHorizontalFlip()\") or a list of "
                        f"forkfeed.transforms ops, got {_describe(transform)}{_torchvision_hint(transform)}")
    if not transform:
        raise ValueError("transform is an empty list: give at least one op, or leave transform out for "
                         "\"train\"")
    parts = []
    for i, op in enumerate(transform):
        if isinstance(op, (Op, str)):
            parts.append(str(op))
        elif isinstance(op, (MixUp, CutMix, MixUpOrCutMix)):
            raise TypeError(f"transform[{i}] is {type(op).__name__}, which mixes whole batches: call it on "
                            "each batch in the training loop (images, targets = mix(batch)), "
                            "not in the loader")
        elif type(op).__module__.startswith("torchvision"):
            raise TypeError(f"transform[{i}] is torchvision's {type(op).__name__}, which forkfeed's C++ "
                            f"workers cannot run{_torchvision_hint(op)}")
        else:
            raise TypeError(f"transform[{i}] is {_describe(op)}; a pipeline's ops are forkfeed.transforms "
                            "objects or spec strings")
    return ", ".join(parts)


def _describe(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__


def _torchvision_hint(value: Any) -> str:
    """What to write instead of one of torchvision's transforms, or "" for anything else."""
    if not type(value).__module__.startswith("torchvision"):
        return ""
    name = type(value).__name__
    if name in _TORCHVISION_HINTS:
        return f": {_TORCHVISION_HINTS[name]}"
    if name in _OPS:
        return f": use forkfeed.transforms.{name} (the same arguments) or the string form \"{name}(...)\""
    return f": forkfeed has no {name}; its ops are {', '.join(_OPS)}"
