"""How closely libforkfeed's functional transform ops (transforms/functional.h) follow
torchvision 0.14's tensor implementation: each op, at fixed parameters, on a few
synthetic uint8 images, through the transform_ops tool (FORKFEED_TRANSFORM_OPS, which
ctest sets), compared with torchvision.transforms.functional on the same uint8 tensor.
Every value must be within one level.

The mean and max differences go into FIDELITY; `pytest -s` prints them as a markdown
table, and so does running this file (`FORKFEED_TRANSFORM_OPS=... python3 THIS_FILE`)."""

import functools
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torchvision.transforms.functional")

TOOL = os.environ.get("FORKFEED_TRANSFORM_OPS")
pytestmark = pytest.mark.skipif(
    not TOOL, reason="FORKFEED_TRANSFORM_OPS is not set: it names the transform_ops tool (ctest sets it)")


# ---- Test images ---------------------------------------------------------------------

def _natural(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """Smooth gradients with noise, plus what the ops treat specially: a flat patch, grey
    (r = g = b, no hue), pure colours and black and white (saturated, clipped)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    phases = rng.uniform(0, 2 * np.pi, size=3)
    img = np.stack([127.5 + 110 * np.sin(x / width * 3 + y / height * (c + 1) + phases[c]) for c in range(3)],
                   axis=-1)
    img += rng.normal(0, 10, size=img.shape)
    h, w = height // 4, width // 4
    img[:h, :w] = (120, 60, 200)
    img[:h, w:2 * w] = 90
    img[h:2 * h, :w] = (255, 0, 0)
    img[h:2 * h, w:2 * w] = (0, 255, 255)
    img[-h:, -w:] = 255
    img[-h:, -2 * w:-w] = 0
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def _make_images() -> dict:
    rng = np.random.default_rng(26)
    constant_green = _natural(48, 64, rng)
    constant_green[..., 1] = 100  # autocontrast's max == min, equalize's empty step
    low_contrast = (90 + _natural(40, 40, rng) // 5).astype(np.uint8)
    return {
        "64x48": _natural(48, 64, rng),
        "57x33": _natural(33, 57, rng),
        "64x48 constant G": constant_green,
        "40x40 low contrast": low_contrast,
        "5x4": rng.integers(0, 256, size=(4, 5, 3), dtype=np.uint8),
    }


IMAGES = _make_images()


# ---- The two sides ---------------------------------------------------------------------

def run_ops(img_hwc_uint8: np.ndarray, ops: list) -> list:
    """Each (op, args) of `ops` applied by transform_ops to `img_hwc_uint8`, in one run of it."""
    height, width, _ = img_hwc_uint8.shape
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "in.raw").write_bytes(np.ascontiguousarray(img_hwc_uint8).tobytes())
        command = [TOOL, str(tmp / "in.raw"), str(height), str(width)]
        for i, (op, args) in enumerate(ops):
            command += ([";"] if i else []) + [str(tmp / f"out{i}.raw"), op] + [repr(float(a)) for a in args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"transform_ops failed ({done.returncode}): {done.stderr}"
        return [np.frombuffer((tmp / f"out{i}.raw").read_bytes(), np.uint8).reshape(height, width, 3)
                for i in range(len(ops))]


def run_op(img_hwc_uint8: np.ndarray, op: str, *args) -> np.ndarray:
    """`op` with `args` applied by transform_ops to an H x W x 3 uint8 image."""
    return run_ops(img_hwc_uint8, [(op, args)])[0]


# How torchvision takes the tool's numeric arguments, where that is not F.<op>(img, *args).
TORCH_CALLS = {
    "rgb_to_grayscale": lambda img: F.rgb_to_grayscale(img, num_output_channels=3),
    "posterize": lambda img, bits: F.posterize(img, int(bits)),
    "gaussian_blur": lambda img, kx, ky, sx, sy: F.gaussian_blur(img, [int(kx), int(ky)], [sx, sy]),
}


def torch_op(img_hwc_uint8: np.ndarray, op: str, *args) -> np.ndarray:
    """What torchvision.transforms.functional makes of the same image as a uint8 CHW tensor."""
    img = torch.from_numpy(np.ascontiguousarray(img_hwc_uint8)).permute(2, 0, 1).contiguous()
    call = TORCH_CALLS.get(op, lambda img, *args: getattr(F, op)(img, *args))
    return call(img, *args).permute(1, 2, 0).numpy()


# ---- The fidelity table ----------------------------------------------------------------

# (op, params) -> [sum of |diff|, values compared, max |diff|], over every image.
FIDELITY = {}


def measure(op: str, args: tuple, ours: np.ndarray, theirs: np.ndarray) -> int:
    """Records how far `ours` is from `theirs` in FIDELITY; returns the max |diff|."""
    diff = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
    entry = FIDELITY.setdefault((op, ", ".join(f"{a:g}" for a in args)), [0, 0, 0])
    entry[0] += int(diff.sum())
    entry[1] += diff.size
    entry[2] = max(entry[2], int(diff.max()))
    return int(diff.max())


def fidelity_table() -> str:
    rows = ["| op | params | mean diff | max diff |", "|---|---|---|---|"]
    rows += [f"| {op} | {params} | {total / count:.4f} | {worst} |"
             for (op, params), (total, count, worst) in FIDELITY.items()]
    return "\n".join(rows)


@pytest.fixture(scope="module", autouse=True)
def print_fidelity_table():
    yield
    print("\n" + fidelity_table())


@functools.lru_cache(maxsize=None)
def _tool_outputs(cases: tuple) -> dict:
    """(image name, op, args) -> what transform_ops made, for every case of `cases` (a
    frozen {op: [args, ...]}) on every image: one run of the tool per image, as its
    start-up, not the ops, is what takes the time."""
    flat = [(op, args) for op, op_cases in cases for args in op_cases]
    return {(name, op, args): out
            for name, img in IMAGES.items()
            for (op, args), out in zip(flat, run_ops(img, flat))}


def check_op(cases: dict, op: str, tolerance: int = 1) -> None:
    """Compares both sides for `op` at each args tuple of cases[op] on every test image;
    `cases` ({op: [args, ...]}) is run by the tool all at once, the first time."""
    outputs = _tool_outputs(tuple((each, tuple(op_cases)) for each, op_cases in cases.items()))
    for name, img in IMAGES.items():
        for args in cases[op]:
            worst = measure(op, args, outputs[name, op, args], torch_op(img, op, *args))
            assert worst <= tolerance, f"{op}{args} on the {name} image: max |diff| {worst}"


# ---- Colour, blur and flips --------------------------------------------------------------

COLOUR_CASES = {
    "adjust_brightness": [(0.0,), (0.6,), (1.0,), (1.4,), (2.5,)],
    "adjust_contrast": [(0.0,), (0.6,), (1.0,), (1.4,), (2.5,)],
    "adjust_saturation": [(0.0,), (0.6,), (1.0,), (1.4,), (2.5,)],
    "adjust_hue": [(-0.5,), (-0.2,), (0.0,), (0.1,), (0.5,)],
    "rgb_to_grayscale": [()],
    "posterize": [(bits,) for bits in range(9)],
    "solarize": [(0.0,), (64.5,), (128.0,), (255.0,)],
    "autocontrast": [()],
    "equalize": [()],
    "adjust_sharpness": [(0.0,), (0.5,), (1.0,), (2.0,)],
    "invert": [()],
    "gaussian_blur": [(3, 3, 0.1, 0.1), (3, 3, 1.0, 1.0), (5, 5, 0.5, 0.5), (5, 5, 2.0, 2.0),
                      (3, 7, 0.8, 1.6), (7, 3, 2.0, 0.3)],
    "hflip": [()],
    "vflip": [()],
}


@pytest.mark.parametrize("op", list(COLOUR_CASES))
def test_colour_op_matches_torchvision(op):
    check_op(COLOUR_CASES, op)


def test_bad_arguments_are_refused():
    img = IMAGES["5x4"]
    for op, args in [("no_such_op", ()), ("adjust_hue", (0.7,)), ("posterize", (2.5,)),
                     ("gaussian_blur", (4, 3, 1.0, 1.0)), ("adjust_brightness", ())]:
        with pytest.raises(AssertionError, match=r"failed \(2\)"):
            run_op(img, op, *args)


if __name__ == "__main__":
    if not TOOL:
        sys.exit("set FORKFEED_TRANSFORM_OPS to the transform_ops tool")
    for op in COLOUR_CASES:
        check_op(COLOUR_CASES, op, tolerance=255)
    print(fidelity_table())
