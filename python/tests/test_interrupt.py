"""Ctrl-C while next() waits for a batch raises KeyboardInterrupt promptly, even with
every worker stopped, and a handler that ignores SIGINT leaves the wait alone."""

from conftest import CONTINUE_THE_PASS, run_ctrl_c

# A Loader whose only worker (a child of this process) the script stops.
OPEN_LOADER = """
loader = forkfeed.Loader({root!r}, batch_size=8, workers=1, prefetch=1, size=16, output="numpy")
workers = [int(p) for p in open(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children").read().split()]
"""


def test_ctrl_c_while_waiting_raises_keyboard_interrupt_promptly(dataset):
    out = run_ctrl_c(OPEN_LOADER.format(root=str(dataset)))
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
    out = run_ctrl_c(OPEN_LOADER.format(root=str(dataset)), setup=setup,
                     after="assert calls == [signal.SIGINT], calls")
    assert out["outcome"] == "no batch was missing"
    assert out["took"] >= 0.9  # it waited for the SIGCONT at 1.5 s


def test_keyboard_interrupt_leaves_the_loader_usable(dataset):
    out = run_ctrl_c(OPEN_LOADER.format(root=str(dataset)), after=CONTINUE_THE_PASS)
    assert out["outcome"] == "KeyboardInterrupt"
