"""A Loader or Client belongs to the process that opened it. After os.fork() the child
can neither use it (every call raises forkfeed.Error naming both processes) nor, by
letting go of its copy as it exits (sys.exit() runs every finalizer), stop the parent's
workers, close its stream or give back its slots: the parent reads every batch of its
pass exactly once. And a batch the child holds stays what it was at the fork, however
the parent reads on over the slot it came in."""

import pytest

from conftest import run_python

# Run in a fresh interpreter, so that the child's sys.exit() ends a plain script (not
# pytest, which a forked test process would go on running). `OPEN` makes `source`.
FORK_WHILE_HOLDING = """
import os, sys, forkfeed
{open}
held = source.next_batch()  # a batch of the parent's, held across the fork
parent = os.getpid()

def every_call_raises():
    for name, call in [("next_batch", source.next_batch), ("reset", source.reset),
                       ("state_dict", source.state_dict), ("stats", source.stats),
                       ("len", lambda: len(source)),
                       ("set_epoch", lambda: source.set_epoch(3)), ("iter", lambda: next(iter(source)))]:
        try:
            call()
        except forkfeed.Error as e:
            assert f"opened by process {{parent}}" in str(e) and "child of fork()" in str(e), (name, str(e))
        else:
            raise AssertionError(name + " did not raise in the child")

for child_does in (every_call_raises, lambda: None):
    pid = os.fork()
    if pid == 0:
        try:
            child_does()
        except BaseException as e:
            os.write(2, f"child: {{e!r}}\\n".encode())
            os._exit(1)
        sys.exit(0)  # finalizers run: the child's copies of source and held are let go
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status

seen = list(held.indices)
del held
while (batch := source.next_batch()) is not None:
    seen += batch.indices
assert sorted(seen) == list(range({images})), sorted(seen)
assert source.stats()["worker_restarts"] == 0
source.close()
print("ok")
"""


def run_forking(open_source: str, images: int) -> None:
    result = run_python(FORK_WHILE_HOLDING.format(open=open_source, images=images), timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_a_forked_child_cannot_use_or_stop_its_parents_loader(dataset, labels, start_method):
    run_forking(f"source = forkfeed.Loader({str(dataset)!r}, batch_size=5, workers=2, size=16, "
                f"start_method={start_method!r}, output='numpy')", len(labels))


def test_a_forked_child_cannot_use_or_close_its_parents_stream(dataset, labels, daemon):
    run_forking(f"source = forkfeed.Client({str(dataset)!r}, socket={daemon.socket!r}, batch_size=5, "
                f"workers=2, size=16, output='numpy')", len(labels))


# The child looks at the batch held across the fork once the parent has let go of it and
# read the rest of its pass, through every slot again.
FORK_KEEPS_WHAT_IT_HELD = """
import os, numpy, forkfeed
{open}
held = source.next_batch()
images, labels = held.images.copy(), held.labels.copy()
go_r, go_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(go_w)
    os.read(go_r, 1)
    os._exit(0 if numpy.array_equal(held.images, images) and numpy.array_equal(held.labels, labels) else 3)
os.close(go_r)
del held
batches = 1
while source.next_batch() is not None:
    batches += 1
os.write(go_w, b"x")
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, ("the child's batch changed", status)
assert batches > 4, batches  # more than the slots: the held one was filled again
source.close()
print("ok")
"""


def test_a_forked_childs_batch_stays_as_it_was_at_the_fork(dataset):
    result = run_python(FORK_KEEPS_WHAT_IT_HELD.format(
        open=f"source = forkfeed.Loader({str(dataset)!r}, batch_size=2, workers=2, prefetch=1, size=16, "
        "output='numpy', shuffle=False)"), timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr


def test_a_forked_childs_batch_of_a_stream_stays_as_it_was_at_the_fork(dataset, daemon):
    result = run_python(FORK_KEEPS_WHAT_IT_HELD.format(
        open=f"source = forkfeed.Client({str(dataset)!r}, socket={daemon.socket!r}, batch_size=2, workers=2, "
        "prefetch=1, size=16, output='numpy', shuffle=False)"), timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr


# A fork while the parent keeps every batch of a pass, most of them copied aside: the child
# gets each as it was, copied or in its slot, while the parent reads another pass through
# the slots.
FORK_KEEPING_EVERY_BATCH = """
import os, numpy, forkfeed
{open}
kept = [(b.images, b.labels) for b in iter(source.next_batch, None)]
copies = [(i.copy(), l.copy()) for i, l in kept]
assert source.stats()["copied_batches"] > 0
go_r, go_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(go_w)
    os.read(go_r, 1)
    same = all(numpy.array_equal(a, b) and numpy.array_equal(c, d) for (a, c), (b, d) in zip(kept, copies))
    os._exit(0 if same else 3)
os.close(go_r)
del kept
while source.next_batch() is not None:
    pass
os.write(go_w, b"x")
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, ("the child's batches changed", status)
source.close()
print("ok")
"""


def test_a_forked_child_keeps_the_batches_copied_aside_and_those_in_their_slots(dataset):
    result = run_python(FORK_KEEPING_EVERY_BATCH.format(
        open=f"source = forkfeed.Loader({str(dataset)!r}, batch_size=4, workers=1, prefetch=1, size=16, "
        "output='numpy', log_level='error')"), timeout=120)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr
