"""forkfeed.transforms: the ops print the spec text torchvision would read back as the same
transform, a list of them reaches the C++ side as one string, torchvision's own objects
are refused with what to write instead, and MixUp and CutMix mix batches as torchvision's
references do, drawing only from (seed, epoch, batch index)."""

import enum
import inspect

import pytest
import torch

import forkfeed
from forkfeed import transforms as T

torchvision_transforms = pytest.importorskip("torchvision.transforms",
                                             reason="the ops are checked against torchvision's "
                                                    "(python3-torchvision)")

# One of each op, with arguments that differ from the defaults, and its spec text.
SAMPLES = [
    (T.Resize(232, interpolation=T.InterpolationMode.BICUBIC, max_size=300, antialias=True),
     "Resize(232, interpolation=InterpolationMode.BICUBIC, max_size=300, antialias=True)"),
    (T.CenterCrop((224, 200)), "CenterCrop((224, 200))"),
    (T.RandomCrop(32, padding=4, padding_mode="reflect"),
     'RandomCrop(32, padding=4, padding_mode="reflect")'),
    (T.RandomResize(260, 1040, antialias=False), "RandomResize(260, 1040, antialias=False)"),
    (T.RandomZoomOut(fill=(124, 116, 104), p=0.6), "RandomZoomOut(fill=(124, 116, 104), p=0.6)"),
    (T.RandomIoUCrop(sampler_options=[0.0, 0.5, 1.0], trials=10),
     "RandomIoUCrop(sampler_options=(0.0, 0.5, 1.0), trials=10)"),
    (T.ScaleJitter((1024, 1024), scale_range=(0.5, 1.5)),
     "ScaleJitter((1024, 1024), scale_range=(0.5, 1.5))"),
    (T.RandomShortestSize((480, 512, 544), max_size=1333),
     "RandomShortestSize((480, 512, 544), max_size=1333)"),
    (T.FixedSizeCrop((512, 512), fill=(123, 117, 104)), "FixedSizeCrop((512, 512), fill=(123, 117, 104))"),
    (T.RandomResizedCrop(176, scale=(0.25, 1.0)), "RandomResizedCrop(176, scale=(0.25, 1.0))"),
    (T.RandomHorizontalFlip(0.3), "RandomHorizontalFlip(p=0.3)"),
    (T.RandomVerticalFlip(p=1), "RandomVerticalFlip(p=1)"),
    (T.ColorJitter(0.4, 0.4, 0.4, hue=0.1),
     "ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)"),
    (T.RandomPhotometricDistort(hue=(-0.1, 0.1), p=1.0), "RandomPhotometricDistort(hue=(-0.1, 0.1), p=1.0)"),
    (T.RandomGrayscale(0.2), "RandomGrayscale(p=0.2)"),
    (T.Grayscale(3), "Grayscale(num_output_channels=3)"),
    (T.GaussianBlur(5, sigma=(0.5, 1.5)), "GaussianBlur(5, sigma=(0.5, 1.5))"),
    (T.RandomRotation(15, fill=[124, 116, 104]), "RandomRotation(15, fill=(124, 116, 104))"),
    (T.RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5),
     "RandomAffine(10, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5)"),
    (T.RandomPosterize(4), "RandomPosterize(4)"),
    (T.RandomSolarize(128.0, p=0.2), "RandomSolarize(128.0, p=0.2)"),
    (T.RandomAutocontrast(0.75), "RandomAutocontrast(p=0.75)"),
    (T.RandomEqualize(p=0.25), "RandomEqualize(p=0.25)"),
    (T.RandomAdjustSharpness(2, p=0.4), "RandomAdjustSharpness(2, p=0.4)"),
    (T.RandomInvert(0.1), "RandomInvert(p=0.1)"),
    (T.AutoAugment(interpolation="bilinear"), "AutoAugment(interpolation=InterpolationMode.BILINEAR)"),
    (T.RandAugment(num_ops=3, magnitude=5), "RandAugment(num_ops=3, magnitude=5)"),
    (T.TrivialAugmentWide(fill=[128, 128, 128]), "TrivialAugmentWide(fill=(128, 128, 128))"),
    (T.AugMix(severity=2, all_ops=False), "AugMix(severity=2, all_ops=False)"),
    (T.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)),
     "Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))"),
    (T.RandomErasing(0.1, value="random"), 'RandomErasing(p=0.1, value="random")'),
]


