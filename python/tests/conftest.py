"""Fixtures for the forkfeed package's tests: a small ImageFolder dataset made with
forkfeed-mkdata, what its labels are, a forkfeedd of a test's own, and a script that
presses Ctrl-C while a Loader or Client waits for a batch."""

import io
import json
import os
import pathlib
import socket
import subprocess
import sys
import tarfile
import time

import pytest

# ctest sets both; by hand: PYTHONPATH=build/python FORKFEED_BIN_DIR=build/bin.
BIN_DIR = pathlib.Path(os.environ.get("FORKFEED_BIN_DIR",
                                      pathlib.Path(__file__).resolve().parents[2] / "build" / "bin"))

IMAGES = 50
CLASSES = 4


def make_dataset(root: pathlib.Path, images: int = IMAGES, classes: int = CLASSES,
                 seed: int = 3) -> pathlib.Path:
    subprocess.run([str(BIN_DIR / "forkfeed-mkdata"), "--out", str(root), "--images", str(images),
                    "--classes", str(classes), "--seed", str(seed), "--min-side", "24", "--max-side", "48"],
                   check=True, stdout=subprocess.DEVNULL)
    return root


def image_folder_labels(root: pathlib.Path) -> list:
    """Label of each dataset index by torchvision's ImageFolder rules (sorted classes,
    sorted files), which forkfeed follows."""
    labels = []
    for label, cls in enumerate(sorted(p.name for p in root.iterdir() if p.is_dir())):
        labels += [label] * sum(1 for p in (root / cls).rglob("*") if p.is_file())
    return labels


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> pathlib.Path:
    return make_dataset(tmp_path_factory.mktemp("data") / "train")


@pytest.fixture(scope="session")
def labels(dataset) -> list:
    return image_folder_labels(dataset)


def run_python(code: str, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (this one: /usr/bin/python3 under ctest) with
    `env`, by default this process's environment (and so its PYTHONPATH)."""
    env = dict(os.environ) if env is None else env
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout)


