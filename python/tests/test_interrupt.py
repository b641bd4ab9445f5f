"""Ctrl-C while next() waits for a batch raises KeyboardInterrupt promptly, even with
every worker stopped, and a handler that ignores SIGINT leaves the wait alone."""

import json

from conftest import run_python

STOPPED_WORKERS = """
import json, os, signal, threading, time, forkfeed
loader = forkfeed.Loader({root!r}, batch_size=8, workers=1, prefetch=1, size=16, output="numpy")
workers = [int(p) for p in open(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children").read().split()]
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


def test_ctrl_c_while_waiting_raises_keyboard_interrupt_promptly(dataset):
    code = STOPPED_WORKERS.format(root=str(dataset), setup="", after="")
    result = run_python(code, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["outcome"] == "KeyboardInterrupt"
    assert out["took"] < 1.0


def test_a_handler_that_ignores_ctrl_c_keeps_waiting(dataset):
    # The handler ignores the first SIGINT; the second, 1 s later, resumes the workers,
    # and the batches come: next() went on waiting instead of failing.
    setup = """
calls = []
def handler(signum, frame):
    calls.append(signum)
threading.Timer(1.5, lambda: [os.kill(pid, signal.SIGCONT) for pid in workers]).start()
signal.signal(signal.SIGINT, handler)
"""
    code = STOPPED_WORKERS.format(root=str(dataset), setup=setup,
                                  after="assert calls == [signal.SIGINT], calls")
    result = run_python(code, timeout=60)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["outcome"] == "no batch was missing"
    assert out["took"] >= 0.9  # it waited for the SIGCONT at 1.5 s


def test_keyboard_interrupt_leaves_the_loader_usable(dataset):
    after = """
for pid in workers:
    os.kill(pid, signal.SIGCONT)
seen = 0
while (b := loader.next_batch()) is not None:
    seen += len(b.indices)
assert seen > 0
"""
    code = STOPPED_WORKERS.format(root=str(dataset), setup="", after=after)
    result = run_python(code, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["outcome"] == "KeyboardInterrupt"
