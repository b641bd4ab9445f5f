"""state_dict() is a plain dict that json, pickle and torch.save keep, and resuming from
it, with another worker count or in another process, continues exactly."""

import hashlib
import io
import json
import pickle
import shutil

import pytest
import torch

import forkfeed
from conftest import recomputed_shards, run_python

OPTIONS = dict(batch_size=7, size=16, seed=11, dtype="uint8")


def take(loader, n):
    """The next n batches as (dataset indices, pixel digest) pairs."""
    out = []
    for _ in range(n):
        batch = loader.next_batch()
        if batch is None:
            batch = loader.next_batch()  # the end of a pass; the next call starts the next
        out.append((batch.epoch, batch.indices, hashlib.sha1(batch.images.numpy().tobytes()).hexdigest()))
    return out


@pytest.mark.parametrize("stop", [3, 8])  # mid-epoch; right after the last batch (8 per epoch)
def test_resume_with_another_worker_count(dataset, stop):
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        whole = take(loader, 12)
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        first = take(loader, stop)
        state = loader.state_dict()
    for encode, decode in [(json.dumps, json.loads), (pickle.dumps, pickle.loads),
                           (_torch_save, lambda b: torch.load(io.BytesIO(b)))]:
        restored = decode(encode(state))
        assert restored == state
        with forkfeed.Loader(dataset, workers=3, **OPTIONS) as resumed:
            resumed.load_state_dict(restored)
            assert first + take(resumed, 12 - stop) == whole


def _torch_save(state):
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def test_resume_in_another_process(dataset):
    with forkfeed.Loader(dataset, workers=2, **OPTIONS) as loader:
        whole = take(loader, 6)
    with forkfeed.Loader(dataset, workers=2, **OPTIONS) as loader:
        first = take(loader, 2)
        state = loader.state_dict()
    code = f"""
import json, forkfeed, hashlib
loader = forkfeed.Loader({str(dataset)!r}, workers=1, **{OPTIONS!r})
loader.load_state_dict(json.loads({json.dumps(state)!r}))
out = []
for _ in range(4):
    b = loader.next_batch()
    out.append([b.epoch, b.indices, hashlib.sha1(b.images.numpy().tobytes()).hexdigest()])
print(json.dumps(out))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    rest = [tuple(x) for x in json.loads(result.stdout)]
    assert first + rest == whole


@pytest.mark.parametrize("source", ["Loader", "Client"])
@pytest.mark.parametrize("stop", [3, 8, 11])  # mid-epoch 0; epoch 0's end; mid-epoch 1
def test_the_training_loop_resumes_exactly(dataset, request, source, stop):
    """The loop every trainer writes: load_state_dict, then set_epoch and `for` per epoch."""
    def make(workers):
        if source == "Loader":
            return forkfeed.Loader(dataset, workers=workers, **OPTIONS)
        return forkfeed.Client(dataset, socket=request.getfixturevalue("daemon").socket, workers=workers,
                               **OPTIONS)

    def train(loader, start_epoch, stop_after=None):
        seen = []
        for epoch in range(start_epoch, 2):
            loader.set_epoch(epoch)
            for images, labels in loader:
                seen.append((epoch, images.numpy().tobytes(), labels.tolist()))
                if len(seen) == stop_after:
                    return seen
        return seen

    with make(2) as loader:
        whole = train(loader, 0)
    assert len(whole) == 16
    with make(2) as loader:
        first = train(loader, 0, stop_after=stop)
        state = loader.state_dict()
    with make(1) as loader:
        loader.load_state_dict(state)
        rest = train(loader, state["epoch"])
    assert first + rest == whole


def test_state_from_other_order_is_refused(dataset):
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        state = loader.state_dict()
    with forkfeed.Loader(dataset, workers=1, **dict(OPTIONS, batch_size=5)) as other:
        with pytest.raises(ValueError, match="batch"):
            other.load_state_dict(state)
        assert other.epoch == 0


def test_a_state_moves_with_its_files_and_other_bytes_are_refused(dataset, tmp_path):
    """A dataset is its files' names under its root, labels and sizes, not its path."""
    moved = tmp_path / "mounted" / "elsewhere"
    shutil.copytree(dataset, moved)
    with forkfeed.Loader(str(dataset), workers=1, **OPTIONS) as loader:
        take(loader, 3)
        state = loader.state_dict()
        want = take(loader, 4)
    with forkfeed.Loader(str(moved), workers=1, **OPTIONS) as there:
        there.load_state_dict(state)
        assert take(there, 4) == want
    # One image re-encoded (here: a byte longer) under the same name.
    victim = sorted(p for p in moved.rglob("*") if p.is_file())[0]
    victim.write_bytes(victim.read_bytes() + b"\0")
    with forkfeed.Loader(str(moved), workers=1, **OPTIONS) as there:
        with pytest.raises(ValueError,
                           match="another dataset than this loader's: sizes differ in sample") as refused:
            there.load_state_dict(state)
        assert str(victim.relative_to(moved)) in str(refused.value)


def test_a_state_on_other_bytes_of_the_same_names_and_sizes_is_refused(dataset, tmp_path):
    """Found from outside: embeddings recomputed at the same size resumed without a word."""
    a, b, fields = recomputed_shards(tmp_path, dataset)
    options = dict(fields=fields, batch_size=4, size=16, workers=1, seed=3)
    with forkfeed.Loader(shards=str(a), **options) as loader:
        next(iter(loader))
        state = loader.state_dict()
    with forkfeed.Loader(shards=str(b), **options) as other:
        with pytest.raises(ValueError, match=r"another dataset than this loader's: contents differ in "
                                             r"samples 0-11 \(.*\) "
                                             r"\(other bytes under the same names and sizes\)"):
            other.load_state_dict(state)
    with forkfeed.Loader(shards=str(a), **options) as same:
        same.load_state_dict(state)


def test_a_state_of_other_fields_says_which(dataset, tmp_path):
    """Found from outside: fields renamed or reordered were refused as "labels differ"."""
    a, _, fields = recomputed_shards(tmp_path, dataset)
    options = dict(batch_size=4, size=16, workers=1, seed=3)
    with forkfeed.Loader(shards=str(a), fields=fields, **options) as loader:
        state = loader.state_dict()
    renamed = {"img" if k == "image" else k: v for k, v in fields.items()}
    with forkfeed.Loader(shards=str(a), fields=renamed, **options) as other:
        with pytest.raises(ValueError, match=r"fields differ \('image=jpg;png, label=cls, emb=npy' against "
                                             r"'img=jpg;png, label=cls, emb=npy'\)") as refused:
            other.load_state_dict(state)
        assert "labels differ" not in str(refused.value)
