"""forkfeed's geometric ops (F.affine, F.rotate) and AutoAugment's single ops (_apply_op)
against torchvision 0.14 on the same uint8 tensors, through the transform_ops tool
(python/tests/reference/transform_ops.h) named by FORKFEED_TRANSFORM_OPS.

The geometric ops redo torch's float32 arithmetic step for step (transforms/
functional_geometry.cpp), so they must match exactly where torch runs its AVX2/AVX512
kernels (which fuse multiply-adds) over the reference BLAS. Elsewhere torch rounds its own
grid differently and a tie at an exact .5 may move a pixel: there under 0.5% of the
pixels may be off by more than one level. The colour ops, reached through _apply_op, keep
every value within one level. `pytest -s` prints docs/transforms.md's fidelity table, and so does
`FORKFEED_TRANSFORM_OPS=... python3 THIS_FILE`."""

import functools
import os
import subprocess
import tempfile
from typing import Callable, NamedTuple

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = pytest.importorskip("torchvision.transforms.functional")
from torchvision.transforms import InterpolationMode  # noqa: E402
from torchvision.transforms.autoaugment import _apply_op  # noqa: E402

TOOL = os.environ.get("FORKFEED_TRANSFORM_OPS")
pytestmark = pytest.mark.skipif(not TOOL, reason="FORKFEED_TRANSFORM_OPS (the transform_ops tool) is not set")

# augment::Op's order, which the tool's `aa OPINDEX` counts in.
AA_OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color",
          "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]
GEOMETRIC = {"ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"}
INTERPOLATIONS = [InterpolationMode.NEAREST, InterpolationMode.BILINEAR]
FILL = [10, 20, 30]


def _torch_matches_bit_for_bit() -> bool:
    config = torch.__config__.show()
    return "BLAS_INFO=generic" in config and any(
        f"CPU capability usage: {cap}" in config for cap in ("AVX2", "AVX512"))


EXACT_GEOMETRY = _torch_matches_bit_for_bit()


def make_image(height: int, width: int, seed: int) -> np.ndarray:
    """Gradients, flat patches and noise, HWC uint8: edges and plateaus for the resamplers
    and the histogram ops alike."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    smooth = np.stack([xx * 255 // (width - 1), yy * 255 // (height - 1), (xx * 3 + yy * 5) % 256], -1)
    noise = rng.integers(0, 256, (height, width, 3))
    img = np.where(rng.random((height, width, 1)) < 0.3, noise, smooth).astype(np.uint8)
    img[height // 4: height // 2, width // 4: width // 2] = (200, 40, 90)
    return img


IMAGES = {"48x64": make_image(48, 64, 1), "224x224": make_image(224, 224, 2)}


def run_tool(img: np.ndarray, ops: list) -> list:
    """Each tool argument list of `ops` (op name first) applied to `img`, in one run of the
    tool: its start-up, not the ops, is what takes the time."""
    height, width, _ = img.shape
    with tempfile.TemporaryDirectory() as tmp:
        command = [TOOL, os.path.join(tmp, "in.raw"), str(height), str(width)]
        img.tofile(command[1])
        for i, (op, *args) in enumerate(ops):
            out = os.path.join(tmp, f"out{i}.raw")
            command += ([";"] if i else []) + [out, op, *(repr(float(a)) for a in args)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"transform_ops failed ({done.returncode}): {done.stderr}"
        return [np.fromfile(os.path.join(tmp, f"out{i}.raw"), np.uint8).reshape(img.shape)
                for i in range(len(ops))]


def run_torchvision(img: np.ndarray, fn) -> np.ndarray:
    out = fn(torch.from_numpy(img).permute(2, 0, 1).contiguous())
    return out.permute(1, 2, 0).numpy()


def diff_stats(ours: np.ndarray, theirs: np.ndarray) -> dict:
    diff = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
    return {"mean": float(diff.mean()), "max": int(diff.max()),
            "pixels_over_one": float((diff > 1).any(-1).mean())}


class Case(NamedTuple):
    name: str  # the table's op column
    params: str
    image: str  # a key of IMAGES
    torch_call: Callable  # CHW uint8 tensor -> CHW uint8 tensor
    tool_args: tuple  # the tool's OP and ARGs
    geometric: bool  # exact where EXACT_GEOMETRY


def affine_cases():
    geometries = [  # angle, translate, scale, shear, center
        (-30.0, [0, 0], 1.0, [0.0, 0.0], None),
        (12.5, [5, -3], 0.8, [0.0, 0.0], None),
        (90.0, [0, 0], 1.2, [0.0, 0.0], None),
        (180.0, [-7, 4], 1.0, [0.0, 0.0], None),
        (0.0, [0, 0], 1.0, [20.0, 0.0], None),
        (30.0, [2, 2], 1.1, [10.0, -15.0], None),
        (45.0, [0, 0], 1.0, [0.0, 0.0], [5, 9]),
    ]
    for interp in INTERPOLATIONS:
        for angle, translate, scale, shear, center in geometries:
            for fill in (None, FILL) if angle in (12.5, 45.0) else (None,):
                params = f"angle={angle} translate={translate} scale={scale} shear={shear}" + (
                    f" center={center}" if center else "") + (f" fill={fill}" if fill else "")
                args = [angle, *translate, scale, *shear, INTERPOLATIONS.index(interp), *(fill or [0, 0, 0]),
                        *(center or [])]
                call = (lambda t, a=angle, tr=translate, s=scale, sh=shear, i=interp, f=fill, c=center:
                        F.affine(t, a, tr, s, sh, interpolation=i, fill=f, center=c))
                yield Case(f"affine {interp.value}", params, "48x64", call, ("affine", *args), True)
    yield Case("affine bilinear", "angle=-30.0 translate=[3, 1] scale=0.9 shear=[5.0, 5.0]", "224x224",
               lambda t: F.affine(t, -30.0, [3, 1], 0.9, [5.0, 5.0], interpolation=INTERPOLATIONS[1]),
               ("affine", -30.0, 3, 1, 0.9, 5.0, 5.0, 1, 0, 0, 0), True)


def rotate_cases():
    for interp in INTERPOLATIONS:
        for angle, center, fill in [(-30.0, None, None), (12.5, None, FILL), (90.0, None, None),
                                    (180.0, [10, 20], None), (33.0, [10, 20], FILL)]:
            params = f"angle={angle}" + (f" center={center}" if center else "") + (
                f" fill={fill}" if fill else "")
            args = [angle, INTERPOLATIONS.index(interp), *(fill or [0, 0, 0]), *(center or [])]
            call = (lambda t, a=angle, i=interp, f=fill, c=center:
                    F.rotate(t, a, interpolation=i, center=c, fill=f))
            yield Case(f"rotate {interp.value}", params, "48x64", call, ("rotate", *args), True)


def auto_augment_cases():
    magnitudes = {
        "Identity": [0.0], "ShearX": [0.3, -0.1], "ShearY": [0.3, -0.1], "TranslateX": [10.0, -7.0],
        "TranslateY": [10.7, -7.6], "Rotate": [30.0, -15.0], "Brightness": [0.5, -0.5], "Color": [0.5, -0.5],
        "Contrast": [0.5, -0.5], "Sharpness": [0.5, -0.5], "Posterize": [4.0, 2.7], "Solarize": [128.0, 50.0],
        "AutoContrast": [0.0], "Equalize": [0.0], "Invert": [0.0],
    }
    for op, values in magnitudes.items():
        for magnitude in values:
            for interp in INTERPOLATIONS if op in GEOMETRIC else INTERPOLATIONS[:1]:
                for fill in (None, FILL) if op in GEOMETRIC and magnitude > 0 else (None,):
                    params = (f"{magnitude}" + (f" {interp.value}" if op in GEOMETRIC else "")
                              + (f" fill={fill}" if fill else ""))
                    call = (lambda t, o=op, m=magnitude, i=interp, f=fill: _apply_op(t, o, m, i, f))
                    args = [AA_OPS.index(op), magnitude, INTERPOLATIONS.index(interp), *(fill or [])]
                    yield Case(f"AutoAugment {op}", params, "48x64", call, ("aa", *args), op in GEOMETRIC)


CASES = [*affine_cases(), *rotate_cases(), *auto_augment_cases()]


@functools.lru_cache(maxsize=None)
def tool_outputs(image: str) -> dict:
    """The tool's output for every case on `image`, by case index."""
    indices = [i for i, case in enumerate(CASES) if case.image == image]
    return dict(zip(indices, run_tool(IMAGES[image], [CASES[i].tool_args for i in indices])))


