"""Boxes (a field "json:boxes(key=..., format=...)" or "boxes.npy:boxes") and the per_box
fields beside them (labels, areas): boxes that follow their image's draws as
torchvision.transforms.v2 moves BoundingBoxes, then sanitised as v2.SanitizeBoundingBoxes,
the per-box values of a dropped box dropped with it.

Against v2's box kernels on the parameters each sample drew (replayed from the follow_mask
tool's record; Debian's torchvision 0.14 has no v2, so the kernels of torchvision 0.16's
transforms/v2/functional/_geometry.py and _misc.py are transcribed below, on float32
tensors): within 1e-4, the same boxes kept. Through the Loader, against
torchvision.ops.masks_to_boxes of the sample's instance masks moved by the same draws:
within 1 pixel, the labels those of the instances."""

import io
import json
import os
import subprocess
import tempfile

import numpy as np
import pytest
import torch

import forkfeed

F = pytest.importorskip("torchvision.transforms.functional")
from torchvision.ops import masks_to_boxes  # noqa: E402
from PIL import Image  # noqa: E402

from conftest import read_through_forkfeedd, write_tar  # noqa: E402
from test_masks import PIPELINES, TOOL  # noqa: E402


def clamp(b: torch.Tensor, w: int, h: int) -> torch.Tensor:
    """v2's clamp_bounding_boxes, XYXY."""
    b = b.clone()
    b[:, 0::2] = b[:, 0::2].clamp(min=0, max=w)
    b[:, 1::2] = b[:, 1::2].clamp(min=0, max=h)
    return b


def v2_follow(boxes: np.ndarray, record: list, width: int, height: int):
    """v2's kernels on float32 XYXY boxes, step by step as the record says: crop_bounding_boxes,
    resize_bounding_boxes (clamped after, as forkfeed does: v2 leaves a resize unclamped),
    horizontal/vertical_flip_bounding_boxes, affine_bounding_boxes (a box without area before
    them dropped, and before each affine one that sanitising drops, as forkfeed does: v2
    would warp it into one); then _get_sanitize_bounding_boxes_mask(min_size=1,
    min_area=1). The boxes and what is kept."""
    b = torch.from_numpy(boxes.copy())
    w, h = width, height
    for r in (r for r in record if r[0] == "step"):  # the record prints its steps first
        x, y, cw, ch, ow, oh = map(int, r[1:7])
        cx, cy = 0.5 * (b[:, 0] + b[:, 2]), 0.5 * (b[:, 1] + b[:, 3])
        outside = ~((x < cx) & (cx < x + cw) & (y < cy) & (cy < y + ch)) if r[7] == "1" else None
        if outside is not None:  # RandomIoUCrop's crop holds the centre of a box, at least
            assert not outside.all(), record
        left, top = max(0, -x), max(0, -y)  # RandomCrop's padding: pad_bounding_boxes, then the crop
        right, bottom = max(0, x + cw - w), max(0, y + ch - h)
        if left or top or right or bottom:
            w, h = w + left + right, h + top + bottom
            b = clamp(b + torch.tensor([left, top, left, top], dtype=torch.float32), w, h)
            x, y = x + left, y + top
        b = clamp(b - torch.tensor([x, y, x, y], dtype=torch.float32), cw, ch)
        if outside is not None:
            b[outside] = 0  # v2.RandomIoUCrop marks them degenerate, for sanitising to drop
        w, h = cw, ch
        if (ow, oh) != (cw, ch):
            ratios = torch.tensor([ow / cw, oh / ch, ow / cw, oh / ch])
            b = clamp(b.mul(ratios).to(torch.float32), ow, oh)
            w, h = ow, oh
    b[~((b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1]))] = float("nan")  # forkfeed's: no area, no box
    for r in (r for r in record if r[0] != "step"):
        if r[0] == "hflip":
            b[:, [2, 0]] = b[:, [0, 2]].sub(w).neg()
        elif r[0] == "vflip":
            b[:, [1, 3]] = b[:, [3, 1]].sub(h).neg()
        else:
            b[~sanitised(b, w, h)] = float("nan")
            angle, tx, ty, scale, sx, sy = map(float, r[1:7])
            center = [w * 0.5, h * 0.5] if r[7] == "none" else [float(r[7]), float(r[8])]
            matrix = F._get_inverse_affine_matrix(center, angle, [tx, ty], scale, [sx, sy], inverted=False)
            transposed = torch.tensor(matrix, dtype=torch.float32).reshape(2, 3).T
            points = b[:, [[0, 1], [2, 1], [2, 3], [0, 3]]].reshape(-1, 2)
            points = torch.cat([points, torch.ones(points.shape[0], 1)], dim=-1)
            moved = torch.matmul(points, transposed).reshape(-1, 4, 2)
            lo, hi = torch.aminmax(moved, dim=1)
            b = clamp(torch.cat([lo, hi], dim=1), w, h)
    return b.numpy(), sanitised(b, w, h).numpy()


