"""forkfeed.Client(address=[...]), one stream drawn from several forkfeedd serving other
machines (a fan-in), tested over loopback TCP (UCX_TLS=tcp) with two daemons: the same
torch batches as a Loader, each daemon serving some; one daemon SIGKILLed mid-epoch
loses nothing and its state_dict resumes a Loader; both killed raise DaemonLostError
within 3.5 s; add_daemon() joins one; bad addresses and overdue are refused."""

import os
import time

import pytest

os.environ["UCX_TLS"] = "tcp"  # before anything here loads UCX: the network path, not shared memory

import forkfeed  # noqa: E402
from conftest import IMAGES, listening_daemon, recomputed_shards, token_file  # noqa: E402

# 25 batches a pass: enough that a daemon killed after the first few still holds some.
OPTIONS = dict(batch_size=2, size=16, seed=5)


@pytest.fixture
def remotes(tmp_path, dataset):
    """[(daemon, address)] of two forkfeedd serving `dataset` as "tiny" on free loopback
    ports with one token, and the token file."""
    token = token_file(tmp_path)
    started = []
    try:
        for i in range(2):
            started.append(listening_daemon(tmp_path / f"forkfeedd-{i}.sock", dataset, token))
        yield started, str(token)
    finally:
        for d, _ in started:
            d.stop()


def _kill(daemon):
    daemon.process.kill()
    daemon.process.wait()


def _labels(batches):
    return [labels.tolist() for _, labels in batches]


def test_two_daemons_give_a_loaders_batches(dataset, remotes):
    import torch

    daemons, token = remotes
    addresses = [a for _, a in daemons]
    with forkfeed.Client(dataset="tiny", address=addresses, token_file=token, workers=2,
                         **OPTIONS) as client, \
            forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        assert len(client) == len(loader) and client.classes == loader.classes
        per_epoch = len(loader)
        for epoch in range(2):
            got, want = iter(client), iter(loader)
            for _ in range(per_epoch):
                (images, labels), (local_images, local_labels) = next(got), next(want)
                assert isinstance(images, torch.Tensor) and torch.equal(images, local_images)
                assert torch.equal(labels, local_labels)
            assert next(got, None) is None and next(want, None) is None
            assert client.epoch == loader.epoch == epoch
        assert client.state_dict() == loader.state_dict()
        stats = client.daemons()
    assert [d["address"] for d in stats] == addresses
    for d in stats:
        assert d["up"] and d["batches"] > 0 and d["bytes"] > 0 and d["losses"] == 0, stats
        assert d["wait_s"] == pytest.approx(d["wait_ns"] / 1e9)
    assert sum(d["batches"] for d in stats) == 2 * per_epoch


def test_a_daemon_killed_mid_epoch_loses_nothing(dataset, remotes):
    import torch

    daemons, token = remotes
    addresses = [a for _, a in daemons]
    with forkfeed.Client(dataset="tiny", address=addresses, token_file=token, workers=1,
                         **OPTIONS) as client, \
            forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        got = []
        batches = iter(client)
        for _ in range(3):
            images, labels = next(batches)
            got.append((images.clone(), labels.clone()))
        _kill(daemons[0][0])
        got += [(images.clone(), labels.clone()) for images, labels in batches]
        want = [(images.clone(), labels.clone()) for images, labels in loader]
        assert len(got) == len(want)
        for (images, labels), (local_images, local_labels) in zip(got, want):
            assert torch.equal(images, local_images) and torch.equal(labels, local_labels)
        indices = [i for b in iter(lambda: client.next_batch(), None)
                   for i in b.indices]  # the next epoch, too
        assert sorted(indices) == list(range(IMAGES))
        lost, kept = client.daemons()
    assert lost["address"] == addresses[0] and not lost["up"] and lost["losses"] >= 1 and lost["last_error"]
    assert kept["up"] and kept["losses"] == 0 and kept["batches"] > 0


def test_a_state_after_a_loss_resumes_a_loader(dataset, remotes):
    daemons, token = remotes
    addresses = [a for _, a in daemons]
    with forkfeed.Client(dataset="tiny", address=addresses, token_file=token, workers=1, **OPTIONS) as client:
        batches = iter(client)
        for _ in range(3):
            next(batches)
        _kill(daemons[1][0])
        for _ in range(4):
            next(batches)
        state = client.state_dict()
        rest = _labels(batches)
        assert client.daemons()[1]["losses"] >= 1
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        everything = _labels(loader)
        loader.load_state_dict(state)
        assert _labels(loader) == rest == everything[7:]


