"""A Python trainer is a hazardous parent: with threads running or a CUDA context,
start_method "auto" spawns forkfeed-worker, which the package finds next to libforkfeed on its own."""

import json
import os

from conftest import run_python

TRAINER = """
import json, threading, torch
import forkfeed

stop = threading.Event()
helper = threading.Thread(target=stop.wait)  # a thread alive while the loader starts
helper.start()
torch.ones(256, 256) @ torch.ones(256, 256)  # and whatever threads torch starts
try:
    with forkfeed.Loader({root!r}, batch_size=8, workers=2, size=16, fork_hazard="error") as loader:
        indices = []
        while (batch := loader.next_batch()) is not None:
            indices += batch.indices
        print(json.dumps({{"start_method": loader.stats()["start_method"], "indices": indices}}))
finally:
    stop.set()
    helper.join()
"""


def test_auto_spawns_from_a_threaded_trainer(dataset, labels):
    env = {k: v for k, v in os.environ.items() if k != "FORKFEED_WORKER"}
    result = run_python(TRAINER.format(root=str(dataset)), env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["start_method"] == "spawn"
    assert sorted(out["indices"]) == list(range(len(labels)))


def test_auto_forks_from_a_clean_process(dataset):
    code = f"""
import forkfeed
with forkfeed.Loader({str(dataset)!r}, batch_size=8, workers=1, size=16, output="numpy") as loader:
    print(loader.stats()["start_method"])
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "fork"


def test_fork_report_sees_a_thread():
    code = """
import json, threading, forkfeed
clean = forkfeed.fork_report()
stop = threading.Event()
helper = threading.Thread(target=stop.wait)
helper.start()
busy = forkfeed.fork_report()
stop.set()
helper.join()
print(json.dumps([clean, busy]))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    clean, busy = json.loads(result.stdout)
    assert not clean["hazardous"] and clean["summary"] == "no fork hazard"
    assert busy["hazardous"] and busy["threads"] >= 2 and "thread" in busy["summary"]
    assert busy["description"]


def test_auto_spawns_after_cuda_made_a_context(dataset, labels):
    # A plain script (no thread of its own) whose CUDA has a context, as after
    # torch.cuda's first use; this machine has no GPU, so the driver is the test double
    # of tests/fake_cuda, loaded as libcuda.so.1, which is all the fork-safety probe reads.
    code = f"""
import ctypes, json, forkfeed
cuda = ctypes.CDLL({os.environ["FORKFEED_FAKE_LIBCUDA"]!r})
before = forkfeed.fork_report()
assert cuda.cudaSetDevice(1) == 0  # device 1 gets its primary context
report = forkfeed.fork_report()
with forkfeed.Loader({str(dataset)!r}, batch_size=8, workers=2, size=16, fork_hazard="error",
                     output="numpy") as loader:
    indices = []
    while (batch := loader.next_batch()) is not None:
        indices += batch.indices
    print(json.dumps({{"before": before, "report": report, "indices": indices,
                      "start_method": loader.stats()["start_method"]}}))
"""
    env = {k: v for k, v in os.environ.items() if k != "FORKFEED_WORKER"}
    result = run_python(code, env=env)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["before"]["cuda_loaded"] and out["before"]["cuda_active_devices"] == []
    assert out["report"]["cuda_active_devices"] == [1] and out["report"]["hazardous"]
    assert "CUDA" in out["report"]["summary"], out["report"]["summary"]
    assert out["start_method"] == "spawn"
    assert sorted(out["indices"]) == list(range(len(labels)))