def sanitised(b, w: int, h: int):
    """v2's _get_sanitize_bounding_boxes_mask(min_size=1, min_area=1) of `b` on a w x h image."""
    ws, hs = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    keep = (ws >= 1) & (hs >= 1) & (b >= 0).all(dim=-1) & (ws * hs >= 1)
    return keep & (b[:, 0] <= w) & (b[:, 2] <= w) & (b[:, 1] <= h) & (b[:, 3] <= h)


def random_boxes(rng, width: int, height: int, count: int = 24) -> np.ndarray:
    """Boxes inside, across the edges, outside, thin, reversed and NaN."""
    x = rng.uniform(-0.3 * width, 1.2 * width, (count, 2))
    y = rng.uniform(-0.3 * height, 1.2 * height, (count, 2))
    boxes = np.stack([x.min(1), y.min(1), x.max(1), y.max(1)], 1).astype(np.float32)
    boxes[0] = [width * 0.3, height * 0.3, width * 0.3 + 0.6, height * 0.7]  # under a pixel wide
    boxes[1] = [10, 10, 5, 20]  # x2 < x1
    boxes[2] = [np.nan, 1, 5, 5]
    boxes[3] = [0, 0, width, height]
    return boxes


def follow_boxes(pipeline: str, seed: int, height: int, width: int, boxes: np.ndarray):
    """The follow_mask tool's boxes for `boxes` (moved, kept) and its record."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, n) for n in ("m.raw", "o.raw", "i.raw", "b.f32", "bo.f32")]
        np.zeros((height, width), np.uint8).tofile(paths[0])
        boxes.astype(np.float32).tofile(paths[3])
        done = subprocess.run([TOOL, pipeline, str(seed), str(height), str(width), paths[0], paths[1], "0",
                               paths[2], paths[3], paths[4]], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        out = np.fromfile(paths[4], np.float32).reshape(-1, 5)
        return out[:, :4], out[:, 4] == 1, [line.split() for line in done.stdout.splitlines()]


# The detection references' ops that draw from the boxes (RandomIoUCrop), with SSD's zoom-out.
IOU_PIPELINES = [
    "RandomZoomOut(fill=(1, 2, 3), side_range=(1.0, 3.0), p=0.8), RandomIoUCrop(), Resize((32, 32)), "
    "RandomHorizontalFlip()",
    "RandomIoUCrop(min_scale=0.1, sampler_options=(0.0, 0.5, 0.9)), Resize((40, 40)), RandomRotation(15)",
]


@pytest.mark.parametrize("pipeline", PIPELINES + IOU_PIPELINES)
def test_boxes_are_v2s_box_kernels_on_the_drawn_parameters(pipeline):
    kept = dropped = crops = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        height, width = 48 + seed % 3, 64 - seed % 5
        boxes = random_boxes(rng, width, height)
        got, got_keep, record = follow_boxes(pipeline, seed, height, width, boxes)
        want, want_keep = v2_follow(boxes, record, width, height)
        np.testing.assert_allclose(got, want, atol=1e-4, rtol=0, equal_nan=True,
                                   err_msg=f"{pipeline} seed {seed} {record}")
        assert np.array_equal(got_keep, want_keep), (pipeline, seed, record)
        kept += int(got_keep.sum())
        dropped += int((~got_keep).sum())
        crops += sum(r[0] == "step" and r[7] == "1" for r in record)
    assert kept > 0 and dropped > 0, "the draws must both keep and drop boxes"
    if "RandomIoUCrop" in pipeline:
        assert crops >= 4, "RandomIoUCrop must find crops among the boxes"


# Instances: rectangles of ids 1.. in a mask; their boxes, XYXY in pixels (a rectangle of
# columns x1..x2-1 is [x1, x2)).
def instances(rng, height: int, width: int, count: int, margin: int):
    mask = np.zeros((height, width), np.uint8)
    boxes = []
    for k in range(1, count + 1):
        w, h = rng.integers(3, (width - 2 * margin) // 2), rng.integers(3, (height - 2 * margin) // 2)
        x, y = rng.integers(margin, width - margin - w), rng.integers(margin, height - margin - h)
        mask[y:y + h, x:x + w] = k  # later ones on top: a covered box stays (torchvision keeps it too)
        boxes.append([x, y, x + w, y + h])
    return mask, np.array(boxes, np.float32)


def whole(mask: np.ndarray, box: np.ndarray) -> bool:
    """Whether all of `box` in `mask` is its instance's: no later instance covers part of it."""
    x1, y1, x2, y2 = box.astype(int)
    return bool((mask[y1:y2, x1:x2] == mask[y1, x1]).all())


