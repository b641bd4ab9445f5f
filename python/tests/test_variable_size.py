"""Samples of each their own size (max_size): a transform without a final crop or resize to
one size — detection's — makes each image field a list of [H_i, W_i, 3] (or [3, H_i, W_i])
views a batch, masks [H_i, W_i] beside them, boxes in each image's own pixels; a sample
over max_size is bad data naming it; forkfeed.image_list pads a list into one tensor and
the sizes, as torchvision's ImageList holds them."""

import numpy as np
import pytest
import torch

import forkfeed

from test_masks import PALETTE, blocks, png  # noqa: E402
from conftest import read_through_forkfeedd, write_tar  # noqa: E402


def sized_shards(root, samples: int = 12) -> list:
    """PNG images coloured by their masks' classes (PALETTE), each its own size, with the
    masks as grey PNGs."""
    root.mkdir(parents=True, exist_ok=True)
    masks, members = [], []
    for n in range(samples):
        mask = blocks(20 + 3 * n, 45 - 2 * n, n)
        masks.append(mask)
        members += [(f"s{n:03d}.png", png(PALETTE[mask], "RGB")), (f"s{n:03d}.seg.png", png(mask, "L"))]
    write_tar(root / "a.tar", members)
    return masks


FIELDS = {"image": "png", "seg": "seg.png:mask"}


def test_each_image_comes_at_its_own_size_with_its_mask(tmp_path):
    masks = sized_shards(tmp_path)
    seen = 0
    with forkfeed.Loader(shards=str(tmp_path), fields=FIELDS, transform="RandomHorizontalFlip()", max_size=64,
                         batch_size=5, workers=2, shuffle=False) as loader:
        for batch in iter(loader.next_batch, None):
            f = batch.fields
            assert isinstance(f["image"], list) and isinstance(f["seg"], list)
            for i, image, seg in zip(batch.indices, f["image"], f["seg"]):
                mask = torch.from_numpy(masks[i])
                assert image.dtype == torch.uint8 and tuple(image.shape) == (*mask.shape, 3)
                assert torch.equal(seg, mask) or torch.equal(seg, mask.flip(1))
                assert torch.equal(image, torch.from_numpy(PALETTE)[seg.long()])  # the same flip, if any
                seen += 1
    assert seen == len(masks)


@pytest.mark.parametrize("transform", [
    "RandomZoomOut(p=1.0, side_range=(1.0, 1.6)), RandomHorizontalFlip()",
    "RandomIoUCrop(), RandomVerticalFlip()",
])
def test_zoom_outs_and_iou_crops_keep_images_masks_and_boxes_together(tmp_path, transform):
    masks = sized_shards(tmp_path)
    import json
    members = []
    for n, mask in enumerate(masks):  # boxes of each class, COCO's x, y, w, h
        boxes, labels = [], []
        for k in np.unique(mask).tolist():
            ys, xs = np.nonzero(mask == k)
            boxes.append([int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1),
                          int(ys.max() - ys.min() + 1)])
            labels.append(k)
        members += [(f"s{n:03d}.png", png(PALETTE[mask], "RGB")), (f"s{n:03d}.seg.png", png(mask, "L")),
                    (f"s{n:03d}.json", json.dumps({"boxes": boxes, "labels": labels}).encode())]
    write_tar(tmp_path / "a.tar", members)
    fields = {**FIELDS, "boxes": "json:boxes(key=boxes, format=xywh)", "labels": "json:per_box(key=labels)"}
    sizes = set()
    with forkfeed.Loader(shards=str(tmp_path), fields=fields, transform=transform, max_size=80, batch_size=4,
                         workers=2, seed=5) as loader:
        for batch in loader:
            for image, seg, boxes in zip(batch["image"], batch["seg"], batch["boxes"]):
                assert tuple(image.shape) == (*seg.shape, 3)
                assert torch.equal(image, torch.from_numpy(PALETTE)[seg.long()])
                h, w = seg.shape
                assert (boxes[:, 2] <= w).all() and (boxes[:, 3] <= h).all()
                sizes.add((h, w))
    assert len(sizes) > 6


