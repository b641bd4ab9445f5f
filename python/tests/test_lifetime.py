"""Loaders left open are shut down: by del, and at interpreter exit, with no worker
process left behind."""

import json
import os
import time

import forkfeed
from conftest import run_python

LEAVE_OPEN = """
import json, os, forkfeed
loader = forkfeed.Loader({root!r}, batch_size=8, workers=2, size=16, output="numpy")
batch = loader.next_batch()  # workers busy, one batch held
children = open(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children").read().split()
print(json.dumps([int(c) for c in children]))
{ending}
"""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def workers_left(ending, dataset):
    result = run_python(LEAVE_OPEN.format(root=str(dataset), ending=ending))
    assert result.returncode == 0, result.stderr
    children = json.loads(result.stdout.splitlines()[0])
    assert len(children) == 2
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in children if alive(pid)], result.stderr


def test_interpreter_exit_with_a_live_loader_leaves_no_worker(dataset):
    left, stderr = workers_left("", dataset)
    assert left == []
    assert "Exception ignored" not in stderr


def test_del_stops_and_reaps_the_workers(dataset):
    left, _ = workers_left("del loader\n"
                           "children = open(f'/proc/{os.getpid()}/task/{os.getpid()}/children').read()\n"
                           "assert children.split() == [], children", dataset)
    assert left == []


def test_a_batch_kept_past_reset_and_close_is_unchanged(dataset):
    loader = forkfeed.Loader(dataset, batch_size=8, workers=2, size=16)
    kept = loader.next_batch().images
    copy = kept.clone()
    loader.reset()
    for _ in loader:
        pass
    loader.close()
    assert kept.equal(copy)