def png(array: np.ndarray, mode: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(array, mode).save(out, "PNG")
    return out.getvalue()


def detection_shards(root, samples: int, margin: int, formats=("xywh",)) -> list:
    """Shards of an image, its instance mask and a .json of boxes (each sample in one of
    `formats`, in turn) and labels (the instances' ids); the masks and their boxes."""
    rng = np.random.default_rng(7)
    members, masks = [], []
    for n in range(samples):
        height, width = 56 + n % 4, 60 + n % 3
        mask, boxes = instances(rng, height, width, 5, margin)
        fmt = formats[n % len(formats)]
        x1, y1, x2, y2 = boxes.T.astype(np.float64)
        written = {"xyxy": np.stack([x1, y1, x2, y2], 1), "xywh": np.stack([x1, y1, x2 - x1, y2 - y1], 1),
                   "cxcywh": np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1)}[fmt]
        image = np.stack([mask * 40, mask * 7, 255 - mask * 30], -1).astype(np.uint8)
        members += [(f"s{n:03d}.png", png(image, "RGB")), (f"s{n:03d}.inst.png", png(mask, "L")),
                    (f"s{n:03d}.json", json.dumps({"boxes": written.tolist(), "labels": list(range(1, 6)),
                                                   "area": ((x2 - x1) * (y2 - y1)).tolist()}).encode())]
        masks.append((mask, boxes))
    root.mkdir(exist_ok=True)
    write_tar(root / "a.tar", members)
    return masks


DETECTION = "image=png, inst=inst.png:mask, boxes=json:boxes(key=boxes, format=xywh), " \
            "labels=json:per_box(key=labels), area=json:per_box(key=area, dtype=float32)"


