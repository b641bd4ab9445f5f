"""WebDataset tar shards written by Python's tarfile (as webdataset's ShardWriter lays
them out: <key>.jpg and <key>.cls, one sample after the other) read by forkfeed.Loader
and forkfeed.Client through shards=: the same batches, pixels included, as a Loader over
the ImageFolder they were made from; shard_label selects where labels come from."""

import io
import json
import os
import pathlib
import tarfile

import pytest

import forkfeed
from conftest import IMAGES, Daemon

OPTIONS = dict(batch_size=4, size=16, seed=5, workers=2, output="numpy")


def files_of(root: pathlib.Path):
    """(path, label) in forkfeed's (torchvision's) ImageFolder order."""
    out = []
    for label, cls in enumerate(sorted(p.name for p in root.iterdir() if p.is_dir())):
        out += [(p, label) for p in sorted((root / cls).rglob("*")) if p.is_file()]
    return out


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def shards(dataset, tmp_path_factory) -> pathlib.Path:
    """The dataset in shards of 16 samples, keys under their class folder, with .cls and
    .json labels (the json one is label + 100)."""
    folder = tmp_path_factory.mktemp("shards")
    files = files_of(dataset)
    for s in range(0, len(files), 16):
        with tarfile.open(folder / f"part-{s // 16:03d}.tar", "w", format=tarfile.GNU_FORMAT) as tar:
            for path, label in files[s:s + 16]:
                key = f"{path.parent.name}/{path.stem}"
                add(tar, key + path.suffix, path.read_bytes())
                add(tar, key + ".cls", str(label).encode())
                add(tar, key + ".json", json.dumps({"label": label + 100}).encode())
    return folder


def run(source):
    out = []
    for epoch in range(2):
        source.set_epoch(epoch)
        while (b := source.next_batch()) is not None:
            out.append((b.epoch, b.index, list(b.indices), b.labels.tolist(), b.images.tobytes()))
    return out


def test_shards_give_the_batches_of_the_folder(dataset, shards, tmp_path, monkeypatch):
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    with forkfeed.Loader(shards=shards, **OPTIONS) as on_shards, \
            forkfeed.Loader(dataset, **OPTIONS) as on_folder:
        assert len(on_shards) == len(on_folder)
        got = run(on_shards)
        assert got == run(on_folder)
    assert sorted(i for _, _, indices, _, _ in got[:len(got) // 2] for i in indices) == list(range(IMAGES))
    assert any((tmp_path / "cache").rglob("*.idx")), "the index was cached"


@pytest.mark.parametrize("shard_label, field, offset", [("cls", None, 0), ("json", "label", 100),
                                                        ("class_folder", None, 0)])
def test_shard_label_chooses_where_labels_come_from(dataset, shards, shard_label, field, offset, tmp_path,
                                                    monkeypatch):
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    labels = [label for _, label in files_of(dataset)]
    options = dict(OPTIONS, shuffle=False)
    with forkfeed.Loader(shards=str(shards / "part-{000..003}.tar"), shard_label=shard_label,
                         shard_label_field=field, **options) as loader:
        for _, _, indices, batch_labels, _ in run(loader):
            assert batch_labels == [labels[i] + offset for i in indices]


def test_bad_shard_options_name_the_option(shards):
    with pytest.raises(ValueError, match="shard_label"):
        forkfeed.Loader(shards=shards, shard_label="folder")
    with pytest.raises(ValueError, match="exactly one dataset source"):
        forkfeed.Loader(shards=shards, manifest="x.tsv")


def test_a_client_reads_shards_too(dataset, shards, tmp_path, monkeypatch):
    monkeypatch.setenv("FORKFEED_CACHE_DIR", str(tmp_path / "cache"))
    daemon = Daemon(tmp_path / "forkfeedd.sock", dataset)
    try:
        with forkfeed.Client(shards=shards, socket=daemon.socket, **OPTIONS) as client, \
                forkfeed.Loader(dataset, **OPTIONS) as loader:
            assert run(client) == run(loader)
    finally:
        daemon.stop()
