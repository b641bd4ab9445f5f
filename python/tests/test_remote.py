"""forkfeed.Client(address=...), a stream of a forkfeedd serving other machines, tested
over loopback TCP (UCX_TLS=tcp): the same torch batches and state_dict as a Loader, a
state that resumes a local Loader, a wrong token refused, DaemonLostError within 3 s
when the daemon dies, and a fork report that names UCX once it is loaded."""

import os
import pathlib
import time

import pytest

os.environ["UCX_TLS"] = "tcp"  # before anything here loads UCX: the network path, not shared memory

import forkfeed  # noqa: E402
from conftest import listening_daemon, token_file  # noqa: E402

OPTIONS = dict(batch_size=4, size=16, seed=5)


@pytest.fixture
def remote(tmp_path, dataset):
    """(address, token file) of a forkfeedd listening on a free loopback port."""
    token = token_file(tmp_path)
    d, address = listening_daemon(tmp_path / "forkfeedd.sock", dataset, token)
    yield d, address, str(token)
    d.stop()


def test_remote_batches_and_state_are_a_loaders(dataset, remote):
    import torch

    _, address, token = remote
    with forkfeed.Client(dataset="tiny", address=address, token_file=token, **OPTIONS) as client, \
            forkfeed.Loader(dataset, workers=1, **OPTIONS) as loader:
        assert len(client) == len(loader) and client.classes == loader.classes
        got, want = iter(client), iter(loader)
        for _ in range(3):
            (images, labels), (local_images, local_labels) = next(got), next(want)
            assert isinstance(images, torch.Tensor) and torch.equal(images, local_images)
            assert torch.equal(labels, local_labels)
        state = client.state_dict()
        assert state == loader.state_dict()
        rest = [labels.tolist() for _, labels in got]
    with forkfeed.Loader(dataset, workers=1, **OPTIONS) as resumed:
        resumed.load_state_dict(state)
        assert [labels.tolist() for _, labels in resumed] == rest
    report = forkfeed.fork_report()
    assert report["ucx_loaded"] and "UCX" in report["summary"]


def test_a_wrong_token_is_refused(tmp_path, remote):
    _, address, _ = remote
    wrong = tmp_path / "wrong"
    wrong.write_text("a-wrong-guess-of-the-token\n")
    wrong.chmod(0o600)
    with pytest.raises(forkfeed.Error, match="refused the token"):
        forkfeed.Client(dataset="tiny", address=address, token_file=wrong, **OPTIONS)
    with pytest.raises(ValueError, match="not both"):
        forkfeed.Client(dataset="tiny", address=address, socket="/nowhere", token_file=wrong, **OPTIONS)


def test_a_token_of_whitespace_or_of_another_user_is_refused_by_the_client(tmp_path, remote):
    # Found from outside: a token of 32 spaces was sent, and a token file of uid 65534's
    # was read by a trainer running as root. Both are refused before anything is sent.
    _, address, token = remote
    blank = tmp_path / "blank"
    blank.write_text(" " * 32 + "\n")
    blank.chmod(0o600)
    with pytest.raises(ValueError, match=f"{blank} holds only whitespace"):
        forkfeed.Client(dataset="tiny", address=address, token_file=blank, **OPTIONS)
    if os.geteuid() != 0:
        pytest.skip("a token file of another user's needs root to make")
    theirs = tmp_path / "theirs"
    theirs.write_bytes(pathlib.Path(token).read_bytes())
    theirs.chmod(0o600)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(ValueError, match=f"{theirs} is owned by uid 65534.*chown {os.geteuid()} {theirs}"):
        forkfeed.Client(dataset="tiny", address=address, token_file=theirs, **OPTIONS)


@pytest.mark.parametrize("variable,value,message", [
    ("UCX_TCP_RX_SEG_SIZE", "0",
     r"UCX_TCP_RX_SEG_SIZE=0 is smaller than UCX_TCP_TX_SEG_SIZE=8K: .* or unset it"),
    ("UCX_TCP_RX_SEG_SIZE", "-1", r"UCX_TCP_RX_SEG_SIZE=-1 \(UCX reads it as inf\): forkfeed must know"),
    ("UCX_TCP_TX_SEG_SIZE", "-1", r"creating a UCX worker failed: .*; check this process.s UCX_ variables"),
])
def test_the_trainers_own_bad_ucx_setting_is_its_error_not_a_lost_daemon(remote, monkeypatch, variable, value,
                                                                         message):
    # Found from outside: UCX_TCP_RX_SEG_SIZE=0 in the trainer raised DaemonLostError (UCX
    # makes no worker that receives in less than it sends in, found after the connect),
    # and -1 was named "=inf". The trainer's own setting is named, before anything connects.
    daemon, address, token = remote
    monkeypatch.setenv(variable, value)
    with pytest.raises(forkfeed.Error if variable == "UCX_TCP_TX_SEG_SIZE" else ValueError,
                       match=message) as e:
        forkfeed.Client(dataset="tiny", address=address, token_file=token, **OPTIONS)
    assert not isinstance(e.value, forkfeed.DaemonLostError)
    monkeypatch.delenv(variable)
    with forkfeed.Client(dataset="tiny", address=address, token_file=token, **OPTIONS) as client:
        assert sum(1 for _ in client) == len(client)  # the gateway was never troubled


def test_a_dead_daemon_raises_daemon_lost_within_3_seconds(remote):
    daemon, address, token = remote
    with forkfeed.Client(dataset="tiny", address=address, token_file=token, **OPTIONS) as client:
        batches = iter(client)
        next(batches)
        daemon.process.kill()
        daemon.process.wait()
        killed = time.monotonic()
        with pytest.raises(forkfeed.DaemonLostError, match="remote forkfeedd"):
            for _ in batches:
                pass
        assert time.monotonic() - killed < 3.5


def test_opening_and_closing_remote_clients_over_and_over(remote):
    """Found from outside: closing a remote Client right after opening it aborted the
    process within ~20 cycles (UCX asserted: the worker was destroyed with its part of
    the connection handshake still pending)."""
    _, address, token = remote
    for cycle in range(100):
        client = forkfeed.Client(dataset="tiny", address=address, token_file=token, output="numpy", **OPTIONS)
        client.close()


def test_a_forked_child_leaves_the_remote_stream_and_ucx_alone(remote):
    """A trainer that forks with a remote Client open: the child cannot use it, and
    letting go of its copy touches no UCX (forbidden in a forked child) and closes
    nothing of the parent's, which reads its whole pass exactly once."""
    from conftest import IMAGES
    from test_fork import run_forking

    _, address, token = remote
    run_forking(f"source = forkfeed.Client(dataset='tiny', address={address!r}, token_file={token!r}, "
                f"batch_size=5, workers=2, size=16, output='numpy')", IMAGES)