@pytest.mark.parametrize("transform,margin,tolerance", [
    ("RandomCrop(40), RandomHorizontalFlip(), RandomVerticalFlip()", 0, 0.0),
    ("RandomResizedCrop(40, scale=(0.2, 1.0))", 0, 1.0),
    ("Resize(30), CenterCrop(28), RandomHorizontalFlip()", 0, 1.0),
    ("CenterCrop(48), RandomRotation(35)", 16, 1.0),
    ("CenterCrop(48), RandomAffine(degrees=20, translate=(0.05, 0.05), scale=(0.9, 1.1), shear=8)", 16, 1.0),
    # SSD's: a box RandomIoUCrop drops may still show (its centre is outside the crop).
    ("RandomZoomOut(p=0.7, side_range=(1.0, 2.0)), RandomIoUCrop(), Resize((48, 48)), RandomHorizontalFlip()",
     0, 1.0),
])
def test_the_loaders_boxes_are_the_boxes_of_their_moved_instance_masks(tmp_path, transform, margin,
                                                                       tolerance):
    masks = detection_shards(tmp_path, 24, margin)
    checked = delivered = 0
    with forkfeed.Loader(shards=str(tmp_path), fields=DETECTION, transform=transform, batch_size=6, workers=2,
                         seed=3) as loader:
        for batch in iter(loader.next_batch, None):
            f = batch.fields
            for i, inst, boxes, labels, area in zip(batch.indices, f["inst"], f["boxes"], f["labels"],
                                                    f["area"]):
                assert (boxes.dtype == torch.float32 and labels.dtype == torch.int64
                        and area.dtype == torch.float32)
                assert boxes.shape == (len(labels), 4) and area.shape == labels.shape
                # Instances that later ones do not cover, where any of them is left.
                present = [k for k in range(1, 6) if (inst == k).any()
                           and whole(masks[i][0], masks[i][1][k - 1])]
                for box, k in zip(boxes, labels.tolist()):
                    if k not in present:  # covered by later instances: its box stays, as in torchvision
                        continue
                    tight = masks_to_boxes((inst == k)[None])[0] + torch.tensor([0, 0, 1, 1])
                    assert (box - tight).abs().max() <= tolerance + 1e-4, (transform, k, box, tight)
                    checked += 1
                for k in set(present) - set(labels.tolist()):  # dropped: under a pixel across
                    if "RandomIoUCrop" in transform:
                        break
                    tight = masks_to_boxes((inst == k)[None])[0] + torch.tensor([0, 0, 1, 1])
                    assert min(tight[2] - tight[0], tight[3] - tight[1]) <= 1 + tolerance, (transform, k,
                                                                                            tight)
                delivered += len(labels)
        # Every box read was delivered or counted as dropped.
        assert delivered + loader.stats()["dropped_boxes"] == 24 * 5
    assert checked > 24 * 2