# Ops of torchvision.transforms.v2 (0.16 and later), their arguments and defaults as v2 has them.
V2_ONLY = {
    "RandomZoomOut": [("fill", 0), ("side_range", (1.0, 4.0)), ("p", 0.5)],
    "ScaleJitter": [("target_size", inspect.Parameter.empty), ("scale_range", (0.1, 2.0)),
                    ("interpolation", T.InterpolationMode.BILINEAR), ("antialias", True)],
    "RandomShortestSize": [("min_size", inspect.Parameter.empty), ("max_size", None),
                           ("interpolation", T.InterpolationMode.BILINEAR), ("antialias", True)],
    "FixedSizeCrop": [("size", inspect.Parameter.empty), ("fill", 0), ("padding_mode", "constant")],
    "RandomIoUCrop": [("min_scale", 0.3), ("max_scale", 1.0), ("min_aspect_ratio", 0.5),
                      ("max_aspect_ratio", 2.0),
                      ("sampler_options", None), ("trials", 40)],
    "RandomResize": [("min_size", inspect.Parameter.empty), ("max_size", inspect.Parameter.empty),
                     ("interpolation", T.InterpolationMode.BILINEAR), ("antialias", True)],
    "RandomPhotometricDistort": [("brightness", (0.875, 1.125)), ("contrast", (0.5, 1.5)),
                                 ("saturation", (0.5, 1.5)),
                                 ("hue", (-0.05, 0.05)), ("p", 0.5)],
}


def test_every_op_has_a_sample():
    assert {type(op).__name__ for op, _ in SAMPLES} == set(T._OPS)
    assert len(T._OPS) == 31


def op_classes():
    """The names of the Op subclasses forkfeed.transforms defines, at any depth."""
    found, todo = set(), list(T.Op.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls.__module__ == T.__name__:
            found.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return found


def test_the_op_classes_are_the_cpp_op_table():
    """A class for every op of the C++ table (transforms/op_table.cpp) and none for an op it
    lacks, which the loader would refuse: a name on one side only is listed."""
    table = forkfeed._forkfeed.op_names()
    assert len(table) == len(set(table)), sorted(n for n in table if table.count(n) > 1)
    classes = op_classes()
    only_python, only_cpp = sorted(classes - set(table)), sorted(set(table) - classes)
    assert not only_python and not only_cpp, (
        f"forkfeed.transforms' op classes differ from the C++ op table: only in "
        f"Python {only_python}, only in C++ {only_cpp}")


@pytest.mark.parametrize("name", sorted(T._OPS))
def test_signature_is_torchvisions(name):
    """The same arguments in the same order with the same defaults; only Normalize's mean
    and std may be left out (the loader's then)."""
    ours = inspect.signature(T._OPS[name].__init__).parameters
    if name in V2_ONLY:  # not in Debian's torchvision 0.14: transforms.v2's, written out
        assert [(key, p.default) for key, p in ours.items() if key != "self"] == V2_ONLY[name]
        return
    theirs = inspect.signature(getattr(torchvision_transforms, name).__init__).parameters
    assert list(ours) == list(theirs)
    for key, parameter in ours.items():
        default = theirs[key].default
        if name == "Normalize" and key in ("mean", "std"):
            assert parameter.default is None and default is inspect.Parameter.empty
        elif isinstance(default, enum.Enum):
            assert parameter.default.value == default.value, key
        else:
            assert parameter.default == default, key


@pytest.mark.parametrize("op,text", SAMPLES, ids=[type(op).__name__ for op, _ in SAMPLES])
def test_str_is_the_spec_and_reads_back(op, text):
    assert str(op) == text
    assert eval(text, vars(T)) == op
    # torchvision reads the same text as its own transform: the names, argument names and
    # spellings are its own.
    if type(op).__name__ in V2_ONLY:  # torchvision 0.14 has no v2 to read it
        return
    tv = {name: getattr(torchvision_transforms, name)
          for name in (*T._OPS, "InterpolationMode", "AutoAugmentPolicy") if name not in V2_ONLY}
    built = eval(text, tv)
    assert type(built).__name__ == type(op).__name__


def test_defaults_are_left_out():
    assert str(T.RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(0.75, 4 / 3))) == "RandomResizedCrop(224)"
    assert str(T.Normalize()) == "Normalize()"
    assert str(T.AutoAugment(T.AutoAugmentPolicy.IMAGENET)) == "AutoAugment()"
    assert str(T.ColorJitter(0.0, hue=0)) == "ColorJitter()"


