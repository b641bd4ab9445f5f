"""Every sample exactly once per epoch, with its label, whatever the worker count and
batch size; len(); rank and world size defaults; one iterator at a time; a Loader is
iterated directly, not wrapped in torch's DataLoader."""

import os
import subprocess

import numpy as np
import pytest
import torch

import forkfeed
from conftest import BIN_DIR, run_python


def one_pass(loader):
    indices, labels = [], []
    while (batch := loader.next_batch()) is not None:
        assert batch.images.shape[0] == batch.labels.shape[0] == len(batch.indices)
        indices += batch.indices
        labels += [int(x) for x in batch.labels]
    return indices, labels


@pytest.mark.parametrize("workers,batch_size", [(1, 7), (2, 8), (3, 16)])
def test_each_sample_once_per_epoch_with_its_label(dataset, labels, workers, batch_size):
    with forkfeed.Loader(dataset, batch_size=batch_size, workers=workers, size=16, seed=5) as loader:
        assert len(loader) == -(-len(labels) // batch_size)
        passes = []
        for epoch in range(2):
            indices, got = one_pass(loader)
            assert sorted(indices) == list(range(len(labels))), f"epoch {epoch}"
            assert got == [labels[i] for i in indices]
            passes.append(indices)
        assert passes[0] != passes[1], "shuffle changes the order between epochs"


def test_iteration_yields_torch_tensors(dataset, labels):
    with forkfeed.Loader(dataset, batch_size=8, workers=2, size=16, dtype="float32") as loader:
        seen = 0
        for images, batch_labels in loader:
            assert isinstance(images, torch.Tensor) and images.dtype == torch.float32
            assert images.shape[1:] == (3, 16, 16)  # NCHW
            assert batch_labels.dtype == torch.int64
            seen += images.shape[0]
        assert seen == len(labels)
        assert loader.classes == [f"class_{c:03d}" for c in range(4)]
        assert loader.stats()["delivered_samples"] == len(labels)


def test_numpy_output(dataset, labels):
    with forkfeed.Loader(dataset, batch_size=8, workers=1, size=16, output="numpy", shuffle=False) as loader:
        batch = loader.next_batch()
        assert isinstance(batch.images, np.ndarray) and batch.images.dtype == np.uint8
        assert batch.images.shape == (8, 16, 16, 3)  # NHWC
        assert batch.indices == list(range(8))
        assert batch.labels.tolist() == labels[:8]


def test_rank_and_world_size_from_environment(dataset, labels, monkeypatch):
    shards = []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        with forkfeed.Loader(dataset, batch_size=8, workers=1, size=16, drop_last=True) as loader:
            assert loader.state_dict()["order"]["rank"] == rank
            shards.append(set(one_pass(loader)[0]))
    assert not shards[0] & shards[1]
    assert len(shards[0]) == len(shards[1]) == 24  # 25 per rank, less the partial batch


def test_rank_and_world_size_from_torch_distributed_first(dataset, tmp_path):
    code = f"""
import torch.distributed as dist
import forkfeed
dist.init_process_group("gloo", init_method="file://{tmp_path}/rendezvous", rank=0, world_size=1)
with forkfeed.Loader({str(dataset)!r}, batch_size=8, workers=1, size=16, output="numpy") as loader:
    order = loader.state_dict()["order"]
    print(order["rank"], order["world_size"])
dist.destroy_process_group()
"""
    # The environment says otherwise; an initialised torch.distributed wins.
    result = run_python(code, env=dict(os.environ, RANK="1", WORLD_SIZE="3"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "1"]


def test_same_order_as_the_cpp_loader(dataset, labels, tmp_path):
    dump = tmp_path / "order.tsv"
    subprocess.run([str(BIN_DIR / "forkfeed-bench"), "--data", str(dataset), "--batch", "7",
                    "--workers", "2", "--size", "16", "--seed", "9", "--epochs", "2",
                    "--dump-indices", str(dump), "--log-level", "warn"],
                   check=True, stdout=subprocess.DEVNULL)
    expected = [tuple(int(x) for x in line.split("\t")) for line in dump.read_text().splitlines()]
    got = []
    with forkfeed.Loader(dataset, batch_size=7, workers=3, size=16, seed=9) as loader:
        for _ in range(2):
            while (batch := loader.next_batch()) is not None:
                got += [(batch.epoch, batch.index, i, labels[i]) for i in batch.indices]
    assert got == expected


def test_a_second_thread_cannot_restart_the_pass_under_the_first(dataset, labels):
    import threading

    with forkfeed.Loader(dataset, batch_size=5, workers=2, size=16, output="numpy") as loader:
        first = iter(loader)
        seen = [int(i) for i in next(first)[1]]
        error = []

        def second():
            try:
                for _ in loader:
                    pass
            except forkfeed.Error as e:
                error.append(str(e))

        thread = threading.Thread(target=second)
        thread.start()
        thread.join()
        assert error and "another thread" in error[0]
        seen += [int(label) for _, batch_labels in first for label in batch_labels]
        assert len(seen) == len(labels), "the first pass went on untouched"
        # next_batch() from several threads shares one pass.
        loader.set_epoch(5)
        indices = []
        end = threading.Event()

        def take():  # the batch (its slot) is let go at once, only its indices kept
            while not end.is_set():
                batch = loader.next_batch()
                if batch is None:
                    end.set()  # a call after the end would start the next epoch
                elif batch.epoch == 5:
                    indices.extend(batch.indices)

        workers = [threading.Thread(target=take) for _ in range(3)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        assert sorted(indices) == list(range(len(labels)))


def test_a_new_for_in_the_same_thread_replaces_the_old_iterator(dataset):
    with forkfeed.Loader(dataset, batch_size=5, workers=1, size=16, output="numpy") as loader:
        old = iter(loader)
        next(old)
        new = iter(loader)
        next(new)
        with pytest.raises(forkfeed.Error, match="replaced by a newer one"):
            next(old)
        assert sum(1 for _ in new) == len(loader) - 1


def test_wrapping_a_loader_in_torchs_dataloader_says_what_to_do(dataset):
    with forkfeed.Loader(dataset, batch_size=5, workers=1, size=16) as loader:
        with pytest.raises(TypeError, match="iterate it directly"):
            next(iter(torch.utils.data.DataLoader(loader)))


def test_a_train_and_a_val_loader_on_one_pool_are_each_exact(dataset, labels):
    train_options = dict(batch_size=4, seed=3)
    val_options = dict(batch_size=8, seed=9, shuffle=False, transform="eval")

    def alone(**options):
        with forkfeed.Loader(dataset, size=16, workers=2, **options) as own:
            return [one_pass(own) for _ in range(2)]

    want_train, want_val = alone(**train_options), alone(**val_options)
    pool = forkfeed.WorkerPool(2)
    assert (pool.workers, pool.loaders) == (2, 0)
    with forkfeed.Loader(dataset, size=16, workers=2, pool=pool, **train_options) as train, \
            forkfeed.Loader(dataset, size=16, workers=2, pool=pool, **val_options) as val:
        assert pool.loaders == 2
        validations = 0
        for epoch in range(2):
            indices, got = [], []
            while (batch := train.next_batch()) is not None:
                indices += batch.indices
                got += [int(x) for x in batch.labels]
                if len(indices) % 12 == 0:  # a whole validation pass every 3 train batches
                    assert one_pass(val) == want_val[0]
                    validations += 1
            assert (indices, got) == want_train[epoch], f"epoch {epoch}"
        assert validations >= 2
    assert pool.loaders == 0
    with pytest.raises(TypeError, match="forkfeed.WorkerPool"):
        forkfeed.Loader(dataset, pool="two workers")
    for bad in (0, 1025, 2**32 + 1):
        with pytest.raises(ValueError, match="workers must be 1 to 1024"):
            forkfeed.WorkerPool(bad)
    with pytest.raises(TypeError, match="workers must be an int"):
        forkfeed.WorkerPool(1.5)