def test_every_daemon_lost_raises_daemon_lost_within_3_5_seconds(remotes):
    daemons, token = remotes
    addresses = [a for _, a in daemons]
    with forkfeed.Client(dataset="tiny", address=addresses, token_file=token, workers=1, **OPTIONS) as client:
        batches = iter(client)
        next(batches)
        _kill(daemons[0][0])
        _kill(daemons[1][0])
        killed = time.monotonic()
        with pytest.raises(forkfeed.DaemonLostError, match="remote forkfeedd"):
            for _ in batches:
                pass
        assert time.monotonic() - killed < 3.5
        assert [d["up"] for d in client.daemons()] == [False, False]


def test_add_daemon_joins_the_stream(dataset, remotes):
    daemons, token = remotes
    (_, first), (_, second) = daemons
    with forkfeed.Client(dataset="tiny", address=first, token_file=token, workers=1, **OPTIONS) as client, \
            forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        assert [d["address"] for d in client.daemons()] == [first]
        client.add_daemon(second)  # with the Client's token_file
        assert client.daemons()[1]["up"], client.daemons()[1]["last_error"]
        assert _labels(client) == _labels(loader)
        assert _labels(client) == _labels(loader)
        stats = client.daemons()
        with pytest.raises(ValueError, match="address"):
            client.add_daemon("no-port-here", token_file=token)
    assert [d["address"] for d in stats] == [first, second]
    assert all(d["up"] and d["batches"] > 0 for d in stats), stats


def test_add_daemon_raises_why_it_cannot_join(tmp_path, remotes):
    """Found from outside: add_daemon() returned at once and its failures showed only in
    daemons()[i]["last_error"]. It joins at once or raises why, and is not added."""
    daemons, token = remotes
    (_, first), (_, second) = daemons
    wrong = tmp_path / "wrong-token"
    wrong.write_text("a-long-token-that-is-not-the-one\n")
    wrong.chmod(0o600)
    with forkfeed.Client(dataset="tiny", address=first, token_file=token, workers=1, connect_timeout=2,
                         **OPTIONS) as client:
        with pytest.raises(forkfeed.Error, match="refused the token"):
            client.add_daemon(second, token_file=wrong)
        with pytest.raises(OSError, match="127.0.0.1:1"):
            client.add_daemon("127.0.0.1:1")  # nothing listens there
        assert [d["address"] for d in client.daemons()] == [first]
        next(iter(client))  # the stream goes on
        client.add_daemon(second)
        assert [d["address"] for d in client.daemons()] == [first, second]


def test_bad_addresses_and_overdue_are_refused(remotes):
    daemons, token = remotes
    (_, first), (_, second) = daemons
    with pytest.raises(ValueError, match="no remote forkfeedd address given"):
        forkfeed.Client(dataset="tiny", address=[], token_file=token, **OPTIONS)
    with pytest.raises(ValueError, match=f"{first} is given twice"):
        forkfeed.Client(dataset="tiny", address=(first, second, first), token_file=token, **OPTIONS)
    with pytest.raises(TypeError, match=r"address\[1\] must be a str"):
        forkfeed.Client(dataset="tiny", address=[first, 1234], token_file=token, **OPTIONS)
    with pytest.raises(TypeError, match="address must be"):
        forkfeed.Client(dataset="tiny", address=1234, token_file=token, **OPTIONS)
    for overdue in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="overdue must be a number of seconds"):
            forkfeed.Client(dataset="tiny", address=[first, second], token_file=token, overdue=overdue,
                            **OPTIONS)
    with pytest.raises(ValueError, match="not both"):
        forkfeed.Client(dataset="tiny", address=[first], socket="/nowhere", token_file=token, **OPTIONS)
    with forkfeed.Client(dataset="tiny", address=[first, second], token_file=token, overdue=0.5,
                         **OPTIONS) as client:
        assert len(client.daemons()) == 2


def test_a_local_client_has_no_remote_daemons(daemon):
    with forkfeed.Client(dataset="tiny", socket=daemon.socket, **OPTIONS) as client:
        assert client.daemons() == []
        with pytest.raises(ValueError, match="add_daemon"):
            client.add_daemon("127.0.0.1:1")


def test_daemons_serving_other_bytes_of_the_same_names_and_sizes_are_refused(dataset, tmp_path):
    """Found from outside: two nodes whose embeddings were recomputed (the same sizes) were
    mixed, 3 of 6 batches from each."""
    a, b, fields = recomputed_shards(tmp_path / "shards", dataset)
    token = token_file(tmp_path)
    daemons = [listening_daemon(tmp_path / f"forkfeedd-{i}.sock", dataset, token, "--dataset",
                                f"emb=shards:{spec}") for i, spec in enumerate((a, b))]
    try:
        addresses = [address for _, address in daemons]
        with pytest.raises(forkfeed.Error, match=f"{addresses[1]} serves another dataset \\(contents differ "
                                                 "in samples 0-11"):
            forkfeed.Client(dataset="emb", address=addresses, token_file=str(token), fields=fields,
                            batch_size=2,
                            size=16, seed=5)
    finally:
        for d, _ in daemons:
            d.stop()