def test_floats_round_trip_exactly():
    p = 0.1 + 0.2  # 0.30000000000000004: repr keeps every bit
    assert eval(str(T.RandomErasing(p)), vars(T)).p == p
    assert str(T.Resize(5, interpolation=torchvision_transforms.InterpolationMode.NEAREST)) == \
        "Resize(5, interpolation=InterpolationMode.NEAREST)"


def test_arrays_and_tensors_become_tuples():
    import numpy

    op = T.Normalize(numpy.array([0.5, 0.25, 0.125]), torch.tensor([0.5, 0.5, 0.5]))
    assert str(op) == "Normalize(mean=(0.5, 0.25, 0.125), std=(0.5, 0.5, 0.5))"
    assert op.mean == (0.5, 0.25, 0.125)


def test_values_without_a_spelling_are_refused_naming_op_and_argument():
    with pytest.raises(TypeError, match=r"Resize: size=.*object"):
        T.Resize(object())
    with pytest.raises(ValueError, match=r"RandomRotation: degrees=nan"):
        T.RandomRotation(float("nan"))
    with pytest.raises(ValueError, match=r"RandomResizedCrop: interpolation='cubic' is not one of .*BICUBIC"):
        T.RandomResizedCrop(224, interpolation="cubic")
    with pytest.raises(ValueError, match="quote"):
        str(T.RandomCrop(8, padding_mode='a"b'))


def test_what_torchvision_refuses_is_refused_when_the_loader_opens(dataset):
    # torchvision 0.14 raises for these (Resize: "Size should be int or sequence"; the
    # others at the first sample, drawing in float32: "from is out of bounds for float").
    for transform, message in (([T.Resize(100.0), T.CenterCrop(16)],
                                r"Resize's size must be an int or a sequence"),
                               ([T.CenterCrop(16), T.RandomRotation(1e300)],
                                r"RandomRotation's degrees .*3\.40282e\+38"),
                               ([T.CenterCrop(16), T.RandomAffine(0, shear=1e308)], r"RandomAffine's shear"),
                               ([T.CenterCrop(16), T.RandomAffine(0, scale=(1e300, 1e300))],
                                r"RandomAffine's scale"),
                               ([T.Resize(20000), T.RandomCrop(16)],
                                r"Resize\(20000\) makes images of at least 20000x20000 .* over max_pixels")):
        with pytest.raises(ValueError, match=message):
            forkfeed.Loader(dataset, transform=transform, workers=1)
    # ... and what it takes, as it takes it: RandomResizedCrop(1e2) is its int(1e2).
    with forkfeed.Loader(dataset, transform=[T.RandomResizedCrop(1e2)], workers=1, batch_size=2) as loader:
        images, _ = next(iter(loader))
        assert tuple(images.shape[1:3]) == (100, 100)


# A list of ops is the C++ side's one string ---------------------------------------------------------------


