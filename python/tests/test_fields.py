"""Samples of several fields (fields=): a dict per batch, each field as the contract in
forkfeed.Loader's docstring says, checked against the shards' members read with tarfile."""

import io
import json
import os
import pathlib
import signal
import subprocess
import tarfile

import numpy as np
import pytest
import torch

import forkfeed
from forkfeed.transforms import RandomHorizontalFlip, RandomResizedCrop

from conftest import BIN_DIR, listening_daemon, read_through_forkfeedd, token_file, write_tar

FIELDS = {"image": "jpg;png", "caption": "txt", "label": "cls", "meta": "json", "emb": "npy"}
OPTIONS = dict(batch_size=8, workers=2, transform="eval", size=16, seed=5)


def make_shards(root: pathlib.Path, images: int = 40) -> str:
    subprocess.run([str(BIN_DIR / "forkfeed-mkdata"), "--out", str(root), "--images", str(images),
                    "--classes", "3", "--seed", "4", "--min-side", "24", "--max-side", "40",
                    "--format", "wds", "--shard-size", "16", "--fields", "jpg,txt,cls,json,npy"],
                   check=True, stdout=subprocess.DEVNULL)
    return str(root)


def read_samples(root: str) -> list:
    """Each sample's members ({extension: bytes}, and its "__key__"), in the shards' order:
    what sample index i is."""
    samples = []
    for shard in sorted(pathlib.Path(root).glob("*.tar")):
        with tarfile.open(shard) as tar:
            for member in tar:
                directory, _, base = member.name.rpartition("/")
                stem, _, extension = base.partition(".")
                key = f"{directory}/{stem}" if directory else stem
                if not samples or samples[-1]["__key__"] != key:
                    samples.append({"__key__": key})
                samples[-1][extension] = tar.extractfile(member).read()
    return samples


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> str:
    return make_shards(tmp_path_factory.mktemp("fields") / "shards")


@pytest.fixture(scope="module")
def samples(shards) -> list:
    return read_samples(shards)


def test_each_field_of_each_sample_is_its_member_and_the_images_are_a_plain_loaders(shards, samples):
    with forkfeed.Loader(shards=shards, fields=FIELDS, **OPTIONS) as loader, \
            forkfeed.Loader(shards=shards, **OPTIONS) as plain:
        seen = []
        for (images, labels), batch in zip(plain, iter(loader.next_batch, None)):
            fields = batch.fields
            assert list(fields) == [*FIELDS, "__key__"]
            n = len(batch.indices)
            # The first image field draws as a loader without fields does: the same pixels, zero-copy.
            assert torch.equal(fields["image"], images) and fields["image"].shape == (n, 16, 16, 3)
            assert torch.equal(fields["label"], labels) and fields["label"].dtype == torch.int64
            assert fields["emb"].dtype == torch.float32 and fields["emb"].shape == (n, 8)
            for row, i in enumerate(batch.indices):
                sample = samples[i]
                assert fields["__key__"][row] == sample["__key__"]
                assert fields["caption"][row] == sample["txt"].decode("utf-8")
                assert isinstance(fields["meta"][row], bytes) and fields["meta"][row] == sample["json"]
                assert int(fields["label"][row]) == int(sample["cls"]) == json.loads(sample["json"])["label"]
                expected = np.load(io.BytesIO(sample["npy"]))
                assert np.array_equal(fields["emb"][row].numpy(), expected)
            seen += batch.indices
        assert sorted(seen) == list(range(len(samples)))


def test_numpy_output_gives_arrays_and_the_same_values(shards, samples):
    with forkfeed.Loader(shards=shards, fields=FIELDS, output="numpy", **OPTIONS) as loader:
        batch = loader.next_batch()
        fields = batch.fields
        assert isinstance(fields["image"], np.ndarray) and fields["image"].dtype == np.uint8
        assert fields["label"].dtype == np.int64 and fields["emb"].dtype == np.float32
        assert [fields["caption"][r] for r in range(len(batch.indices))] == \
            [samples[i]["txt"].decode() for i in batch.indices]
        address, size = loader.shared_memory()
        for name in ("image", "label", "emb"):  # read in place, in the arena
            assert address <= fields[name].ctypes.data < address + size


