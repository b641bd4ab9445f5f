"""forkfeed.Client, a stream on a forkfeedd of the test's own: the same batches and
states as a Loader with the same options, an error within a second when the daemon
dies, and Ctrl-C while waiting raises KeyboardInterrupt promptly."""

import os
import pathlib
import signal
import threading
import time

import pytest

import forkfeed
from conftest import CONTINUE_THE_PASS, IMAGES, make_dataset, run_ctrl_c

OPTIONS = dict(batch_size=4, size=16, seed=7, shuffle=True, output="numpy")


def run(source, epochs=2):
    """(epoch, index, indices, labels) of every batch of `epochs` passes."""
    out = []
    for epoch in range(epochs):
        source.set_epoch(epoch)
        while (b := source.next_batch()) is not None:
            out.append((b.epoch, b.index, list(b.indices), b.labels.tolist()))
    return out


@pytest.mark.parametrize("world_size", [1, 2])
def test_same_batches_as_a_loader_exactly_once_per_epoch(dataset, labels, daemon, world_size):
    covered = {0: [], 1: []}
    for rank in range(world_size):
        options = dict(OPTIONS, rank=rank, world_size=world_size)
        with forkfeed.Client(dataset, socket=daemon.socket, workers=2, **options) as client, \
                forkfeed.Loader(dataset, workers=1, **options) as loader:
            assert len(client) == len(loader)
            assert client.classes == loader.classes and client.num_classes == loader.num_classes == 4
            got = run(client)
            assert got == run(loader)
        for epoch, _, indices, batch_labels in got:
            covered[epoch] += indices
            assert batch_labels == [labels[i] for i in indices]
    for epoch, indices in covered.items():
        assert sorted(indices) == list(range(IMAGES)), f"epoch {epoch}"


def test_torch_tensors_and_the_named_dataset(dataset, daemon):
    import torch

    with forkfeed.Client(dataset="tiny", socket=daemon.socket, batch_size=4, size=16) as client:
        images, labels = next(iter(client))
        assert isinstance(images, torch.Tensor) and images.shape == (4, 16, 16, 3)
        assert labels.dtype == torch.int64
        assert 1 <= client.workers
        # The same keys as a Loader's, and the same meaning: what the caller took, not
        # what the daemon sent ahead.
        stats = client.stats()
        assert (stats["delivered_batches"], stats["delivered_samples"]) == (1, 4)
        with forkfeed.Loader(dataset, batch_size=4, size=16, workers=1) as loader:
            assert set(stats) == set(loader.stats())
        # loader/stats_fields.h's table, whole, on both faces.
        assert set(stats) == set(forkfeed._forkfeed.stat_names())
        assert {"index_bytes", "pinned", "skipped_bytes"} <= set(stats)


def test_state_dict_resumes_across_client_and_loader(dataset, daemon):
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as reference:
        expected = run(reference, epochs=1)
    with forkfeed.Client(dataset, socket=daemon.socket, **OPTIONS) as client:
        got = [client.next_batch().indices for _ in range(3)]
        state = client.state_dict()
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        loader.load_state_dict(state)
        got += [loader.next_batch().indices for _ in range(3)]
        state = loader.state_dict()
    with forkfeed.Client(dataset, socket=daemon.socket, **OPTIONS) as client:
        client.load_state_dict(state)
        while (b := client.next_batch()) is not None:
            got.append(b.indices)
    assert got == [indices for _, _, indices, _ in expected]


def test_the_daemon_killed_while_waiting_is_an_error_within_a_second(dataset, daemon):
    with forkfeed.Client(dataset, socket=daemon.socket, workers=1, prefetch=1, **OPTIONS) as client:
        assert client.next_batch() is not None
        workers = daemon.workers()
        killed = []

        def kill():
            killed.append(time.monotonic())
            daemon.process.kill()

        try:
            for pid in workers:
                os.kill(pid, signal.SIGSTOP)  # the client runs out of batches and waits
            threading.Timer(0.5, kill).start()
            # The daemon's death is a forkfeed.Error of its own kind, which says how to go on.
            with pytest.raises(forkfeed.DaemonLostError, match="lost the connection to forkfeedd"):
                for _ in range(IMAGES):
                    client.next_batch()
            assert killed and time.monotonic() - killed[0] < 1.0
            with pytest.raises(forkfeed.DaemonLostError, match="forkfeedd"):  # and it stays one
                client.next_batch()
        finally:
            for pid in workers:  # a stopped worker cannot see that its daemon is gone, and exit
                os.kill(pid, signal.SIGCONT)


