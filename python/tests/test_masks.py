"""Masks (a field "seg.png:mask"): class ids that follow their image's geometry, draw for
draw. Against torchvision 0.14's functional ops with NEAREST on the parameters each sample
drew (replayed from the follow_mask tool's record), pixel for pixel; against the image
itself where the image's ops pick pixels too (nearest, no colour op), pixel for pixel;
and through the Loader and forkfeedd on shards of PNG images and palette masks."""

import io
import os
import pathlib
import struct
import subprocess
import tarfile
import tempfile
import zlib

import numpy as np
import pytest
import torch

import forkfeed

F = pytest.importorskip("torchvision.transforms.functional")
from torchvision.transforms import InterpolationMode  # noqa: E402
from PIL import Image  # noqa: E402

from conftest import BIN_DIR, listening_daemon, token_file, write_tar  # noqa: E402

TOOL = os.environ.get("FORKFEED_FOLLOW_MASK", str(BIN_DIR / "follow_mask"))
NEAREST = InterpolationMode.NEAREST


def blocks(height: int, width: int, seed: int) -> np.ndarray:
    """Class ids in blocks of irregular sizes, and single-pixel specks: edges everywhere."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    ids = (yy * 7 // height * 16 + xx * 5 // width * 3 + 1).astype(np.uint8)
    specks = rng.random((height, width)) < 0.05
    ids[specks] = rng.integers(100, 200, specks.sum())
    return ids


def follow(pipeline: str, seed: int, mask: np.ndarray, fill: int):
    """What follow_mask makes of `mask`: the mask that follows the image, the image's first
    channel (its three channels were the mask), and the record, one line per step or move."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out, image = (os.path.join(tmp, n) for n in ("in.raw", "out.raw", "image.raw"))
        mask.tofile(src)
        done = subprocess.run([TOOL, pipeline, str(seed), str(mask.shape[0]), str(mask.shape[1]), src, out,
                               str(fill), image], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        record = [line.split() for line in done.stdout.splitlines()]
        side = next(int(r[6]) for r in reversed(record) if r[0] == "step")
        read = lambda path: np.fromfile(path, np.uint8).reshape(side, side)  # noqa: E731
        return read(out), read(image), record


def replay(mask: np.ndarray, record: list, fill: int) -> np.ndarray:
    """torchvision's functional ops on the mask as a [1, H, W] uint8 tensor, NEAREST."""
    m = torch.from_numpy(mask.copy())[None]
    for r in record:
        if r[0] == "step":
            x, y, w, h, ow, oh = map(int, r[1:7])
            left, top = max(0, -x), max(0, -y)  # RandomCrop's padding: F.pad, then the crop
            right, bottom = max(0, x + w - m.shape[2]), max(0, y + h - m.shape[1])
            if left or top or right or bottom:
                m = F.pad(m, [left, top, right, bottom], fill=fill)
                x, y = x + left, y + top
            m = F.crop(m, y, x, h, w)
            if (ow, oh) != (w, h):
                m = F.resize(m, [oh, ow], interpolation=NEAREST)
        elif r[0] == "hflip":
            m = F.hflip(m)
        elif r[0] == "vflip":
            m = F.vflip(m)
        else:
            angle, tx, ty, scale, sx, sy = map(float, r[1:7])
            center = None if r[7] == "none" else [float(r[7]), float(r[8])]
            m = F.affine(m, angle=angle, translate=[tx, ty], scale=scale, shear=[sx, sy],
                         interpolation=NEAREST, fill=[fill], center=center)
    return m[0].numpy()


# Every geometric op, alone and together, and the ops a mask leaves alone among them.
PIPELINES = [
    "RandomResizedCrop(32)",
    "RandomResizedCrop(40, scale=(0.05, 1.0), ratio=(0.3, 3.0))",
    "Resize(40), CenterCrop(32)",
    "Resize((37, 29)), RandomCrop(24)",
    "Resize(16), Resize(41), CenterCrop(32)",
    "RandomCrop(32), RandomHorizontalFlip(), RandomVerticalFlip()",
    "RandomCrop(72, pad_if_needed=True, fill=9)",
    "CenterCrop(70), RandomVerticalFlip()",
    "RandomCrop(40, padding=(3, 5, 7, 9)), RandomHorizontalFlip()",
    "RandomResize(20, 90), RandomCrop(56, pad_if_needed=True), RandomHorizontalFlip()",
    "RandomCrop(30, padding=20), Resize((40, 40)), RandomRotation(20)",
    "RandomResize(30, 60), RandomCrop(48, padding=4, pad_if_needed=True), RandomAffine(degrees=15, "
    "translate=(0.1, 0.1))",
    "RandomZoomOut(fill=7, side_range=(1.0, 2.5), p=0.7), Resize((40, 40)), RandomHorizontalFlip()",
    "ScaleJitter((48, 48), scale_range=(0.3, 1.5)), FixedSizeCrop((40, 40), fill=3), RandomHorizontalFlip()",
    "RandomShortestSize((30, 40, 50), max_size=60), CenterCrop(30), RandomVerticalFlip()",
    "RandomResizedCrop(32), RandomRotation(30)",
    "CenterCrop(32), RandomRotation((-90, 90), center=(3, 5))",
    "RandomResizedCrop(32), RandomAffine(degrees=20, translate=(0.1, 0.2), scale=(0.7, 1.3), "
    "shear=(-10, 10, -5, 5))",
    "Resize((32, 32)), RandomHorizontalFlip(p=1.0), ColorJitter(0.5, 0.5, 0.5, 0.1), "
    "RandomAffine(degrees=30)",
    "CenterCrop(32), AutoAugment()",
    "CenterCrop(32), RandAugment(num_ops=4, magnitude=20)",
    "CenterCrop(32), TrivialAugmentWide()",
    "RandomResizedCrop(32), RandomHorizontalFlip(), GaussianBlur(3), RandomGrayscale(), Normalize(), "
    "RandomErasing(p=1.0)",
]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_a_mask_is_torchvisions_nearest_ops_on_the_drawn_parameters(pipeline):
    moved = 0
    for seed in range(12):
        mask = blocks(48 + seed % 3, 64 - seed % 5, seed)
        fill = 255 if seed % 2 else 0
        got, _, record = follow(pipeline, seed, mask, fill)
        want = replay(mask, record, fill)
        assert np.array_equal(got, want), (pipeline, seed, record, int((got != want).sum()))
        moved += sum(r[0] != "step" for r in record)
    if any(op in pipeline for op in ("Flip", "Rotation", "Affine", "Augment")):
        assert moved > 0, "no seed drew a move: the test would not see one"


@pytest.mark.parametrize("pipeline", [
    "RandomCrop(32), RandomHorizontalFlip(), RandomVerticalFlip()",
    "CenterCrop(40), RandomRotation(45)",
    "RandomCrop(60, padding=5, pad_if_needed=True), RandomHorizontalFlip()",
    "CenterCrop(61), RandomHorizontalFlip()",
    "RandomCrop(24, padding=(30, 2)), RandomVerticalFlip()",
    "RandomZoomOut(p=0.9), CenterCrop(48), RandomVerticalFlip(), RandomRotation(10)",
    "RandomCrop(40), RandomHorizontalFlip(), RandomAffine(degrees=30, translate=(0.2, 0.1), "
    "scale=(0.6, 1.4), shear=15)",
    "Resize(20), Resize(41), CenterCrop(32), RandomVerticalFlip(), RandomRotation(20, center=(0, 0))",
])
def test_a_mask_lands_where_its_image_did(pipeline):
    # The image's three channels are the mask and every op picks pixels (nearest): where the
    # image's pixels went, the mask's went, so the image's first channel is the mask.
    for seed in range(12):
        mask = blocks(48, 56, seed)
        got, image, _ = follow(pipeline, seed, mask, 0)
        assert np.array_equal(got, image), (pipeline, seed)


def test_fill_and_refusals_of_the_field_text(tmp_path):
    def refused(fields, match, transform="RandomCrop(8)"):
        with pytest.raises(ValueError, match=match):
            forkfeed.Loader(shards=str(tmp_path), fields=fields, transform=transform)

    refused({"image": "png", "seg": "seg.png:mask(fill=256)"}, r"mask\(fill=N\)")
    refused({"image": "png", "seg": "seg.png:mask(255)"}, r"mask\(fill=N\)")
    refused({"seg": "seg.png:mask"}, "no image field")


# ---- through the loader ---------------------------------------------------------------

# Class k's colour: black for 0 (so an image's fill 0 is class 0), then far apart.
PALETTE = np.array([[0, 0, 0]] + [[(37 * k) % 256, (91 * k) % 256, (173 * k) % 256] for k in range(1, 256)],
                   np.uint8)


def png(array: np.ndarray, mode: str, palette: bool = False) -> bytes:
    img = Image.fromarray(array, mode)
    if palette:
        img.putpalette(PALETTE.tobytes())
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def segmentation_shards(root: pathlib.Path, samples: int = 24) -> list:
    """Shards of PNG images whose colours are their masks' classes (PALETTE), masks saved
    as palette PNGs (odd samples) or grey ones; each sample's own size. Returns the masks."""
    root.mkdir(parents=True, exist_ok=True)
    masks, members = [], []
    for n in range(samples):
        mask = blocks(40 + n % 7, 52 - n % 5, n)
        masks.append(mask)
        members += [(f"s{n:03d}.png", png(PALETTE[mask], "RGB")),
                    (f"s{n:03d}.seg.png", png(mask, "P" if n % 2 else "L", palette=n % 2 == 1))]
    write_tar(root / "a.tar", members[: samples])
    write_tar(root / "b.tar", members[samples:])
    return masks


@pytest.fixture(scope="module")
def seg_shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("seg") / "shards"
    return str(root), segmentation_shards(root)


SEG_FIELDS = {"image": "png", "seg": "seg.png:mask"}
GEOMETRIC = "RandomCrop(32), RandomHorizontalFlip(), RandomVerticalFlip(), " \
            "RandomAffine(degrees=25, translate=(0.1, 0.1), scale=(0.8, 1.2))"


# RandomCrop's padding (the images are 40-46 x 48-52): the fused path fills the image's
# padding (the second: resized straight into the slot), the mask's follows with its own fill.
PADDED = "RandomCrop(60, padding=(2, 0, 0, 3), pad_if_needed=True), RandomHorizontalFlip(), " \
         "RandomAffine(degrees=25, translate=(0.1, 0.1))"


@pytest.mark.parametrize("transform", [GEOMETRIC, PADDED,
                                       "RandomCrop(56, pad_if_needed=True), RandomHorizontalFlip()"])
def test_the_loaders_masks_land_where_their_images_did(seg_shards, transform):
    shards, masks = seg_shards
    seen = []
    for epoch in range(2):
        with forkfeed.Loader(shards=shards, fields=SEG_FIELDS, transform=transform, batch_size=5, workers=2,
                             seed=epoch) as loader:
            for batch in iter(loader.next_batch, None):
                image, seg = batch.fields["image"], batch.fields["seg"]
                assert seg.dtype == torch.uint8 and seg.shape == image.shape[:3]
                # Every op picks pixels: each image pixel is its mask pixel's class colour.
                assert torch.equal(image, torch.from_numpy(PALETTE)[seg.long()])
                seen += batch.indices
    assert sorted(seen) == sorted(list(range(len(masks))) * 2)


def test_resampled_images_and_their_masks_agree_but_at_class_edges(seg_shards):
    shards, _ = seg_shards
    transform = "RandomResizedCrop(32), RandomHorizontalFlip(), RandomRotation(20), TrivialAugmentWide()"
    with forkfeed.Loader(shards=shards, fields=SEG_FIELDS, transform=transform, batch_size=8, workers=2,
                         seed=1) as loader:
        for batch in loader:
            seg = batch["seg"].long()
            assert int(seg.max()) < 256
            # Colour ops change the image but never the mask: its values stay class ids.
            assert set(seg.unique().tolist()) <= set(np.unique(np.concatenate(
                [blocks(40 + n % 7, 52 - n % 5, n).ravel() for n in range(24)])).tolist()) | {0}


def test_a_mask_without_its_image_size_or_not_class_ids_is_bad_data_naming_it(tmp_path):
    rgb = np.zeros((20, 24, 3), np.uint8)
    good = png(blocks(20, 24, 5), "L")
    cases = {
        "s000": png(np.zeros((20, 23), np.uint8), "L"),  # another size
        "s001": png(rgb, "RGB"),  # colours
        "s002": png(np.zeros((20, 24), np.uint16), "I;16"),  # 16-bit
        "s003": b"not a png",
        # Decoded only down to the last row the crop reads, a mask is still checked whole:
        "s004": good[:-12],  # its IEND cut off
        "s005": good[:60] + bytes([good[60] ^ 1]) + good[61:],  # a flipped bit in its pixels
    }
    messages = ["the mask is 23x20, its image 24x20", "PNG RGB, colours, not class ids", "16-bit",
                "neither a PNG nor a .npy", "ends before its IEND", "chunk 'IDAT' at byte .* fails its CRC"]
    for (key, data), message in zip(cases.items(), messages):
        shard = tmp_path / key
        shard.mkdir()
        write_tar(shard / "a.tar", [(f"{key}.png", png(rgb, "RGB")), (f"{key}.seg.png", data)])
        with forkfeed.Loader(shards=str(shard), fields=SEG_FIELDS, transform="CenterCrop(16)",
                             batch_size=1, workers=1) as loader:
            with pytest.raises(forkfeed.BadDataError, match=message) as caught:
                loader.next_batch()
            assert f"{key}.seg.png" in str(caught.value), str(caught.value)


def chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: its length, type, data and CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def filtered_png(ids: np.ndarray, filters: list, bits: int = 8, palette: bool = True) -> bytes:
    """A PNG written by hand: rows filtered with `filters` (cycled, PNG's 0-4), packed at
    `bits` per pixel, palette or grey — every filter a decoder must undo, which encoders
    choose by themselves."""
    height, width = ids.shape
    rows = []
    for y in range(height):
        packed = (np.packbits(np.unpackbits(ids[y][:, None], axis=1)[:, 8 - bits:].ravel()) if bits < 8
                  else ids[y])
        line, above = packed.astype(np.int32), (rows[-1][1] if rows else np.zeros(len(packed), np.int32))
        left = np.concatenate([[0], line[:-1]]) if bits == 8 else np.concatenate([[0], line[:-1]])
        upleft = np.concatenate([[0], above[:-1]])
        f = filters[y % len(filters)]
        if f == 0:
            out = line
        elif f == 1:
            out = line - left
        elif f == 2:
            out = line - above
        elif f == 3:
            out = line - (left + above) // 2
        else:
            p = left + above - upleft
            pa, pb, pc = abs(p - left), abs(p - above), abs(p - upleft)
            out = line - np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, above, upleft))
        rows.append((bytes([f]) + (out % 256).astype(np.uint8).tobytes(), line))
    header = struct.pack(">IIBBBBB", width, height, bits, 3 if palette else 0, 0, 0, 0)
    body = chunk(b"IHDR", header)
    if palette:
        body += chunk(b"PLTE", PALETTE[: 2 ** bits].tobytes())
    data = zlib.compress(b"".join(r for r, _ in rows))
    body += chunk(b"IDAT", data[: len(data) // 2]) + chunk(b"IDAT", data[len(data) // 2:])  # two IDATs
    return PNG_SIGNATURE + body + chunk(b"IEND", b"")


@pytest.mark.parametrize("bits,palette", [(8, True), (8, False), (4, True), (2, False), (1, True)])
def test_every_png_row_filter_and_bit_depth_gives_the_stored_ids(tmp_path, bits, palette):
    rng = np.random.default_rng(bits)
    members = []
    cases = {}
    for filters in ([0], [1], [2], [3], [4], [0, 1, 2, 3, 4]):
        key = "f" + "".join(map(str, filters))
        ids = rng.integers(0, 2 ** bits, (29, 37)).astype(np.uint8)
        ids[5:20, 7:30] = ids[5, 7]  # a flat patch: runs the filters' arithmetic on equal neighbours
        cases[key] = ids
        members += [(f"{key}.png", png(PALETTE[ids], "RGB")),
                    (f"{key}.seg.png", filtered_png(ids, filters, bits, palette))]
    write_tar(tmp_path / "a.tar", members)
    with forkfeed.Loader(shards=str(tmp_path), fields=SEG_FIELDS, transform="CenterCrop(29)", batch_size=6,
                         workers=1, shuffle=False) as loader:
        batch = loader.next_batch()
    keys = batch.fields["__key__"]
    for row, key in enumerate(keys):
        assert np.array_equal(batch.fields["seg"][row].numpy(), cases[key][:, 4:33]), key


def test_a_mask_declaring_a_huge_size_is_refused_before_it_is_allocated(tmp_path):
    # 10^6 x 10^6 in its header, a few bytes in all; max_pixels as high as it goes: the
    # mask's size is weighed against its image's first, and nothing is allocated.
    header = struct.pack(">IIBBBBB", 1_000_000, 1_000_000, 8, 0, 0, 0, 0)
    bomb = PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    write_tar(tmp_path / "a.tar", [("s0.png", png(PALETTE[blocks(20, 24, 0)], "RGB")), ("s0.seg.png", bomb)])
    with forkfeed.Loader(shards=str(tmp_path), fields=SEG_FIELDS, transform="CenterCrop(16)", batch_size=1,
                         workers=1, max_pixels=2**63) as loader:
        with pytest.raises(forkfeed.BadDataError, match="the mask is 1000000x1000000, its image 24x20"):
            loader.next_batch()


def test_uint16_masks_hold_ids_past_255_and_land_where_their_images_did(tmp_path):
    # Instance ids up to 60000 in 16-bit grey PNGs (Cityscapes' instanceIds); each image's
    # red and green are its id's high and low bytes, so the ids can be read back from it.
    members, ids_of = [], {}
    for n in range(6):
        ids = (blocks(30 + n, 40, n).astype(np.uint16) * 235 + n)
        ids[0, 0] = 60000
        ids_of[f"s{n}"] = ids
        rgb = np.stack([ids >> 8, ids & 255, np.zeros_like(ids)], -1).astype(np.uint8)
        members += [(f"s{n}.png", png(rgb, "RGB")), (f"s{n}.seg.png", png(ids, "I;16"))]
    write_tar(tmp_path / "a.tar", members)
    fields = {"image": "png", "seg": "seg.png:mask(fill=0, dtype=uint16)"}  # a comma inside the kind
    transform = "RandomCrop(28), RandomHorizontalFlip(), RandomAffine(degrees=30, translate=(0.1, 0.1))"
    with forkfeed.Loader(shards=str(tmp_path), fields=fields, transform=transform, batch_size=6, workers=2,
                         seed=2) as loader:
        batch = loader.next_batch()
    seg, image = batch.fields["seg"], batch.fields["image"].long()
    assert seg.dtype == torch.int32 and seg.shape == (6, 28, 28)  # torch has no uint16: widened
    assert torch.equal(seg.long(), image[..., 0] * 256 + image[..., 1])
    assert int(seg.max()) > 255
    # An 8-bit field refuses 16-bit ids, naming the way out.
    with forkfeed.Loader(shards=str(tmp_path), fields=SEG_FIELDS, transform="CenterCrop(28)", batch_size=6,
                         workers=1) as loader:
        with pytest.raises(forkfeed.BadDataError, match=r"mask\(dtype=uint16\)"):
            loader.next_batch()


def test_a_npy_mask_is_its_array(tmp_path):
    ids = blocks(21, 30, 7)
    npy = io.BytesIO()
    np.save(npy, ids)
    bad = io.BytesIO()
    np.save(bad, ids[None])
    write_tar(tmp_path / "a.tar", [("s0.png", png(PALETTE[ids], "RGB")), ("s0.seg.npy", npy.getvalue()),
                                   ("s1.png", png(PALETTE[ids], "RGB")), ("s1.seg.npy", bad.getvalue())])
    fields = {"image": "png", "seg": "seg.npy:mask"}
    with forkfeed.Loader(shards=str(tmp_path), fields=fields,
                         transform="CenterCrop(21), RandomHorizontalFlip(p=1.0)",
                         batch_size=2, workers=1, shuffle=False, on_error="skip") as loader:
        batch = loader.next_batch()
    assert batch.fields["__key__"] == ["s0"]  # s1's 3-D array is bad data, skipped
    assert np.array_equal(batch.fields["seg"][0].numpy(), ids[:, 4:25][:, ::-1])
    assert torch.equal(batch.fields["image"][0], torch.from_numpy(PALETTE)[batch.fields["seg"][0].long()])


def test_augmix_has_no_rule_for_a_mask_and_is_refused_naming_both(seg_shards):
    shards, _ = seg_shards
    with pytest.raises(ValueError,
                       match=r"AugMix\(\) of image field 'image' has no rule for mask field 'seg'"):
        forkfeed.Loader(shards=shards, fields=SEG_FIELDS, transform="CenterCrop(32), AugMix()")


def test_a_missing_mask_or_image_leaves_the_mask_empty(tmp_path):
    rgb = PALETTE[blocks(20, 24, 0)]
    members = [("s000.png", png(rgb, "RGB")), ("s000.seg.png", png(blocks(20, 24, 0), "L")),
               ("s001.png", png(rgb, "RGB")),  # no mask
               ("s002.seg.png", png(blocks(20, 24, 0), "L"))]  # no image
    write_tar(tmp_path / "a.tar", members)
    with forkfeed.Loader(shards=str(tmp_path), fields=SEG_FIELDS, missing="empty", transform="CenterCrop(16)",
                         batch_size=3, workers=1) as loader:
        batch = loader.next_batch()
    row = {i: r for r, i in enumerate(batch.indices)}
    present, seg = batch.fields["__present__"], batch.fields["seg"]
    assert [bool(present["seg"][row[i]]) for i in range(3)] == [True, False, False]
    assert [bool(present["image"][row[i]]) for i in range(3)] == [True, True, False]
    assert torch.equal(seg[row[0]], torch.from_numpy(blocks(20, 24, 0)[2:18, 4:20]))
    assert not seg[row[1]].any() and not seg[row[2]].any()


def test_masks_come_alike_through_forkfeedd_local_and_remote_and_a_resume(seg_shards, dataset, tmp_path,
                                                                          monkeypatch):
    shards, _ = seg_shards
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    options = dict(fields=SEG_FIELDS, transform=GEOMETRIC, batch_size=6, workers=2, seed=3)

    def masks(source) -> dict:
        return {i: batch.fields["seg"][r].clone() for batch in iter(source.next_batch, None)
                for r, i in enumerate(batch.indices)}

    with forkfeed.Loader(shards=shards, **options) as loader:
        expected = masks(loader)
    # Resumed after one batch with another worker count: the rest of the epoch, unchanged.
    with forkfeed.Loader(shards=shards, **options) as loader:
        first = loader.next_batch()
        state = loader.state_dict()
    with forkfeed.Loader(shards=shards, **{**options, "workers": 1}) as loader:
        loader.load_state_dict(state)
        resumed = masks(loader)
    assert sorted([*first.indices, *resumed]) == sorted(expected)
    assert all(torch.equal(resumed[i], expected[i]) for i in resumed)

    token = token_file(tmp_path)
    daemon, address = listening_daemon(tmp_path / "forkfeedd.sock", dataset, token, "--dataset",
                                       f"seg=shards:{shards}")
    try:
        for where in (dict(shards=shards, socket=daemon.socket),
                      dict(dataset="seg", address=address, token_file=str(token))):
            with forkfeed.Client(**where, **options) as client:
                got = masks(client)
            assert got.keys() == expected.keys() and all(torch.equal(got[i], expected[i]) for i in got), where
    finally:
        daemon.stop()