def test_pipeline_spec_joins_ops_and_strings():
    ops = [T.RandomResizedCrop(176), T.RandomHorizontalFlip(), T.TrivialAugmentWide(), T.Normalize(),
           T.RandomErasing(p=0.1)]
    spec = ("RandomResizedCrop(176), RandomHorizontalFlip(), TrivialAugmentWide(), Normalize(), "
            "RandomErasing(p=0.1)")
    assert T.pipeline_spec(ops) == spec
    assert T.pipeline_spec(tuple(ops)) == spec
    assert T.pipeline_spec(spec) == spec
    assert T.pipeline_spec("train") == "train"
    assert T.pipeline_spec([T.CenterCrop(224), "Normalize()"]) == "CenterCrop(224), Normalize()"


class _Opened(Exception):
    """Raised by the stand-in for the extension, with the options it was given."""


@pytest.mark.parametrize("face", ["Loader", "Client"])
def test_loader_and_client_pass_a_list_as_the_joined_string(monkeypatch, face):
    def record(options, *args, **kwargs):
        raise _Opened(options)

    monkeypatch.setattr(forkfeed._forkfeed, face, record)
    ops = [T.RandomResizedCrop(32), T.RandomHorizontalFlip(p=0.25), T.Normalize()]
    for transform, expected in ((ops, "RandomResizedCrop(32), RandomHorizontalFlip(p=0.25), Normalize()"),
                                ("eval", "eval"), (None, None)):
        with pytest.raises(_Opened) as opened:
            getattr(forkfeed, face)("/nowhere", transform=transform)
        assert opened.value.args[0].get("transform") == expected


def test_torchvision_objects_are_refused_with_what_to_write():
    tv = torchvision_transforms
    cases = [
        ([tv.RandomResizedCrop(224)], r"transform\[0\] is torchvision's RandomResizedCrop.*"
                                      r"forkfeed\.transforms\.RandomResizedCrop .*string form"),
        ([T.CenterCrop(8), tv.ToTensor()], r"transform\[1\] is torchvision's ToTensor.*leave it out"),
        ([tv.Lambda(abs)], r"forkfeed has no Lambda; its ops are Resize, CenterCrop"),
        (tv.Compose([tv.CenterCrop(8)]), r"^transform must be .*Compose: pass the list of its ops"),
    ]
    for transform, message in cases:
        with pytest.raises(TypeError, match=message):
            forkfeed.Loader("/nowhere", transform=transform)


def test_other_values_are_refused_naming_transform():
    for transform, error, message in ((42, TypeError, r"^transform must be a str"),
                                      ([T.CenterCrop(8), 42], TypeError, r"transform\[1\] is int"),
                                      ([T.MixUp(10)], TypeError, r"transform\[0\] is MixUp, which mixes "
                                                                 r"whole batches"),
                                      ([], ValueError, r"transform is an empty list")):
        with pytest.raises(error, match=message):
            forkfeed.Loader("/nowhere", transform=transform)


# MixUp and CutMix ----------------------------------------------------------------------------------------

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                reason="no CUDA device"))]


def constant_batch(n=8, channels=3, height=16, width=16, device="cpu"):
    """Sample i all (i + 1), label i: which sample a pixel came from, and in what share,
    can be read off the result."""
    images = (torch.arange(n, dtype=torch.float32) + 1).view(n, 1, 1, 1).expand(n, channels, height, width)
    return images.contiguous().to(device), torch.arange(n, device=device)


@pytest.mark.parametrize("kind", [T.MixUp, T.CutMix])
@pytest.mark.parametrize("device", DEVICES)
def test_same_key_same_mix_other_key_other_mix(kind, device):
    images, labels = constant_batch(device=device)
    mix = kind(num_classes=10, p=1.0, alpha=1.0, seed=7)
    a = mix(images, labels, epoch=2, batch_index=5)
    b = kind(num_classes=10, p=1.0, alpha=1.0, seed=7)(images, labels, epoch=2, batch_index=5)
    assert a[0].device == images.device and a[1].device == images.device
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    for other in (dict(epoch=2, batch_index=6), dict(epoch=3, batch_index=5)):
        assert not torch.equal(a[1], mix(images, labels, **other)[1]), other
    assert not torch.equal(a[1], kind(num_classes=10, p=1.0, seed=8)(images, labels, epoch=2,
                                                                     batch_index=5)[1])
    if device == "cuda":  # the draws are the key's, not the device's
        cpu = mix(images.cpu(), labels.cpu(), epoch=2, batch_index=5)
        assert torch.allclose(cpu[0], a[0].cpu()) and torch.allclose(cpu[1], a[1].cpu())


