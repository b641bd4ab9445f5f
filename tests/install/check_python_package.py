"""What a user of an installed forkfeed package sees, whether `cmake --install` or pip
put it there: it imports from where it was installed, loads the libforkfeed installed
with it, and reads one pass exactly once with forked and with spawned workers, running
the forkfeed-worker installed with it. Run by check_consumer.sh and check_pip_install.sh
with PYTHONPATH naming the installed site directory only, from a folder outside the
checkout.
usage: python3 check_python_package.py ROOT IMAGE_FOLDER IMAGES
where ROOT is the folder everything forkfeed runs must come from (the prefix, or pip's
--target)."""

import os
import pathlib
import sys

for name in ("LD_LIBRARY_PATH", "FORKFEED_WORKER", "FORKFEED_BIN_DIR"):
    if name in os.environ:
        sys.exit(f"check_python_package.py: {name} is set; the installed package must do without it")
if len(sys.argv) != 4:
    sys.exit("usage: check_python_package.py ROOT IMAGE_FOLDER IMAGES")
root = pathlib.Path(sys.argv[1]).resolve()
data, images = sys.argv[2], int(sys.argv[3])
failures = 0


def check(ok: bool, what: str, detail: object) -> None:
    global failures
    print(f"{'ok  ' if ok else 'FAIL'}: {what} ({detail})", flush=True)
    failures += not ok


def installed(path: str) -> bool:
    return pathlib.Path(path).resolve().is_relative_to(root)


def children_executables() -> list:
    """The executables of this process's children: its workers while a pass runs."""
    pids = []
    for task in pathlib.Path("/proc/self/task").iterdir():
        pids += (task / "children").read_text().split()
    return [os.readlink(f"/proc/{pid}/exe") for pid in pids]


import forkfeed  # noqa: E402 (after the environment checks)
from forkfeed import _forkfeed  # noqa: E402

check(installed(forkfeed.__file__), "forkfeed imported from where it was installed", forkfeed.__file__)
check(installed(_forkfeed.__file__), "its extension too", _forkfeed.__file__)
libraries = {line.split()[-1] for line in open("/proc/self/maps") if "libforkfeed" in line}
check(len(libraries) == 1 and all(installed(p) for p in libraries),
      "the libforkfeed loaded is the one installed with it", sorted(libraries))

# Fork first, with numpy output: torch's import may start threads, and a parent with
# threads is a fork hazard. Spawn then runs with torch, as a trainer would.
for start_method, output in (("fork", "numpy"), ("spawn", "torch")):
    with forkfeed.Loader(data, batch_size=8, workers=2, size=32, start_method=start_method,
                         max_worker_restarts=0, output=output) as loader:
        indices, workers = [], None
        while (batch := loader.next_batch()) is not None:
            indices += batch.indices
            if workers is None:
                workers = children_executables()
        method = loader.stats()["start_method"]
    check(method == start_method, f"{start_method}: the loader started its workers that way", method)
    check(sorted(indices) == list(range(images)), f"{start_method}: one pass, every image exactly once",
          f"{len(indices)} delivered, {len(set(indices))} distinct, of {images}")
    if start_method == "spawn":
        check(len(workers) == 2 and all(installed(w) and w.endswith("/forkfeed-worker") for w in workers),
              "spawn: the workers run the forkfeed-worker installed with it", workers)

sys.exit(1 if failures else 0)
