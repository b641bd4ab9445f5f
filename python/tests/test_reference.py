"""The package delivers what the C++ Loader delivers: the same samples in the same
batches, the same labels and the same bytes, for both transforms and both dtypes; and
the ranks of a torchrun job spawn their workers and read disjoint shards that cover the dataset."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import forkfeed
# Built with the package when tests are on (python/CMakeLists.txt); ctest says where.
REFERENCE = pathlib.Path(os.environ.get("FORKFEED_REFERENCE_BATCHES", "reference_batches"))


def reference_batches(dataset, out, *, batch_size, workers, size, seed, transform, dtype, epochs):
    """The C++ Loader's batches: [(epoch, index, indices, labels, image bytes)]."""
    subprocess.run([str(REFERENCE), str(dataset), str(out), str(batch_size), str(workers), str(size),
                    str(seed), transform, dtype, str(epochs)], check=True)
    data, at, batches = out.read_bytes(), 0, []

    def take(count, kind):
        nonlocal at
        values = np.frombuffer(data, dtype=kind, count=count, offset=at)
        at += values.nbytes
        return values

    while at < len(data):
        epoch, index, samples, pixel_bytes = (int(x) for x in take(4, np.uint64))
        indices = [int(x) for x in take(samples, np.uint64)]
        labels = [int(x) for x in take(samples, np.int64)]
        batches.append((epoch, index, indices, labels, take(pixel_bytes, np.uint8).tobytes()))
    return batches


@pytest.mark.parametrize("transform,dtype", [("train", "uint8"), ("eval", "uint8"),
                                             ("train", "float32"), ("eval", "float32")])
def test_same_batches_labels_and_pixels_as_the_cpp_loader(dataset, tmp_path, transform, dtype):
    options = dict(batch_size=7, size=20, seed=5, transform=transform, dtype=dtype)
    expected = reference_batches(dataset, tmp_path / "ref.bin", workers=2, epochs=2, **options)
    got = []
    with forkfeed.Loader(dataset, workers=3, **options) as loader:
        for _ in range(2):
            while (batch := loader.next_batch()) is not None:
                assert batch.images.dtype == getattr(torch, dtype)
                got.append((batch.epoch, batch.index, batch.indices, batch.labels.tolist(),
                            batch.images.contiguous().numpy().tobytes()))
    assert len(got) == len(expected) == 2 * 8  # 50 samples in batches of 7
    for g, e in zip(got, expected):
        assert g[:4] == e[:4]
        assert g[4] == e[4], f"pixels of batch {e[1]} of epoch {e[0]} differ"


def test_torchrun_ranks_spawn_and_read_disjoint_shards_that_cover_the_data(dataset, labels, tmp_path):
    # Each rank of `torchrun --nproc_per_node 2` joins a gloo group (whose threads make
    # it a hazardous parent) and takes rank and world size from torch.distributed.
    script = tmp_path / "rank.py"
    script.write_text(f"""
import json, os
import torch.distributed as dist
import forkfeed
dist.init_process_group("gloo")
rows = []
with forkfeed.Loader({str(dataset)!r}, batch_size=6, workers=1, size=16, seed=4,
                     output="numpy") as loader:
    for epoch in range(2):
        loader.set_epoch(epoch)
        while (batch := loader.next_batch()) is not None:
            rows += [(epoch, i, int(label)) for i, label in zip(batch.indices, batch.labels)]
    start_method = loader.stats()["start_method"]
with open({str(tmp_path)!r} + f"/rank{{dist.get_rank()}}.json", "w") as out:
    json.dump({{"start_method": start_method, "rows": rows}}, out)
dist.barrier()
dist.destroy_process_group()
""")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "FORKFEED_WORKER")}
    # --redirects/--tee 1: Debian's torch 1.13 cannot parse their default "0" on Python
    # 3.11 (Std.from_str iterates an IntFlag, which no longer yields its zero member).
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                             "--nproc_per_node", "2", "--redirects", "1", "--tee", "1", str(script)],
                            env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["start_method"] for r in ranks] == ["spawn", "spawn"]
    for epoch in range(2):
        shards = []
        for r in ranks:
            shard = [(i, label) for e, i, label in r["rows"] if e == epoch]
            assert all(label == labels[i] for i, label in shard)
            shards.append([i for i, _ in shard])
        # 50 samples over 2 ranks: 25 each, none on both ranks.
        assert len(shards[0]) == len(shards[1]) == 25
        assert not set(shards[0]) & set(shards[1])
        assert sorted(shards[0] + shards[1]) == list(range(50))