@pytest.mark.parametrize("kind", [T.MixUp, T.CutMix])
def test_targets_are_one_hot_mixed_and_sum_to_one(kind):
    images, labels = constant_batch()
    for batch_index in range(20):
        mixed, targets = kind(num_classes=10, p=0.5)(images, labels, epoch=0, batch_index=batch_index)
        assert targets.shape == (8, 10) and targets.dtype == torch.float32
        assert torch.allclose(targets.sum(1), torch.ones(8))
        # Each sample weighs itself lambda and the previous one (the batch rolled by one) 1 - lambda.
        lam = targets[0, 0].item()
        for i in range(8):
            assert targets[i, i].item() == pytest.approx(lam)
            if lam < 1:
                assert targets[i, (i - 1) % 8].item() == pytest.approx(1 - lam)
        if lam == 1:  # not mixed (by p, or a CutMix box too small to cover a pixel): the batch as it came
            assert torch.equal(mixed, images)


def test_mixup_mixes_the_images_as_the_targets():
    images, labels = constant_batch()
    mixed, targets = T.MixUp(num_classes=10, p=1.0, alpha=0.2)(images, labels, epoch=1, batch_index=3)
    for i in range(8):
        lam = targets[i, i].item()
        assert torch.allclose(mixed[i], lam * images[i] + (1 - lam) * images[(i - 1) % 8])


def lambdas(kind, alpha, draws=3000, p=1.0):
    mix = kind(num_classes=2, p=p, alpha=alpha, seed=11)
    images, labels = constant_batch(n=2, height=32, width=32)
    return [mix(images, labels, epoch=0, batch_index=b)[1][0, 0].item() for b in range(draws)]


def test_mixup_lambda_is_beta_alpha_alpha():
    for alpha in (0.2, 1.0):
        drawn = lambdas(T.MixUp, alpha)
        mean = sum(drawn) / len(drawn)
        variance = sum((x - mean) ** 2 for x in drawn) / len(drawn)
        # Beta(a, a): mean a / 2a = 1/2, variance 1 / (4 (2a + 1)); the standard error of the
        # mean over 3000 draws is below 0.01.
        assert mean == pytest.approx(0.5, abs=0.04)
        assert variance == pytest.approx(1 / (4 * (2 * alpha + 1)), rel=0.1)
    assert sum(x < 1 for x in lambdas(T.MixUp, 1.0, draws=2000, p=0.5)) / 2000 == pytest.approx(0.5, abs=0.05)


def test_cutmix_box_area_is_the_targets_lambda():
    images, labels = constant_batch(height=24, width=40)
    mix = T.CutMix(num_classes=10, p=1.0, alpha=1.0)
    for batch_index in range(50):
        mixed, targets = mix(images, labels, epoch=0, batch_index=batch_index)
        for i in range(8):
            pasted = (mixed[i] == images[(i - 1) % 8]).all(0)  # pixels of the previous sample
            lam = 1 - pasted.sum().item() / (24 * 40)
            assert targets[i, i].item() == pytest.approx(lam)
            if lam < 1:
                # one box, the same in every sample
                rows, cols = pasted.any(1).nonzero(), pasted.any(0).nonzero()
                assert pasted.sum().item() == len(rows) * len(cols)
                assert (mixed[i] == images[i]).all(0).sum().item() == round(lam * 24 * 40)
    # The box is drawn for 1 - lambda and clipped at the borders, so the corrected lambda
    # is at least the drawn one: its mean over Beta(1, 1) is above 1/2 (0.70 for 32x32, by
    # 200,000 draws of CutMix.box; over 1000 draws its standard error is below 0.006).
    drawn = lambdas(T.CutMix, 1.0, draws=1000)
    assert 0.5 < sum(drawn) / len(drawn) < 0.73