def test_float32_nchw_images_and_a_sample_over_max_size(tmp_path):
    sized_shards(tmp_path)
    with forkfeed.Loader(shards=str(tmp_path), fields={"image": "png"}, max_size=40, batch_size=4, workers=1,
                         transform="RandomShortestSize((20, 30), max_size=40), Normalize()",
                         shuffle=False) as loader:
        for batch in loader:
            for image in batch["image"]:
                assert image.dtype == torch.float32 and image.shape[0] == 3
                assert min(image.shape[1:]) in (20, 30) or max(image.shape[1:]) == 40
    with forkfeed.Loader(shards=str(tmp_path), fields={"image": "png"}, max_size=30, batch_size=4, workers=1,
                         transform="RandomHorizontalFlip()", shuffle=False) as loader:
        with pytest.raises(forkfeed.BadDataError, match=r"makes this .* over max_size 30 a side"):
            loader.next_batch()


def test_samples_of_each_their_own_size_need_fields_and_max_size(tmp_path, dataset):
    with pytest.raises(ValueError, match=r"give max_size, the longest side a sample may have"):
        forkfeed.Loader(dataset, transform="RandomHorizontalFlip()")
    with pytest.raises(ValueError, match=r"come as a list a batch: that needs fields"):
        forkfeed.Loader(dataset, transform="RandomHorizontalFlip()", max_size=64)
    with pytest.raises(ValueError, match=r"size 32 is one size for every sample"):
        forkfeed.Loader(dataset, transform="RandomHorizontalFlip()", max_size=64, size=32)


def test_image_list_pads_the_images_into_one_tensor_and_their_sizes(tmp_path):
    masks = sized_shards(tmp_path)
    with forkfeed.Loader(shards=str(tmp_path), fields={"image": "png"}, transform="RandomHorizontalFlip()",
                         max_size=64, batch_size=4, workers=1, shuffle=False, seed=2) as loader:
        batch = next(iter(loader))
        images, sizes = forkfeed.image_list(batch["image"], size_divisible=32)
        assert tuple(images.shape) == (4, 32, 64, 3)  # the tallest 29 and widest 45, up to 32s
        assert sizes.tolist() == [list(m.shape) for m in masks[:4]]
        for i, image in enumerate(batch["image"]):
            h, w = image.shape[:2]
            assert torch.equal(images[i, :h, :w], image)
            assert (images[i, h:] == 0).all() and (images[i, :, w:] == 0).all()
        chw = [torch.from_numpy(np.ascontiguousarray(np.moveaxis(i.numpy(), -1, 0))) for i in batch["image"]]
        planes, same = forkfeed.image_list(chw)
        assert tuple(planes.shape) == (4, 3, 29, 45) and torch.equal(same, sizes)


def test_images_of_each_their_own_size_come_alike_through_forkfeedd_local_and_remote(tmp_path, dataset,
                                                                                     monkeypatch):
    shards = tmp_path / "sized"
    sized_shards(shards)
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    options = dict(fields=FIELDS, transform="RandomZoomOut(p=0.7, side_range=(1.0, 1.5)), "
                                            "RandomHorizontalFlip()",
                   max_size=80, batch_size=5, workers=2, seed=3)

    def samples(source) -> dict:
        return {i: (batch.fields["image"][r].clone(), batch.fields["seg"][r].clone())
                for batch in iter(source.next_batch, None) for r, i in enumerate(batch.indices)}

    with forkfeed.Loader(shards=str(shards), **options) as loader:
        expected = samples(loader)
    assert len({tuple(seg.shape) for _, seg in expected.values()}) > 6
    for where, got in read_through_forkfeedd(tmp_path, dataset, shards, options, samples):
        assert got.keys() == expected.keys(), where
        for i, (image, seg) in got.items():
            assert torch.equal(image, expected[i][0]) and torch.equal(seg, expected[i][1]), (where, i)