def test_ctrl_c_while_waiting_raises_keyboard_interrupt_and_the_stream_goes_on(dataset, daemon):
    open_client = f"""
loader = forkfeed.Client({str(dataset)!r}, socket={daemon.socket!r}, batch_size=8, workers=1, prefetch=1,
                         size=16, output="numpy")
workers = [int(p) for task in os.listdir("/proc/{daemon.pid}/task")
           for p in open(f"/proc/{daemon.pid}/task/{{task}}/children").read().split()]
"""
    # The daemon answers close() only once its workers go on: resume them first.
    out = run_ctrl_c(open_client, after=CONTINUE_THE_PASS)
    assert out["outcome"] == "KeyboardInterrupt"
    assert out["took"] < 1.0


def test_bad_requests_name_what_is_wrong(dataset, daemon, tmp_path):
    with pytest.raises(FileNotFoundError, match="'no-such-set'"):
        forkfeed.Client(dataset="no-such-set", socket=daemon.socket, output="numpy")
    with pytest.raises(OSError, match="nobody.sock"):
        forkfeed.Client(dataset, socket=tmp_path / "nobody.sock", connect_timeout=1, output="numpy")
    with pytest.raises(ValueError, match="connect_timeout"):
        forkfeed.Client(dataset, socket=daemon.socket, connect_timeout=0, output="numpy")
    with pytest.raises(ValueError, match="pin_memory_device"):
        forkfeed.Client(dataset, socket=daemon.socket, pin_memory_device=0, output="numpy")
    # Found from outside: a weight was taken and dropped in silence (forkfeedd's shares are equal).
    with pytest.raises(ValueError, match="weight 5 is not a Client's to choose"):
        forkfeed.Client(dataset, socket=daemon.socket, weight=5, output="numpy")
    forkfeed.Client(dataset, socket=daemon.socket, weight=1, output="numpy").close()
    client = forkfeed.Client(dataset, socket=daemon.socket, output="numpy")
    client.close()
    with pytest.raises(ValueError, match="the client is closed"):
        client.next_batch()


def test_a_folder_whose_name_is_not_utf8_is_served_as_a_loader_reads_it(tmp_path, daemon):
    # The request is JSON, whose strings must be UTF-8: such a path travels as its bytes.
    root = os.fsencode(tmp_path) + b"/data-\xff"
    make_dataset(pathlib.Path(os.fsdecode(root)), images=9, classes=2)
    os.rename(root + b"/class_001", root + b"/class-\xfe")
    with forkfeed.Client(root, socket=daemon.socket, workers=1, **OPTIONS) as client, \
            forkfeed.Loader(root, workers=1, **OPTIONS) as loader:
        assert client.classes == loader.classes == [os.fsdecode(b"class-\xfe"), "class_000"]
        assert run(client, epochs=1) == run(loader, epochs=1)


@pytest.mark.parametrize("face", ["Loader", "Client"])
def test_a_pass_that_skipped_every_sample_raises(dataset, daemon, face):
    # RandomCrop(64) of images of 24 to 48 pixels: every sample is skipped as bad data, which
    # only decoding shows. The pass ends in BadDataError, not in an empty epoch; the next
    # one goes on (and fails alike).
    options = dict(batch_size=4, transform="RandomCrop(64)", on_error="skip", workers=1)
    opened = (forkfeed.Client(dataset, socket=daemon.socket, **options) if face == "Client"
              else forkfeed.Loader(dataset, log_level="off", **options))
    with opened as source:
        for epoch in range(2):
            with pytest.raises(forkfeed.BadDataError, match=rf"every sample of epoch {epoch}'s pass was "
                                                            rf"skipped \({IMAGES} of this rank's share"):
                for _ in source:
                    pass
        assert source.stats()["skipped_samples"] == 2 * IMAGES
