"""Batches are views of their slot in the shared memory arena, with no copy, and the
slot returns to the pool only when the last view of it dies."""

import gc

import numpy as np
import pytest
import torch

import forkfeed


def inside(loader, tensor):
    base, size = loader.shared_memory()
    start = tensor.data_ptr()
    return base <= start and start + tensor.numel() * tensor.element_size() <= base + size


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_every_batch_lies_in_the_arena(dataset, dtype):
    with forkfeed.Loader(dataset, batch_size=8, workers=2, size=16, dtype=dtype) as loader:
        for images, labels in loader:
            assert inside(loader, images) and inside(loader, labels)


def test_numpy_arrays_lie_in_the_arena_and_write_through(dataset):
    with forkfeed.Loader(dataset, batch_size=8, workers=1, size=16, output="numpy") as loader:
        base, size = loader.shared_memory()
        batch = loader.next_batch()
        address = batch.images.__array_interface__["data"][0]
        assert base <= address < base + size
        assert not batch.images.flags["OWNDATA"]
        # The same memory seen through a second, independent view: the arena itself.
        before = int(batch.images[0, 0, 0, 0])
        batch.images[0, 0, 0, 0] = (before + 1) % 256
        again = np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint8) * 1).from_address(address), np.uint8)
        assert int(again[0]) == (before + 1) % 256


def test_batches_kept_past_every_slot_are_copied_aside_and_the_pass_goes_on(dataset, capfd):
    """Found from outside: list(loader) raised "every batch slot is held" after prefetch batches."""
    options = dict(batch_size=4, workers=1, prefetch=1, size=16, seed=3)  # 2 slots
    with forkfeed.Loader(dataset, **options) as reference:
        expected = [(images.clone(), labels.clone()) for images, labels in reference]
    with forkfeed.Loader(dataset, **options) as loader:
        kept = list(loader)
        for _ in range(2):  # the slots they were read in are filled again and again meanwhile
            assert len(list(loader)) == len(expected)
        stats = loader.stats()
    assert len(kept) == len(expected) > 3
    for (images, labels), (want_images, want_labels) in zip(kept, expected):
        assert torch.equal(images, want_images) and torch.equal(labels, want_labels)
    assert stats["copied_batches"] >= len(expected) - 2 and stats["copied_bytes"] > 0
    warned = [line for line in capfd.readouterr().err.splitlines()
              if "was copied into private memory" in line]
    assert len(warned) == 1, "warned once"


def test_no_batch_is_copied_while_fewer_than_every_slot_are_held(dataset):
    with forkfeed.Loader(dataset, batch_size=4, workers=2, prefetch=2, size=16) as loader:
        for _ in range(2):
            for images, labels in loader:
                assert inside(loader, images)
        assert loader.stats()["copied_batches"] == 0


def test_held_tensor_keeps_its_slot_and_stays_unchanged(dataset):
    with forkfeed.Loader(dataset, batch_size=4, workers=2, size=16) as loader:
        kept, _ = next(iter(loader))
        copy = kept.clone()
        for _ in range(2):  # two whole epochs through the other slots
            for images, labels in loader:
                assert images.data_ptr() != kept.data_ptr()
        assert torch.equal(kept, copy)
    # After close(): still mapped, still the same.
    assert torch.equal(kept, copy)


def test_labels_alone_keep_the_slot_until_copied_aside(dataset):
    with forkfeed.Loader(dataset, batch_size=4, workers=1, prefetch=1, size=16) as loader:
        held = []
        for _ in range(2):
            images, labels = loader.next_batch()[:2]
            held.append((labels, labels.clone()))
            del images
        assert loader.stats()["copied_batches"] == 0
        loader.next_batch()  # every slot held: the oldest is copied aside, its labels with it
        assert loader.stats()["copied_batches"] == 1
        for labels, copy in held:
            assert torch.equal(labels, copy)


def test_a_client_local_or_remote_copies_aside_what_it_keeps_as_a_loader_does(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    from conftest import read_through_forkfeedd, recomputed_shards
    shards, _, _ = recomputed_shards(tmp_path / "shards", dataset, samples=40)  # 10 batches
    options = dict(batch_size=4, workers=1, prefetch=1, size=16, seed=3, transform="eval")
    with forkfeed.Loader(shards=str(shards), **options) as loader:
        expected = [(images.clone(), labels.clone()) for images, labels in loader]

    def keep_all(client):
        kept = list(client)
        again = len(list(client))  # the next pass, through slots the kept ones left
        return kept, again, client.stats()["copied_batches"]

    for where, (kept, again, copied) in read_through_forkfeedd(tmp_path, dataset, shards, options, keep_all):
        assert len(kept) == len(expected) == again, where
        for (images, labels), (want_images, want_labels) in zip(kept, expected):
            assert torch.equal(images, want_images) and torch.equal(labels, want_labels), where
        assert copied > 0, where