def test_dense_fields_are_views_of_the_arena(shards):
    with forkfeed.Loader(shards=shards, fields=FIELDS, **OPTIONS) as loader:
        fields = next(iter(loader))
        address, size = loader.shared_memory()
        for name in ("image", "label", "emb"):
            assert address <= fields[name].data_ptr() < address + size, name
        kept = fields["image"].clone()
    # The tensors keep their slot alive after the loader is gone.
    assert torch.equal(fields["image"], kept)


def test_two_views_of_one_image_have_their_own_pipelines(shards):
    fields = {"image": "jpg;png", "view2": "jpg;png", "label": "cls"}
    transform = {"image": [RandomResizedCrop(16)], "view2": [RandomResizedCrop(12), RandomHorizontalFlip()]}
    options = dict(batch_size=8, workers=2, seed=5)
    with forkfeed.Loader(shards=shards, fields=fields, transform=transform, **options) as loader, \
            forkfeed.Loader(shards=shards, transform="RandomResizedCrop(16)", **options) as plain:
        fields_batch = next(iter(loader))
        images, labels = next(iter(plain))
    assert fields_batch["view2"].shape[1:] == (12, 12, 3)
    assert torch.equal(fields_batch["image"], images) and torch.equal(fields_batch["label"], labels)


def test_missing_empty_gives_empty_values_and_presence(tmp_path, samples):
    # Samples 1 and 3 lack their caption.
    members = []
    for n, sample in enumerate(samples[:6]):
        key = f"s{n:03d}"
        members.append((f"{key}.jpg", sample["jpg"] if "jpg" in sample else sample["png"]))
        if n not in (1, 3):
            members.append((f"{key}.txt", sample["txt"]))
        members.append((f"{key}.cls", b"%d" % n))
    write_tar(tmp_path / "a.tar", members)
    fields = {"image": "jpg", "caption": "txt", "label": "cls"}
    with forkfeed.Loader(shards=str(tmp_path / "a.tar"), fields=fields, missing="empty", shuffle=False,
                         batch_size=6, workers=1, transform="eval", size=8) as loader:
        batch = next(iter(loader))
    assert [int(v) for v in batch["label"]] == list(range(6))
    present = batch["__present__"]
    assert list(present) == ["image", "caption", "label", "__key__"]
    assert present["caption"].dtype == torch.bool
    assert present["caption"].tolist() == [True, False, True, False, True, True]
    assert [c == "" for c in batch["caption"]] == [False, True, False, True, False, False]
    assert batch["__key__"] == [f"s{n:03d}" for n in range(6)]
    with forkfeed.Loader(shards=str(tmp_path / "a.tar"), fields=fields, missing="skip", shuffle=False,
                         batch_size=6, workers=1, transform="eval", size=8) as loader:
        batch = next(iter(loader))
        assert [int(v) for v in batch["label"]] == [0, 2, 4, 5] and "__present__" not in batch
        assert loader.stats()["skipped_samples"] == 2


