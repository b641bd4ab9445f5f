"""What the shard benchmarks (fields.py, targets.py) share: WebDataset shards of samples cut
from photographs, the samples of shards as the PyTorch DataLoader's workers read them, a
batch touched page by page, and rounds that alternate the rows, each in a process of its
own."""
import argparse
import io
import json
import pathlib
import random
import statistics
import subprocess
import sys
import tarfile


def add_arguments(parser) -> None:
    """The options every shard benchmark takes: where the shards are (and the photographs to
    write them from), how many, and how the loaders and rounds run."""
    parser.add_argument("--shards", required=True,
                        help="folder of shard-NNNNNN.tar (written first with --photos)")
    parser.add_argument("--photos", help="folder of photographs to cut the shards' images from")
    parser.add_argument("--images", type=int, default=1024, help="with --photos: samples to write")
    parser.add_argument("--shard-size", type=int, default=128)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run", help=argparse.SUPPRESS)


def photo_sources(photos: pathlib.Path, script: str) -> list:
    """The colour photographs of 256 pixels or more on a side in `photos`, as PIL images."""
    from PIL import Image

    sources = [Image.open(p).convert("RGB") for p in sorted(photos.iterdir())
               if p.suffix.lower() in (".jpg", ".jpeg", ".png") and p.stat().st_size > 50_000]
    sources = [s for s in sources if min(s.size) >= 256]
    if not sources:
        sys.exit(f"{script}: no colour photographs of 256 pixels or more in {photos}")
    return sources


def cut(photo, rng: random.Random):
    """A random crop of 40-100% of each side, rescaled to a shorter side of 256-512 pixels,
    as ImageNet's photographs are."""
    w, h = photo.size
    cw, ch = int(w * rng.uniform(0.4, 1.0)), int(h * rng.uniform(0.4, 1.0))
    x, y = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
    scale = rng.randrange(256, 513) / min(cw, ch)
    return photo.crop((x, y, x + cw, y + ch)).resize((round(cw * scale), round(ch * scale)))


def jpeg(image) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    return out.getvalue()


def write_shards(out: pathlib.Path, images: int, shard_size: int, sample) -> None:
    """Shards out/shard-NNNNNN.tar of `shard_size` samples; sample(n) gives sample n's members,
    [(extension, bytes)], written under the key n (7 digits)."""
    out.mkdir(parents=True, exist_ok=True)
    for first in range(0, images, shard_size):
        with tarfile.open(out / f"shard-{first // shard_size:06d}.tar", "w") as tar:
            for n in range(first, min(first + shard_size, images)):
                for extension, data in sample(n):
                    info = tarfile.TarInfo(f"{n:07d}.{extension}")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))


def shard_samples(shards: str):
    """Each sample of the shards in `shards` as {extension: bytes, "__key__": key}: in a
    DataLoader's worker, the shards of that worker (split by shard, as WebDataset does)."""
    import torch

    paths = sorted(str(p) for p in pathlib.Path(shards).glob("*.tar"))
    info = torch.utils.data.get_worker_info()
    for shard in paths if info is None else paths[info.id::info.num_workers]:
        with tarfile.open(shard) as tar:
            sample = {}
            for member in tar:
                key, _, extension = member.name.partition(".")
                if sample and sample["__key__"] != key:
                    yield sample
                    sample = {}
                sample["__key__"] = key
                sample[extension] = tar.extractfile(member).read()
            if sample:
                yield sample


def touch(tensor) -> int:
    """One byte of every page, as forkfeed-bench reads a batch."""
    import torch

    return int(tensor.reshape(-1).view(dtype=torch.uint8)[::4096].sum())


def alternate(rows, rounds: int, script: str) -> dict:
    """Each row's results, one per round: `script --run ROW` with this process's arguments
    in a process of its own, the rows in turn, alternating their order between rounds
    (each prints its result as JSON on its last line)."""
    results = {row: [] for row in rows}
    for round_ in range(rounds):
        for row in rows if round_ % 2 == 0 else reversed(rows):
            out = subprocess.run([sys.executable, script, "--run", row, *sys.argv[1:]], capture_output=True,
                                 text=True)
            if out.returncode != 0:
                sys.exit(f"{pathlib.Path(script).name}: the {row} row failed:\n{out.stderr}")
            results[row].append(json.loads(out.stdout.splitlines()[-1]))
    return results


def median(values) -> float:
    return statistics.median(values)