@functools.lru_cache(maxsize=None)
def measure(index: int) -> dict:
    case = CASES[index]
    return diff_stats(tool_outputs(case.image)[index], run_torchvision(IMAGES[case.image], case.torch_call))


def markdown_table() -> str:
    rows = ["| op | params | mean diff | max diff | pixels > 1 |", "|---|---|---|---|---|"]
    for index, case in enumerate(CASES):
        stats = measure(index)
        rows.append(f"| {case.name} | {case.params} ({case.image}) | {stats['mean']:.4f} | {stats['max']} | "
                    f"{100 * stats['pixels_over_one']:.2f}% |")
    return "\n".join(rows)


@pytest.fixture(scope="module", autouse=True)
def print_fidelity_table():
    yield
    print("\n" + markdown_table())


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.name} {c.params} {c.image}" for c in CASES])
def test_matches_torchvision(index):
    case, stats = CASES[index], measure(index)
    if case.geometric and EXACT_GEOMETRY:
        assert stats["max"] == 0, f"{case.name} {case.params}: torchvision's pixels exactly expected: {stats}"
    elif case.geometric:
        assert stats["pixels_over_one"] < 0.005 and stats["mean"] < 0.5, f"{case.name} {case.params}: {stats}"
    else:
        assert stats["max"] <= 1, f"{case.name} {case.params}: {stats}"


def test_bad_arguments_are_refused():
    img = IMAGES["48x64"]
    for args in [("affine", 0, 0, 0, 1.0, 0, 0, 2, 0, 0, 0), ("affine", 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0),
                 ("affine", 0, 0, 0, 1.0, 0, 0, 0), ("rotate", 30.0, 1, 0, 0), ("aa", 15, 0.0, 0),
                 ("aa", 1.5, 0.3, 0)]:
        with pytest.raises(AssertionError, match=r"failed \(2\)"):
            run_tool(img, [args])


if __name__ == "__main__":
    if not TOOL:
        raise SystemExit("set FORKFEED_TRANSFORM_OPS to the transform_ops tool")
    print(markdown_table())
