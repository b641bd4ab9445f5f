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


def test_every_slot_held_raises_and_dropping_them_frees_them(dataset):
    # workers * prefetch + 1 = 3 slots.
    with forkfeed.Loader(dataset, batch_size=4, workers=1, prefetch=2, size=16) as loader:
        held = [loader.next_batch().images[0] for _ in range(3)]  # a view of one sample keeps the slot
        with pytest.raises(forkfeed.Error, match="every batch slot is held"):
            loader.next_batch()
        del held
        gc.collect()
        assert loader.next_batch() is not None


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


def test_labels_alone_keep_the_slot(dataset):
    with forkfeed.Loader(dataset, batch_size=4, workers=1, prefetch=1, size=16) as loader:
        held = []
        for _ in range(2):
            images, labels = loader.next_batch()[:2]
            held.append(labels)
            del images
        with pytest.raises(forkfeed.Error, match="every batch slot is held"):
            loader.next_batch()