def npy(array) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def test_an_array_of_no_dimensions_keeps_its_value_among_others_and_a_missing_one_is_empty(tmp_path, samples,
                                                                                           dataset):
    # Of each its own shape, so the field comes as a list: two 0-d arrays, a missing one.
    arrays = [np.array(5.0, np.float32), np.arange(3, dtype=np.float32), None,
              np.ones((2, 2), np.float32), np.array(-1.5, np.float32)]
    members = []
    for n, array in enumerate(arrays):
        image = "jpg" if "jpg" in samples[n] else "png"
        members += [(f"s{n}.{image}", samples[n][image]), (f"s{n}.cls", b"%d" % n)]
        if array is not None:
            members.append((f"s{n}.npy", npy(array)))
    write_tar(tmp_path / "a.tar", members)
    options = dict(fields={"image": "jpg;png", "label": "cls", "emb": "npy"}, missing="empty", shuffle=False,
                   batch_size=5, workers=1, transform="eval", size=8)

    def check(batch, where):
        for array, value, present in zip(arrays, batch["emb"], batch["__present__"]["emb"].tolist()):
            value = np.asarray(value)
            assert present == (array is not None), where
            expected = np.zeros(0, np.float32) if array is None else array
            assert value.shape == expected.shape and value.dtype == np.float32, (where, value.shape)
            assert np.array_equal(value, expected), where

    for output in ("torch", "numpy"):
        with forkfeed.Loader(shards=str(tmp_path / "a.tar"), output=output, **options) as loader:
            check(next(iter(loader)), output)
    for where, batch in read_through_forkfeedd(tmp_path, dataset, tmp_path / "a.tar", options,
                                               lambda client: next(iter(client))):
        check(batch, where)


def test_a_bad_member_is_named_by_its_own_name(tmp_path, samples):
    # Sample 2's caption is not UTF-8: found by the worker, named by its .txt member.
    members = []
    for n, sample in enumerate(samples[:4]):
        key = f"s{n:03d}"
        members.append((f"{key}.jpg", sample["jpg"] if "jpg" in sample else sample["png"]))
        members.append((f"{key}.txt", b"caf\xe9" if n == 2 else sample["txt"]))
        members.append((f"{key}.cls", b"%d" % n))
    write_tar(tmp_path / "a.tar", members)
    options = dict(shards=str(tmp_path / "a.tar"), fields={"image": "jpg", "caption": "txt", "label": "cls"},
                   shuffle=False, batch_size=4, workers=1, transform="eval", size=8)
    with forkfeed.Loader(**options) as loader, pytest.raises(forkfeed.Error) as error:
        next(iter(loader))
    assert "field 'caption' (member 's002.txt'): is not UTF-8 at byte 3" in str(error.value), str(error.value)
    with forkfeed.Loader(on_error="skip", **options) as loader:
        assert [int(v) for v in next(iter(loader))["label"]] == [0, 1, 3]
        assert loader.stats()["skipped_samples"] == 1


def test_bad_fields_and_transforms_are_refused_naming_them(shards):
    with pytest.raises(TypeError, match="fields must be a dict"):
        forkfeed.Loader(shards=shards, fields=42)
    with pytest.raises(ValueError, match="fields is empty"):
        forkfeed.Loader(shards=shards, fields={})
    with pytest.raises(TypeError, match=r"fields\['caption'\] must map"):
        forkfeed.Loader(shards=shards, fields={"image": "jpg", "caption": 3})
    # A dict entry that the schema's text would read as another entry, or another name.
    for entry in ({"caption": "txt, label=cls"}, {" caption ": "txt"}, {"a=b": "txt"}, {"a,b": "txt"}):
        with pytest.raises(ValueError, match=r"neither may hold ','"):
            forkfeed.Loader(shards=shards, fields={"image": "jpg", **entry})
    with pytest.raises(ValueError, match=r"__present__.*beginning with \"__\""):
        forkfeed.Loader(shards=shards, fields={"image": "jpg", "__present__": "txt"})
    with pytest.raises(ValueError, match="wav"):  # no member has it: the C++ side names it
        forkfeed.Loader(shards=shards, fields={"image": "jpg;png", "sound": "wav"}, **OPTIONS)
    with pytest.raises(TypeError, match=r"transform\['image'\]"):
        forkfeed.Loader(shards=shards, fields=FIELDS, transform={"image": 3})
    with pytest.raises(ValueError, match="view9"):
        forkfeed.Loader(shards=shards, fields=FIELDS, transform={"image": "eval", "view9": "eval"})
    # The schema as the C++ side writes it is taken too.
    with forkfeed.Loader(shards=shards, fields="image=jpg;png, caption=txt", **OPTIONS) as loader:
        assert list(next(iter(loader))) == ["image", "caption", "__key__"]