def test_every_box_format_and_source_gives_the_same_boxes(tmp_path):
    rng = np.random.default_rng(3)
    mask, boxes = instances(rng, 50, 70, 6, 0)
    labels = np.arange(10, 16)
    x1, y1, x2, y2 = boxes.T.astype(np.float64)
    xywh = np.stack([x1, y1, x2 - x1, y2 - y1], 1)
    written = [  # (the field's kind, the boxes written so)
        ("json:boxes(key=b)", boxes.tolist()),
        ("json:boxes(key=b, format=xywh)", xywh.tolist()),
        ("json:boxes(key=b, format=cxcywh)",
         np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], 1).tolist()),
        ("json:boxes(key=b, normalized=true)", (boxes / [70, 50, 70, 50]).tolist()),
        ("json:boxes(key=b, format=xywh, normalized=true)", (xywh / [70, 50, 70, 50]).tolist()),
        ("json:boxes(key=b)", boxes.reshape(-1).tolist()),  # the numbers flat
    ]
    image = png(np.zeros((50, 70, 3), np.uint8), "RGB")
    results = {}
    for n, (kind, value) in enumerate(written):
        root = tmp_path / str(n)
        root.mkdir()
        write_tar(root / "a.tar", [("x.png", image),
                                   ("x.json", json.dumps({"b": value, "l": labels.tolist()}).encode())])
        fields = f"image=png, boxes={kind}, labels=json:per_box(key=l)"
        with forkfeed.Loader(shards=str(root), fields=fields, transform="RandomResizedCrop(32)", batch_size=1,
                             seed=5) as loader:
            f = next(iter(loader))
            results[n] = (f["boxes"][0], f["labels"][0])
    # The same from .npy members, of float64 boxes and int32 labels.
    root = tmp_path / "npy"
    root.mkdir()
    npy_boxes, npy_labels = io.BytesIO(), io.BytesIO()
    np.save(npy_boxes, boxes.astype(np.float64))
    np.save(npy_labels, labels.astype(np.int32))
    write_tar(root / "a.tar", [("x.png", image), ("x.boxes.npy", npy_boxes.getvalue()),
                               ("x.labels.npy", npy_labels.getvalue())])
    with forkfeed.Loader(shards=str(root), fields="image=png, boxes=boxes.npy:boxes, "
                                                  "labels=labels.npy:per_box",
                         transform="RandomResizedCrop(32)", batch_size=1, seed=5) as loader:
        f = next(iter(loader))
        results["npy"] = (f["boxes"][0], f["labels"][0])
    first_boxes, first_labels = results[0]
    assert len(first_labels) > 0
    for kind, (b, l) in results.items():
        torch.testing.assert_close(b, first_boxes, atol=1e-4, rtol=0, msg=kind)
        assert torch.equal(l, first_labels), kind


def test_boxes_are_the_same_through_a_resume_with_other_workers(tmp_path):
    detection_shards(tmp_path, 20, 0, formats=("xyxy", "xywh", "cxcywh"))
    transform = "RandomResizedCrop(32), RandomHorizontalFlip(), RandomAffine(degrees=15)"

    def run(workers, state=None, batches=None):
        out = {}
        with forkfeed.Loader(shards=str(tmp_path), fields=DETECTION, transform=transform, batch_size=4,
                             workers=workers, seed=9) as loader:
            if state is not None:
                loader.load_state_dict(state)
            for batch in iter(loader.next_batch, None):
                for i, b, l in zip(batch.indices, batch.fields["boxes"], batch.fields["labels"]):
                    out[i] = (b.clone(), l.clone())
                if batches is not None and len(out) == 4 * batches:
                    return out, loader.state_dict()
        return out, None

    whole, _ = run(2)
    first, state = run(1, batches=2)
    rest, _ = run(3, state=state)
    assert set(first) | set(rest) == set(whole) and not set(first) & set(rest)
    for i, (b, l) in {**first, **rest}.items():
        assert torch.equal(b, whole[i][0]) and torch.equal(l, whole[i][1]), i


def test_boxes_come_alike_through_forkfeedd_local_and_remote(tmp_path, dataset, monkeypatch):
    shards = tmp_path / "det"
    detection_shards(shards, 18, 0, formats=("xywh", "cxcywh"))
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    options = dict(fields=DETECTION,
                   transform="RandomResizedCrop(32), RandomHorizontalFlip(), RandomRotation(20)",
                   batch_size=5, workers=2, seed=4)

    def boxes(source) -> dict:
        return {i: (batch.fields["boxes"][r].clone(), batch.fields["labels"][r].clone(),
                    batch.fields["area"][r].clone())
                for batch in iter(source.next_batch, None) for r, i in enumerate(batch.indices)}

    with forkfeed.Loader(shards=str(shards), **options) as loader:
        expected = boxes(loader)
    assert sum(len(l) for _, l, _ in expected.values()) > 18
    for where, got in read_through_forkfeedd(tmp_path, dataset, shards, options, boxes):
        assert got.keys() == expected.keys(), where
        for i, values in got.items():
            assert all(torch.equal(a, b) for a, b in zip(values, expected[i])), (where, i)


