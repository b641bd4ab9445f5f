"""Fixtures for the forkfeed package's tests: a small ImageFolder dataset made with
forkfeed-mkdata, and what its labels are."""

import os
import pathlib
import subprocess
import sys

import pytest

# ctest sets both; by hand: PYTHONPATH=build/python FORKFEED_BIN_DIR=build/bin.
BIN_DIR = pathlib.Path(os.environ.get("FORKFEED_BIN_DIR",
                                      pathlib.Path(__file__).resolve().parents[2] / "build" / "bin"))

IMAGES = 50
CLASSES = 4


def make_dataset(root: pathlib.Path, images: int = IMAGES, classes: int = CLASSES, seed: int = 3) -> pathlib.Path:
    subprocess.run([str(BIN_DIR / "forkfeed-mkdata"), "--out", str(root), "--images", str(images),
                    "--classes", str(classes), "--seed", str(seed), "--min-side", "24", "--max-side", "48"],
                   check=True, stdout=subprocess.DEVNULL)
    return root


def image_folder_labels(root: pathlib.Path) -> list:
    """Label of each dataset index by torchvision's ImageFolder rules (sorted classes,
    sorted files), which forkfeed follows."""
    labels = []
    for label, cls in enumerate(sorted(p.name for p in root.iterdir() if p.is_dir())):
        labels += [label] * sum(1 for p in (root / cls).rglob("*") if p.is_file())
    return labels


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> pathlib.Path:
    return make_dataset(tmp_path_factory.mktemp("data") / "train")


@pytest.fixture(scope="session")
def labels(dataset) -> list:
    return image_folder_labels(dataset)


def run_python(code: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (this one: /usr/bin/python3 under ctest) with
    `env`, by default this process's environment (and so its PYTHONPATH)."""
    env = dict(os.environ) if env is None else env
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout)