def test_mix_or_cutmix_picks_one_per_batch_by_the_key():
    images, labels = constant_batch()
    mixup, cutmix = T.MixUp(num_classes=10, p=1.0, alpha=0.2), T.CutMix(num_classes=10, p=1.0, alpha=1.0)
    either = T.MixUpOrCutMix([mixup, cutmix])
    picked = []
    for batch_index in range(200):
        out = either(images, labels, epoch=4, batch_index=batch_index)
        again = either(images, labels, epoch=4, batch_index=batch_index)
        assert torch.equal(out[0], again[0])
        by_mixup = mixup(images, labels, epoch=4, batch_index=batch_index)
        by_cutmix = cutmix(images, labels, epoch=4, batch_index=batch_index)
        if torch.equal(out[0], by_mixup[0]) and torch.equal(out[1], by_mixup[1]):
            picked.append("mixup")
        else:
            assert torch.equal(out[0], by_cutmix[0]) and torch.equal(out[1], by_cutmix[1])
            picked.append("cutmix")
    assert 70 < picked.count("mixup") < 130
    only_cutmix = T.MixUpOrCutMix([mixup, cutmix], p=[0, 1])
    out = only_cutmix(images, labels, epoch=0, batch_index=0)
    assert torch.equal(out[0], cutmix(images, labels, epoch=0, batch_index=0)[0])
    with pytest.raises(ValueError, match="one seed"):
        T.MixUpOrCutMix([mixup, T.CutMix(num_classes=10, seed=1)])


@pytest.mark.parametrize("mix", [T.MixUp(num_classes=10), T.MixUpOrCutMix([T.MixUp(10), T.CutMix(10)])])
def test_a_forkfeed_batch_carries_its_key(mix):
    images, labels = constant_batch()
    batch = forkfeed.Batch(images, labels, list(range(8)), 3, 9)
    by_batch = mix(batch)
    by_key = mix(images, labels, epoch=3, batch_index=9)
    assert torch.equal(by_batch[0], by_key[0]) and torch.equal(by_batch[1], by_key[1])
    with pytest.raises(TypeError, match="epoch= and batch_index="):
        mix(images, labels)
    with pytest.raises(TypeError, match="takes the epoch and index from the batch"):
        mix(batch, epoch=3)


def test_batches_mixing_cannot_take_are_refused_saying_what_to_do():
    images, labels = constant_batch()
    with pytest.raises(TypeError, match=r"float images.*torch.uint8.*Normalize\(\)"):
        T.MixUp(10)(images.to(torch.uint8), labels, epoch=0, batch_index=0)
    with pytest.raises(ValueError, match=r"looks NHWC.*layout=\"nchw\""):
        T.CutMix(10, p=1.0)(images.permute(0, 2, 3, 1), labels, epoch=0, batch_index=0)
    with pytest.raises(TypeError, match="int64 class indices"):
        T.MixUp(10)(images, labels.to(torch.int32), epoch=0, batch_index=0)
    with pytest.raises(ValueError, match="batch_index must be a non-negative int"):
        T.MixUp(10)(images, labels, epoch=0, batch_index=-1)
    with pytest.raises(ValueError, match="alpha"):
        T.CutMix(10, alpha=0)


# numpy's Beta sampler does not return for alpha near 1e-10, and an infinite alpha draws NaN
# lambdas (MixUp) or fails in the box's arithmetic (CutMix): both are refused when made.
BAD_ALPHAS = [1e-10, 1e-4, 0.0, -1.0, 1e4, float("inf"), float("-inf"), float("nan"), True, "1.0", None]