def rows(batch) -> dict:
    """{sample index: its values} of a FieldBatch, copied out of the slot."""
    fields = batch.fields
    return {i: (fields["image"][r].clone(), fields["caption"][r], fields["meta"][r],
                fields["emb"][r].tolist(),
                int(fields["label"][r])) for r, i in enumerate(batch.indices)}


def same_rows(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[i][0], b[i][0]) and a[i][1:] == b[i][1:] for i in a)


def children() -> set:
    return {int(p)
            for p in pathlib.Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()}


def test_resumed_with_another_worker_count_or_through_a_killed_worker_each_sample_comes_once_unchanged(
        shards):
    # Random draws, each the same again; more batches (10) than slots (5), so that a dead
    # worker's tasks are to be done again.
    options = dict(OPTIONS, transform="train", batch_size=4)
    with forkfeed.Loader(shards=shards, fields=FIELDS, **options) as loader:
        whole = [(b.indices, rows(b)) for b in iter(loader.next_batch, None)]
    expected = {i: row for _, r in whole for i, row in r.items()}
    assert len(expected) == 40

    with forkfeed.Loader(shards=shards, fields=FIELDS, **options) as loader:
        first = [loader.next_batch() for _ in range(2)]
        got = [(b.indices, rows(b)) for b in first]
        state = loader.state_dict()
    with forkfeed.Loader(shards=shards, fields=FIELDS, **dict(options, workers=1)) as loader:
        loader.load_state_dict(state)
        got += [(b.indices, rows(b)) for b in iter(loader.next_batch, None)]
    assert [indices for indices, _ in got] == [indices for indices, _ in whole]
    assert same_rows({i: row for _, r in got for i, row in r.items()}, expected)

    before = children()
    with forkfeed.Loader(shards=shards, fields=FIELDS, **options) as loader:
        got = [(b.indices, rows(b)) for b in [loader.next_batch()]]
        os.kill(sorted(children() - before)[0], signal.SIGKILL)
        got += [(b.indices, rows(b)) for b in iter(loader.next_batch, None)]
        assert loader.stats()["worker_restarts"] >= 1
    assert [indices for indices, _ in got] == [indices for indices, _ in whole]
    assert same_rows({i: row for _, r in got for i, row in r.items()}, expected)


def test_a_client_local_or_remote_yields_a_loaders_dicts(shards, dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    token = token_file(tmp_path)
    daemon, address = listening_daemon(tmp_path / "forkfeedd.sock", dataset, token, "--dataset",
                                       f"pairs=shards:{shards}")
    try:
        with forkfeed.Loader(shards=shards, fields=FIELDS, **OPTIONS) as loader:
            expected = [(b.indices, rows(b)) for b in iter(loader.next_batch, None)]
        for where in (dict(shards=shards, socket=daemon.socket), dict(dataset="pairs", address=address,
                                                                      token_file=str(token))):
            with forkfeed.Client(fields=FIELDS, **where, **OPTIONS) as client:
                got = [(b.indices, rows(b)) for b in iter(client.next_batch, None)]
            assert [i for i, _ in got] == [i for i, _ in expected], where
            assert same_rows({i: r for _, rs in got for i, r in rs.items()},
                             {i: r for _, rs in expected for i, r in rs.items()}), where
        # An ImageFolder has no fields: refused in the Loader's words, through the daemon.
        with pytest.raises(ValueError, match="fields"):
            forkfeed.Client(dataset, socket=daemon.socket, fields=FIELDS, **OPTIONS)
    finally:
        daemon.stop()