def test_padded_gives_one_array_and_the_counts_for_torch_and_numpy(tmp_path):
    detection_shards(tmp_path, 6, 0)
    for output in ("torch", "numpy"):
        with forkfeed.Loader(shards=str(tmp_path), fields=DETECTION, transform="RandomResizedCrop(32)",
                             batch_size=6,
                             output=output, seed=1) as loader:
            f = next(iter(loader))
            boxes, counts = forkfeed.padded(f["boxes"], fill=-1)
            labels, label_counts = forkfeed.padded(f["labels"])
        assert type(boxes) is type(f["boxes"][0]) and boxes.shape == (6, max(len(b) for b in f["boxes"]), 4)
        assert list(counts) == [len(b) for b in f["boxes"]] == list(label_counts)
        for i in range(6):
            assert (boxes[i, :counts[i]] == f["boxes"][i]).all() and (boxes[i, counts[i]:] == -1).all()
            assert (labels[i, :counts[i]] == f["labels"][i]).all() and (labels[i, counts[i]:] == 0).all()
    with pytest.raises(ValueError, match="array 1 is .* the arrays must agree"):
        forkfeed.padded([torch.zeros(2, 4), torch.zeros(2, 3)])
    with pytest.raises(ValueError, match="at least one array"):
        forkfeed.padded([])


def test_a_sample_whose_image_is_missing_has_no_boxes(tmp_path):
    image = png(np.zeros((20, 20, 3), np.uint8), "RGB")
    doc = json.dumps({"boxes": [[1, 1, 9, 9]], "labels": [4]}).encode()
    write_tar(tmp_path / "a.tar", [("a.png", image), ("a.json", doc), ("b.json", doc)])
    with forkfeed.Loader(shards=str(tmp_path), fields="image=png, boxes=json:boxes(key=boxes), "
                         "labels=json:per_box(key=labels)", transform="CenterCrop(16)", batch_size=2,
                         missing="empty") as loader:
        f = next(iter(loader))
    a, b = f["__key__"].index("a"), f["__key__"].index("b")
    assert f["labels"][a].tolist() == [4] and f["boxes"][a].tolist() == [[0, 0, 7, 7]]
    assert (f["boxes"][b].shape == (0, 4) and f["labels"][b].shape == (0,)
            and f["labels"][b].dtype == torch.int64)
    assert f["__present__"]["boxes"][[a, b]].tolist() == [True, False]


def test_a_box_under_a_pixel_thick_is_dropped_before_a_warp_not_turned_into_one(tmp_path):
    """Found from outside: a box a crop left 0.5 px wide was kept, and a later RandomRotation
    turned it into a 26 x 4 box holding no object pixel; without the rotation it is dropped."""
    image = png(np.zeros((64, 64, 3), np.uint8), "RGB")
    doc = json.dumps({"boxes": [[10, 10, 10.5, 40], [8, 8, 40, 40]], "labels": [1, 2]}).encode()
    write_tar(tmp_path / "a.tar", [("a.png", image), ("a.json", doc)])
    for transform in ("CenterCrop(64)", "CenterCrop(64), RandomRotation((30, 30))"):
        with forkfeed.Loader(shards=str(tmp_path), fields="image=png, boxes=json:boxes(key=boxes), "
                             "labels=json:per_box(key=labels)", transform=transform, batch_size=1) as loader:
            f = next(iter(loader))
        assert f["labels"][0].tolist() == [2], transform  # the thin box dropped, its label with it
        assert f["boxes"][0].shape == (1, 4), transform


def test_a_list_nested_too_deep_to_quote_is_bad_data_not_a_crash(tmp_path):
    # An error quoting the value with nlohmann's dump() recursed once a level: 100,000
    # levels overflowed a worker's stack.
    deep = "[" * 100_000 + "]" * 100_000
    doc = '{"boxes": [' + deep + '], "labels": [1]}'
    write_tar(tmp_path / "a.tar", [("k.png", png(np.zeros((20, 20, 3), np.uint8), "RGB")),
                                   ("k.json", doc.encode())])
    with pytest.raises(forkfeed.Error, match="field 'boxes' .*holds a list of 1, not \\[4 numbers\\]"):
        with forkfeed.Loader(shards=str(tmp_path), fields="image=png, boxes=json:boxes(key=boxes)",
                             transform="CenterCrop(16)", batch_size=1) as loader:
            next(iter(loader))