@pytest.mark.parametrize("kind", [T.MixUp, T.CutMix])
@pytest.mark.parametrize("alpha", BAD_ALPHAS, ids=repr)
def test_alpha_outside_its_range_is_refused_naming_it(kind, alpha):
    with pytest.raises(ValueError, match=rf"{kind.__name__}: alpha .*finite.* from 0.001 to 1000, got"):
        kind(10, p=1.0, alpha=alpha)


@pytest.mark.parametrize("kind", [T.MixUp, T.CutMix])
def test_alpha_at_the_ends_of_its_range_mixes(kind):
    images, labels = constant_batch()
    for alpha in (1e-3, 1e3):
        mixed, targets = kind(10, p=1.0, alpha=alpha)(images, labels, epoch=0, batch_index=0)
        assert torch.isfinite(mixed).all() and torch.allclose(targets.sum(1), torch.ones(8))


@pytest.mark.parametrize("kind", [T.MixUp, T.CutMix])
@pytest.mark.parametrize("p", [-0.1, 1.5, float("inf"), float("nan"), True, "0.5", None], ids=repr)
def test_p_outside_0_to_1_is_refused_naming_it(kind, p):
    with pytest.raises(ValueError, match=rf"{kind.__name__}: p is a probability, a number from 0 to 1, got"):
        kind(10, p=p)


@pytest.mark.parametrize("p", [[1, float("inf")], [1, float("nan")], [-1, 2], [0, 0], [1]], ids=repr)
def test_mix_or_cutmix_weights_must_be_finite(p):
    with pytest.raises(ValueError, match="MixUpOrCutMix: p must be 2 finite weights"):
        T.MixUpOrCutMix([T.MixUp(10), T.CutMix(10)], p=p)


# Ranks of a data-parallel job -------------------------------------------------------------------------------


def mix_lambdas(mix, batches=8):
    images, labels = constant_batch()
    return [mix(images, labels, epoch=1, batch_index=b)[1][0, 0].item() for b in range(batches)]


@pytest.mark.parametrize("kind", [T.MixUp, T.CutMix])
def test_each_rank_draws_its_own_lambda_and_the_same_rank_the_same(kind):
    by_rank = [mix_lambdas(kind(10, p=1.0, alpha=1.0, seed=5, rank=rank)) for rank in range(4)]
    for rank in range(4):  # a resumed run on the same rank: the same draws
        assert by_rank[rank] == mix_lambdas(kind(10, p=1.0, alpha=1.0, seed=5, rank=rank))
    for a in range(4):
        for b in range(a + 1, 4):
            assert all(x != y for x, y in zip(by_rank[a], by_rank[b])), (a, b)
    if kind is T.CutMix:  # the box too, not only its area
        images, labels = constant_batch(height=24, width=40)
        boxes = [kind(10, p=1.0, seed=5, rank=rank)(images, labels, epoch=1, batch_index=0)[0]
                 for rank in (0, 1)]
        assert not torch.equal(*boxes)


def test_each_rank_picks_mixup_or_cutmix_for_itself():
    def picks(rank):
        either = T.MixUpOrCutMix([T.MixUp(10, p=1.0, alpha=0.2, rank=rank), T.CutMix(10, p=1.0, rank=rank)])
        mixup = T.MixUp(10, p=1.0, alpha=0.2, rank=rank)
        images, labels = constant_batch()
        return [torch.equal(either(images, labels, epoch=0, batch_index=b)[1],
                            mixup(images, labels, epoch=0, batch_index=b)[1]) for b in range(64)]

    assert picks(0) == picks(0) and picks(3) == picks(3)
    assert picks(0) != picks(3)
    with pytest.raises(ValueError, match="one rank"):
        T.MixUpOrCutMix([T.MixUp(10, rank=0), T.CutMix(10, rank=1)])