def test_a_missing_image_is_empty_in_its_layout_and_image_list_tells_the_channels(tmp_path):
    masks = sized_shards(tmp_path / "a")
    members = [(f"s{n:03d}.{ext}", png(PALETTE[m] if ext == "png" else m, "RGB" if ext == "png" else "L"))
               for n, m in enumerate(masks[:3]) for ext in ("png", "seg.png")
               if not (n == 1 and ext == "png")]
    (tmp_path / "b").mkdir()
    write_tar(tmp_path / "b" / "a.tar", members)
    with forkfeed.Loader(shards=str(tmp_path / "b"), fields=FIELDS, missing="empty", max_size=64,
                         batch_size=3,
                         workers=1, shuffle=False, transform="RandomHorizontalFlip(), Normalize()") as loader:
        batch = next(iter(loader))
    assert [tuple(i.shape) for i in batch["image"]] == [(3, 20, 45), (3, 0, 0), (3, 26, 41)]
    planes, sizes = forkfeed.image_list(batch["image"])
    assert tuple(planes.shape) == (3, 3, 26, 45) and sizes.tolist() == [[20, 45], [0, 0], [26, 41]]
    # [3, 10, 3] and [3, 20, 3]: 3 channels first, or 3 last — only the caller knows.
    both = [torch.zeros(3, 10, 3), torch.zeros(3, 20, 3)]
    with pytest.raises(ValueError, match=r"could be either end .* pass channels_last"):
        forkfeed.image_list(both)
    assert forkfeed.image_list(both, channels_last=False)[1].tolist() == [[10, 3], [20, 3]]
    with pytest.raises(ValueError,
                       match=r"fill 300 does not fit: uint8 images take a whole number from 0 to 255"):
        forkfeed.image_list([np.zeros((8, 5, 3), np.uint8)], fill=300)


@pytest.mark.parametrize("make", [torch.zeros, lambda *shape, dtype: np.zeros(shape, dtype)],
                         ids=["torch", "numpy"])
def test_image_list_refuses_a_bad_argument_naming_it_its_value_and_what_is_allowed(make):
    # Found from outside: torch's own errors for fill=300 and for size_divisible 1e6, 2**40
    # or 2.5; fill=-1 padded uint8 tensors with 255 in silence; and a first image whose
    # channels did not fit was compared with itself ("image 0 ..., image 0 ...").
    u8 = torch.uint8 if make is torch.zeros else np.uint8
    f16 = torch.float16 if make is torch.zeros else np.float16
    images = [make(8, 5, 3, dtype=u8), make(6, 7, 3, dtype=u8)]
    for fill in [300, -1, 0.5, "0", None]:
        with pytest.raises(ValueError, match=rf"image_list\(\): fill {fill!r} .*: uint8 images take a whole "
                                             "number from 0 to 255"):
            forkfeed.image_list(images, fill=fill)
    with pytest.raises(ValueError, match=r"fill 1000000.0 .*float16 images take a number from -65504"):
        forkfeed.image_list([make(5, 6, 1, dtype=f16)], fill=1e6)
    assert forkfeed.image_list(images, fill=255)[0][0, 0, 6, 0] == 255
    assert forkfeed.image_list([make(5, 6, 1, dtype=f16)], fill=float("nan"),
                               size_divisible=8)[0].shape[1] == 8
    for divisible in [1e6, 2 ** 40, 2.5, 0, -32, True]:
        with pytest.raises(ValueError, match=rf"image_list\(\): size_divisible must be an integer from 1 to "
                                             rf"8192 .*, got {divisible!r}"):
            forkfeed.image_list(images, size_divisible=divisible)
    largest = forkfeed.image_list([make(5, 1, 1, dtype=u8)], channels_last=True, size_divisible=8192)[0]
    assert tuple(largest.shape[1:3]) == (8192, 8192)
    # The first image alone does not fit: it is named alone, not beside itself.
    with pytest.raises(ValueError, match=r"image 0 is uint8 \(8, 5, 7\): with channels_last=True its "
                                         r"channels \(7, the last dimension\) are not 1 to 4") as refused:
        forkfeed.image_list([make(8, 5, 7, dtype=u8), make(6, 7, 7, dtype=u8)], channels_last=True)
    assert "image 0 uint8" not in str(refused.value)
    with pytest.raises(ValueError, match=r"image 1 is uint8 \(6, 7, 1\), image 0 uint8 \(8, 5, 3\)"):
        forkfeed.image_list([images[0], make(6, 7, 1, dtype=u8)], channels_last=True)
    with pytest.raises(ValueError, match=r"image 1 is float16 \(6, 7, 3\), image 0 uint8 \(8, 5, 3\)"):
        forkfeed.image_list([images[0], make(6, 7, 3, dtype=f16)])


def test_slots_too_large_for_max_size_say_to_lower_it(tmp_path):
    sized_shards(tmp_path)
    with pytest.raises(forkfeed.Error,
                       match=r"field 'image' takes up to .* samples of max_size a side: lower max_size"):
        forkfeed.Loader(shards=str(tmp_path), fields=FIELDS, transform="RandomHorizontalFlip()",
                        max_size=8192,
                        batch_size=4096, workers=1)