class Daemon:
    """A forkfeedd run by a test on its own socket, serving `dataset` also by the name
    "tiny", with `extra` flags; stop() ends and reaps it (and so its workers)."""

    def __init__(self, socket_path: pathlib.Path, dataset: pathlib.Path, *extra: str):
        self.socket = str(socket_path)
        self.process = subprocess.Popen(
            [str(BIN_DIR / "forkfeedd"), "--socket", self.socket, "--log-level", "warn",
             "--max-workers", "16", "--dataset", f"tiny={dataset}", *extra])
        deadline = time.monotonic() + 20
        while not self._accepts():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"forkfeedd did not start listening on {self.socket}")
            time.sleep(0.02)

    @property
    def pid(self) -> int:
        return self.process.pid

    def workers(self) -> list:
        """Pids of the daemon's children (its decode workers), whichever thread started them."""
        return [int(p) for task in pathlib.Path(f"/proc/{self.pid}/task").iterdir()
                for p in (task / "children").read_text().split()]

    def stop(self) -> None:
        """SIGTERM (it reaps its workers), then SIGKILL if it takes over 10 s; reaped either way."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()

    def _accepts(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(self.socket)
                return True
            except OSError:
                return False


def write_tar(path: pathlib.Path, members: list) -> None:
    """A tar of `members`, [(name, bytes)], in that order."""
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def recomputed_shards(root: pathlib.Path, dataset: pathlib.Path, samples: int = 12) -> tuple:
    """Two folders of one shard each, a/ and b/, of the same images, keys and labels of
    `dataset`, whose float32 (8,) embeddings (.npy, of one size) were computed twice with
    other results: the same names and sizes, other bytes. Returns (a, b, fields)."""
    import numpy as np
    images = sorted(p for p in dataset.rglob("*") if p.is_file())[:samples]
    for name, scale in (("a", 1.0), ("b", 1.0 + 1e-6)):
        members = []
        for n, image in enumerate(images):
            emb = io.BytesIO()
            np.save(emb, (np.arange(8, dtype=np.float32) + n) * np.float32(scale))
            members += [(f"s{n:03d}{image.suffix}", image.read_bytes()), (f"s{n:03d}.cls", b"%d" % (n % 3)),
                        (f"s{n:03d}.npy", emb.getvalue())]
        (root / name).mkdir(parents=True)
        write_tar(root / name / "s-0.tar", members)
    return root / "a", root / "b", {"image": "jpg;png", "label": "cls", "emb": "npy"}


def token_file(folder: pathlib.Path) -> pathlib.Path:
    """A token file for forkfeedd's --token-file and a Client's token_file, mode 0600."""
    token = folder / "token"
    token.write_text("a-token-of-16-bytes-or-more\n")
    token.chmod(0o600)
    return token


def listening_daemon(socket_path: pathlib.Path, dataset: pathlib.Path, token: pathlib.Path, *extra: str):
    """A Daemon also listening on a free loopback port with `token`, and that address."""
    d = Daemon(socket_path, dataset, "--listen", "127.0.0.1:0", "--token-file", str(token), *extra)
    stats = subprocess.run([str(BIN_DIR / "forkfeed-ctl"), "--socket", d.socket, "stats"],
                           capture_output=True,
                           text=True, check=True).stdout
    return d, json.loads(stats)["daemon"]["listen"][0]


def read_through_forkfeedd(tmp_path: pathlib.Path, dataset: pathlib.Path, shards: pathlib.Path, options: dict,
                           read) -> list:
    """What `read(client)` gives for a Client on `shards` with `options` through forkfeedd's
    Unix socket, then as a remote client (TCP and UCX) of its dataset "remote": [(where, read)]."""
    import forkfeed
    token = token_file(tmp_path)
    daemon, address = listening_daemon(tmp_path / "forkfeedd.sock", dataset, token, "--dataset",
                                       f"remote=shards:{shards}")
    try:
        out = []
        for where in (dict(shards=str(shards), socket=daemon.socket),
                      dict(dataset="remote", address=address, token_file=str(token))):
            with forkfeed.Client(**where, **options) as client:
                out.append((where, read(client)))
        return out
    finally:
        daemon.stop()


@pytest.fixture
def daemon(tmp_path, dataset):
    d = Daemon(tmp_path / "forkfeedd.sock", dataset)
    yield d
    d.stop()


# A script for run_python(): `open` makes `loader` (a Loader or a Client) and `workers`,
# the pids of its decode workers, which are then stopped (SIGSTOP) so that next_batch()
# waits for ever; 0.5 s later the script sends itself SIGINT. `setup` runs before the
# wait, `after` after it, before close(). It prints {"outcome": ..., "took": seconds from
# the SIGINT to the outcome}.
CTRL_C_WHILE_WAITING = """
import json, os, signal, threading, time, forkfeed
{open}
for pid in workers:
    os.kill(pid, signal.SIGSTOP)  # no batch comes any more: next() waits for ever
{setup}
sent = []
def ctrl_c():
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(0.5, ctrl_c).start()
outcome = "no batch was missing"
try:
    for _ in range(10):
        batch = loader.next_batch()
except KeyboardInterrupt:
    outcome = "KeyboardInterrupt"
except Exception as e:
    outcome = repr(e)
took = time.monotonic() - sent[0] if sent else None
{after}
loader.close()
print(json.dumps({{"outcome": outcome, "took": took}}))
"""


# An `after` for run_ctrl_c(): the workers go on, and the rest of the pass comes.
CONTINUE_THE_PASS = """
for pid in workers:
    os.kill(pid, signal.SIGCONT)
batch = None  # what the interrupted loop got before the workers stopped holds a slot
seen = 0
while (b := loader.next_batch()) is not None:
    seen += len(b.indices)
assert seen > 0
"""


def run_ctrl_c(open: str, setup: str = "", after: str = "") -> dict:
    """Runs CTRL_C_WHILE_WAITING in a fresh interpreter; fails the test unless it exits
    cleanly; what it printed."""
    result = run_python(CTRL_C_WHILE_WAITING.format(open=open, setup=setup, after=after), timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])