def test_augmix_has_no_rule_for_boxes_and_is_refused_naming_both(tmp_path):
    write_tar(tmp_path / "a.tar", [("k.png", png(np.zeros((20, 20, 3), np.uint8), "RGB")),
                                   ("k.json", b'{"b": []}')])
    with pytest.raises(ValueError, match="AugMix.* has no rule for boxes field 'boxes'"):
        forkfeed.Loader(shards=str(tmp_path), fields="image=png, boxes=json:boxes(key=b)",
                        transform="CenterCrop(16), AugMix()")


def test_a_per_box_member_missing_beside_boxes_is_bad_data(tmp_path):
    image = png(np.zeros((20, 20, 3), np.uint8), "RGB")
    npy, labels = io.BytesIO(), io.BytesIO()
    np.save(npy, np.array([[1, 1, 9, 9]], np.float32))
    np.save(labels, np.array([3]))
    write_tar(tmp_path / "a.tar", [("a.png", image), ("a.boxes.npy", npy.getvalue()), ("b.png", image),
                                   ("b.boxes.npy", npy.getvalue()), ("b.labels.npy", labels.getvalue())])
    with pytest.raises(forkfeed.Error, match="field 'labels'.* has no member, but its boxes have one"):
        with forkfeed.Loader(shards=str(tmp_path),
                             fields="image=png, boxes=boxes.npy:boxes, labels=labels.npy:per_box",
                             transform="CenterCrop(16)", batch_size=2, missing="empty") as loader:
            next(iter(loader))


@pytest.mark.parametrize("source", ["json", "npy"])
def test_the_most_boxes_a_member_can_hold_fit_their_slot(tmp_path, source):
    # The slot's room for boxes and per_box values is what the numbers of the batch's
    # members could hold: a box in 8 characters ("0,0,1,1,") or 4 uint8, a label in 2
    # ("0,") or a bool, all kept.
    count = 6000
    if source == "json":
        doc = json.dumps({"b": [0, 0, 1, 1] * count, "l": [0] * count}, separators=(",", ":")).encode()
        members, fields = [("json", doc)], "boxes=json:boxes(key=b), labels=json:per_box(key=l)"
    else:
        boxes, labels = io.BytesIO(), io.BytesIO()
        np.save(boxes, np.tile(np.array([0, 0, 1, 1], np.uint8), (count, 1)))
        np.save(labels, np.ones(count, bool))
        members, fields = [("b.npy", boxes.getvalue()), ("l.npy", labels.getvalue())], \
            "boxes=b.npy:boxes, labels=l.npy:per_box"
    image = png(np.zeros((16, 16, 3), np.uint8), "RGB")
    write_tar(tmp_path / "a.tar", [(f"{n}.{ext}", data) for n in range(3)
                                   for ext, data in [("png", image), *members]])
    with forkfeed.Loader(shards=str(tmp_path), fields="image=png, " + fields, transform="CenterCrop(16)",
                         batch_size=3) as loader:
        f = next(iter(loader))
    assert [len(b) for b in f["boxes"]] == [count] * 3 and [len(l) for l in f["labels"]] == [count] * 3


