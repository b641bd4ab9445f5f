"""RandomPhotometricDistort (torchvision.transforms.v2's, the SSD recipe's; Debian's
torchvision 0.14 has no v2): with every range one value and p=1, each sample is one of the
twelve outcomes v2 can make — contrast before or after saturation and hue, times the six
orders of the channels — of torchvision 0.14's functional ops on the same image (within one
level, as the ops' own fidelity allows), and the draws reach all twelve; p=0 leaves the
image as it was."""

import io
import itertools

import numpy as np
import pytest
import torch

import forkfeed

F = pytest.importorskip("torchvision.transforms.functional")
from PIL import Image  # noqa: E402

from conftest import write_tar  # noqa: E402

FACTORS = dict(brightness=1.1, contrast=0.7, saturation=1.3, hue=0.04)
DISTORT = ("CenterCrop(32), RandomPhotometricDistort(brightness=(1.1, 1.1), contrast=(0.7, 0.7), "
           "saturation=(1.3, 1.3), hue=(0.04, 0.04), p={p})")


def outcomes(image: torch.Tensor) -> list:
    """v2's _transform on [3, H, W] uint8 for each coin and permutation, with 0.14's kernels."""
    out = []
    for contrast_before in (True, False):
        x = F.adjust_brightness(image, FACTORS["brightness"])
        if contrast_before:
            x = F.adjust_contrast(x, FACTORS["contrast"])
        x = F.adjust_hue(F.adjust_saturation(x, FACTORS["saturation"]), FACTORS["hue"])
        if not contrast_before:
            x = F.adjust_contrast(x, FACTORS["contrast"])
        out += [x[list(order)] for order in itertools.permutations(range(3))]
    return out


@pytest.fixture(scope="module")
def photo_shard(tmp_path_factory):
    root = tmp_path_factory.mktemp("distort")
    rng = np.random.default_rng(5)
    yy, xx = np.mgrid[0:32, 0:32]
    image = np.stack([xx * 7, yy * 5, (xx + yy) * 3], -1).astype(np.uint8) + rng.integers(0, 40, (32, 32, 3),
                                                                                          dtype=np.uint8)
    data = io.BytesIO()
    Image.fromarray(image, "RGB").save(data, "PNG")
    write_tar(root / "a.tar", [(f"{n:03d}.png", data.getvalue()) for n in range(48)])
    return root, torch.from_numpy(image).permute(2, 0, 1)


def test_each_sample_is_one_of_v2s_outcomes_and_the_draws_reach_all(photo_shard):
    root, image = photo_shard
    candidates = outcomes(image)
    seen = set()
    with forkfeed.Loader(shards=str(root), fields={"image": "png"}, transform=DISTORT.format(p=1.0),
                         batch_size=16,
                         seed=2) as loader:
        for batch in loader:
            for sample in batch["image"]:
                got = sample.permute(2, 0, 1).int()
                distance = [int((got - c.int()).abs().max()) for c in candidates]
                assert min(distance) <= 1, distance
                seen.add(int(np.argmin(distance)))
    assert seen == set(range(12)), seen


def test_p0_leaves_the_image_as_it_was(photo_shard):
    root, image = photo_shard
    with forkfeed.Loader(shards=str(root), fields={"image": "png"}, transform=DISTORT.format(p=0.0),
                         batch_size=48) as loader:
        batch = next(iter(loader))
    assert all(torch.equal(sample.permute(2, 0, 1), image) for sample in batch["image"])