def test_rank_defaults_to_the_loaders(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    assert T.MixUp(10).rank == 0
    monkeypatch.setenv("RANK", "3")  # torchrun's, when torch.distributed is not initialised
    assert T.MixUp(10).rank == 3 and T.CutMix(10).rank == 3
    assert mix_lambdas(T.MixUp(10, p=1.0)) == mix_lambdas(T.MixUp(10, p=1.0, rank=3))
    assert T.MixUp(10, rank=1).rank == 1  # rank= wins over $RANK
    assert "rank=3" in repr(T.MixUp(10))
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(ValueError, match=r"MixUp: RANK='one' must be an integer \(or pass rank=\)"):
        T.MixUp(10)
    for rank in (-1, 1.5, True):
        with pytest.raises(ValueError, match="rank must be a non-negative int"):
            T.MixUp(10, rank=rank)


def test_rank_defaults_to_torch_distributed_when_initialised(tmp_path, monkeypatch):
    import torch.distributed as dist

    if not dist.is_available() or dist.is_initialized():
        pytest.skip("torch.distributed is unavailable or already initialised")
    monkeypatch.setenv("RANK", "5")  # torch.distributed's rank wins
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        assert T.MixUp(10).rank == 0
    finally:
        dist.destroy_process_group()


# Through the C++ workers.


PIPELINE = [T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.TrivialAugmentWide(), T.Normalize(),
            T.RandomErasing(p=0.25)]


def test_a_pipeline_with_normalize_gives_float32_of_its_crop_size(dataset):
    with forkfeed.Loader(dataset, batch_size=4, workers=2, seed=1, transform=PIPELINE) as loader, \
            forkfeed.Loader(dataset, batch_size=4, workers=2, seed=1,
                            transform=", ".join(map(str, PIPELINE))) as same:
        batch, again = loader.next_batch(), same.next_batch()
        assert batch.images.dtype == torch.float32 and tuple(batch.images.shape) == (4, 3, 32, 32)
        assert torch.equal(batch.images, again.images)  # the list is the string
        images, targets = T.MixUpOrCutMix([T.MixUp(loader.num_classes, p=1.0, alpha=0.2, seed=1),
                                           T.CutMix(loader.num_classes, p=1.0, seed=1)])(batch)
        assert images.shape == batch.images.shape and torch.allclose(targets.sum(1), torch.ones(4))


def test_a_pipeline_without_normalize_gives_uint8(dataset):
    with forkfeed.Loader(dataset, batch_size=4, workers=1,
                         transform=[T.Resize(40), T.CenterCrop(24)]) as loader:
        batch = loader.next_batch()
        assert batch.images.dtype == torch.uint8 and tuple(batch.images.shape) == (4, 24, 24, 3)
        with pytest.raises(TypeError, match=r"Normalize\(\)"):
            T.MixUp(loader.num_classes)(batch)


def test_the_segmentation_references_random_scale_and_padded_crop(dataset):
    # The images are smaller than the crop at most of the drawn scales: padded with fill.
    transform = [T.RandomResize(16, 48), T.RandomCrop(40, pad_if_needed=True, fill=(1, 2, 3)),
                 T.RandomHorizontalFlip()]
    with forkfeed.Loader(dataset, batch_size=8, workers=2, transform=transform) as loader:
        images = loader.next_batch().images
        assert tuple(images.shape) == (8, 40, 40, 3)
        assert (images.reshape(-1, 3) == torch.tensor([1, 2, 3], dtype=torch.uint8)).all(1).any()
    with pytest.raises(ValueError, match=r"RandomCrop's padding_mode 'reflect' is not supported"):
        forkfeed.Loader(dataset, batch_size=4,
                        transform=[T.RandomCrop(32, padding=4, padding_mode="reflect")])


def test_a_bad_op_or_argument_raises_naming_it(dataset):
    with pytest.raises(ValueError, match=r"unknown op 'RandomSpin'"):
        forkfeed.Loader(dataset, batch_size=4, transform=[T.RandomResizedCrop(32), "RandomSpin(3)"])
    with pytest.raises(ValueError, match=r"RandomHorizontalFlip's p must be .*, got 2"):
        forkfeed.Loader(dataset, batch_size=4, transform=[T.RandomResizedCrop(32),
                                                          T.RandomHorizontalFlip(p=2)])