@pytest.mark.parametrize("doc,match", [
    ({"labels": [1]}, "no key \"boxes\""),
    ({"boxes": "1 2 3 4", "labels": [1]}, "is a string, not a list of \\[4 numbers\\]"),
    ({"boxes": [[1, 2, 3]], "labels": [1]}, "holds a list of 3, not \\[4 numbers\\]"),
    ({"boxes": [1, 2, 3, 4, 5], "labels": [1]}, "holds 5 numbers, not rows of 4"),
    ({"boxes": [[1, 2, 3, "4"]], "labels": [1]}, "holds \"4\", not one of numbers"),
    ({"boxes": [[1, 2, 3, 4]], "labels": [1, 2]}, "holds 2 values for the sample's 1 boxes"),
    ({"boxes": [[1, 2, 3, 4]], "labels": [1.5]}, "holds 1.5, not one of int64 integers .* dtype=float32"),
    ({"boxes": [[[[1]]]], "labels": [1]}, "holds a list of 1, not \\[4 numbers\\]"),
    ([1, 2], "is not a JSON object"),
])
def test_bad_boxes_are_bad_data_naming_the_sample_and_field(tmp_path, doc, match):
    image = png(np.zeros((20, 20, 3), np.uint8), "RGB")
    write_tar(tmp_path / "a.tar", [("k.png", image), ("k.json", json.dumps(doc).encode())])
    with pytest.raises(forkfeed.Error, match=match) as raised:
        with forkfeed.Loader(shards=str(tmp_path), fields="image=png, boxes=json:boxes(key=boxes), "
                             "labels=json:per_box(key=labels)", transform="CenterCrop(16)",
                             batch_size=1) as loader:
            next(iter(loader))
    assert "k.json" in str(raised.value) and "field '" in str(raised.value), raised.value


def test_an_op_that_draws_among_the_boxes_needs_them_in_the_first_image_field(tmp_path):
    write_tar(tmp_path / "a.tar", [("k.png", png(np.zeros((4, 4, 3), np.uint8), "RGB"))])
    crop = "RandomIoUCrop(), Resize((8, 8))"
    with pytest.raises(ValueError,
                       match=r"draws its crop among the sample's boxes .* declare them in fields"):
        forkfeed.Loader(shards=str(tmp_path), fields="image=png", transform=crop)
    with pytest.raises(ValueError, match=r"an image field after the first draws from the sample's boxes"):
        forkfeed.Loader(shards=str(tmp_path), fields="image=png, view=png, b=json:boxes(key=b)",
                        transform={"image": "Resize((8, 8))", "view": crop})


@pytest.mark.parametrize("fields,match", [
    ("image=png, labels=json:per_box(key=l)", "no boxes field"),
    ("boxes=json:boxes(key=b)", "no image field"),
    ("image=png, b=json:boxes(key=b), c=npy:boxes", "both boxes"),
    ("image=png, b=json:boxes", "needs the key"),
    ("image=png, b=npy:boxes(key=b)", "sources that are not json"),
    ("image=png, b=txt:boxes", "not all .json or all .npy"),
    ("image=png, b=json:boxes(key=b, format=xxyy)", "format=F"),
    ("image=png, b=json:boxes(key=b, normalized=1)", "normalized=B"),
    ("image=png, b=json:boxes(key=b), l=json:per_box(key=l, dtype=uint8)", "dtype=float32"),
    ("image=png, b=json:boxes(key=b), m=json", "a member is one field's"),
    ("image=png, b=json:boxes(key=" + "k" * 64 + ")", "at most 63"),
    ("image=png, b=json:boxes(key=a\0b)", "key=KEY"),
    ("image=png, l=json:per_box(key=l), b=json:boxes(key=b)",
     "list the boxes field before its per_box fields"),
    ("image=png, b=b.npy:boxes, l=b.npy:per_box", "give the per_box values .npy members of their own"),
])
def test_bad_box_fields_are_refused_at_open_naming_what_to_write(tmp_path, fields, match):
    write_tar(tmp_path / "a.tar", [("k.png", png(np.zeros((4, 4, 3), np.uint8), "RGB"))])
    with pytest.raises(ValueError, match=match):
        forkfeed.Loader(shards=str(tmp_path), fields=fields, transform="CenterCrop(4)")
