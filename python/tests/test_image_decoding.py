"""How an image file becomes RGB pixels: as torchvision's loader has it, PIL's
Image.open(f).convert("RGB"), value for value, on the PNG kinds where PIL and OpenCV part:
16-bit grey (PIL clips to 255), 16-bit grey+alpha and colour (PIL keeps the high byte)."""

import struct
import zlib

import numpy as np
import pytest

import forkfeed

Image = pytest.importorskip("PIL.Image")


def png16(pixels: np.ndarray) -> bytes:
    """A 16-bit PNG of `pixels` ([H, W] grey, or [H, W, C]: 2 grey+alpha, 3 RGB, 4 RGBA),
    written by hand: PIL writes no 16-bit colour PNG."""
    a = pixels.astype(">u2")
    if a.ndim == 2:
        a = a[..., None]
    height, width, channels = a.shape
    colour_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + a[y].tobytes() for y in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_16_bit_pngs_decode_as_pils_convert_rgb(tmp_path):
    rng = np.random.default_rng(17)
    side = 16
    # Every kind spans values below 256 (PIL's clip keeps them) and above (it makes them 255).
    grey = rng.integers(0, 65536, (side, side)).astype(np.uint16)
    grey[:4] = rng.integers(0, 256, (4, side))
    grey[4, :4] = [255, 256, 511, 65535]
    kinds = {"grey": grey,
             "grey_alpha": np.stack([grey, 65535 - grey], -1),
             "rgb": np.stack([grey, grey // 3, 65535 - grey], -1),
             "rgba": np.stack([grey, grey // 3, 65535 - grey, grey], -1)}
    folder = tmp_path / "images" / "c"
    folder.mkdir(parents=True)
    for name, pixels in kinds.items():
        (folder / f"{name}.png").write_bytes(png16(pixels))
    names = sorted(kinds)  # ImageFolder's order
    with forkfeed.Loader(str(tmp_path / "images"), transform=f"CenterCrop({side})", batch_size=len(names),
                         workers=1, shuffle=False) as loader:
        images, _ = next(iter(loader))
        got = {name: images[row].numpy().copy() for row, name in enumerate(names)}
    differ = {}
    for name in names:
        with Image.open(folder / f"{name}.png") as image:
            want = np.asarray(image.convert("RGB"))
        assert got[name].shape == want.shape, name
        at = np.argwhere(got[name] != want)
        if len(at):
            differ[name] = (f"{len(at)} values, the first at {at[0].tolist()}: {got[name][tuple(at[0])]} "
                            f"for PIL's {want[tuple(at[0])]}")
    assert differ == {}, f"forkfeed's pixels differ from PIL's: {differ}"
    assert (got["grey"][4, :4, 0] == [255, 255, 255, 255]).all()  # clipped, not scaled (0, 1, 1, 255)
