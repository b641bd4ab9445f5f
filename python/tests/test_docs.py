"""The documentation runs: every example marked runnable in README.md and docs/*.md is
executed on generated data and its output checked where the page says what it prints;
every relative link resolves; every flag a tool's --help prints is in docs/tools.md, and
every keyword of forkfeed.Loader, Client and WorkerPool is in docs/python.md.

A runnable example is a fenced block whose info string is `python run`, `sh run` or
`cpp run` (GitHub highlights by the first word). A block right after it whose info string
is `output` lists lines that must appear in the example's stdout, in that order; `...` in
a line stands for any text. Each example runs alone in a fresh directory that holds
`data/` (forkfeed-mkdata: 64 JPEGs in 4 classes, 32-64 px a side, seed 0) and `build/bin`
(a link to the tools), with FORKFEED_CACHE_DIR inside it; `python` with this interpreter,
`sh` with `bash -euo pipefail`, `cpp` compiled against include/ and libforkfeed, then run.
The tools are not on PATH, as they are not on a reader's who built forkfeed: an example
calls them build/bin/forkfeedd, as a reader copying it from the checkout would.
"""

import inspect
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import List, NamedTuple, Optional

import pytest

from conftest import BIN_DIR

import forkfeed

REPO = pathlib.Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
LIB_DIR = BIN_DIR.parent / "lib"
TIMEOUT = {"python": 60, "sh": 60, "cpp": 120}
README_LINES = 250
TOOLS = ["forkfeed-bench", "forkfeedd", "forkfeed-gateway", "forkfeed-ctl", "forkfeed-mkdata",
         "forkfeed-shard",
         "forkfeed-worker"]


class Block(NamedTuple):
    page: pathlib.Path
    line: int  # of the opening fence, from 1
    end: int  # of the closing fence
    info: str
    code: str


class Example(NamedTuple):
    page: pathlib.Path
    line: int
    lang: str
    code: str
    expected: Optional[List[str]]  # the output block's lines, None without one

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def fenced_blocks(page: pathlib.Path, text: Optional[str] = None) -> List[Block]:
    """The fenced blocks of a Markdown page, indented ones (in lists) included."""
    lines = (page.read_text() if text is None else text).split("\n")
    blocks, i = [], 0
    while i < len(lines):
        opening = re.match(r"^(\s*)(```+)\s*(.*)$", lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, info = opening.groups()
        body, j = [], i + 1
        while j < len(lines) and not re.match(r"^\s*" + fence + r"\s*$", lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        blocks.append(Block(page, i + 1, j + 1, info.strip(), "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def examples(page: pathlib.Path, text: Optional[str] = None) -> List[Example]:
    text = page.read_text() if text is None else text
    lines = text.split("\n")
    blocks = fenced_blocks(page, text)
    found = []
    for k, block in enumerate(blocks):
        words = block.info.split()
        if len(words) < 2 or words[1] != "run":
            continue
        assert words[0] in TIMEOUT, (f"{page}:{block.line}: runnable blocks are python, sh or cpp, "
                                     f"not {words[0]}")
        after = blocks[k + 1] if k + 1 < len(blocks) else None
        expected = None
        between = lines[block.end:after.line - 1] if after is not None else []
        if after is not None and after.info == "output" and not any(line.strip() for line in between):
            expected = [line for line in after.code.split("\n") if line.strip()]
        found.append(Example(page, block.line, words[0], block.code, expected))
    return found


def all_examples() -> List[Example]:
    return [example for page in PAGES for example in examples(page)]


def make_workspace(root: pathlib.Path, data: pathlib.Path) -> pathlib.Path:
    root.mkdir(parents=True)
    shutil.copytree(data, root / "data")
    (root / "build").mkdir()
    (root / "build" / "bin").symlink_to(BIN_DIR.resolve())
    return root


def run_example(example: Example, workspace: pathlib.Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # A reader's PATH: without the build's tools, whatever put them on ours.
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not (pathlib.Path(p) / "forkfeedd").exists())
    # The package this test imported, wherever it is (the build tree or an install).
    package_root = str(pathlib.Path(forkfeed.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["FORKFEED_CACHE_DIR"] = str(workspace / ".cache")  # shard indexes stay in the workspace
    suffix = {"python": ".py", "sh": ".sh", "cpp": ".cpp"}[example.lang]
    source = workspace / f"example{suffix}"
    source.write_text(example.code)
    if example.lang == "python":
        command = [sys.executable, str(source)]
    elif example.lang == "sh":
        command = ["bash", "-euo", "pipefail", str(source)]
    else:
        program = workspace / "example"
        compiled = subprocess.run(
            ["c++", "-std=c++20", f"-I{REPO / 'include'}", str(source), "-o", str(program), f"-L{LIB_DIR}",
             "-lforkfeed", f"-Wl,-rpath,{LIB_DIR}"], capture_output=True, text=True, timeout=TIMEOUT["cpp"])
        if compiled.returncode != 0:
            return compiled
        command = [str(program)]
    # In a process group of its own, which is killed whatever happens: nothing an example
    # starts outlives it. What still runs once it has returned is reported. Its output goes
    # to files, which a background child holding them open cannot keep from being read.
    out_path, err_path = workspace / "example.stdout", workspace / "example.stderr"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(command, cwd=workspace, env=env, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        # Not reaped until its group is killed: while it is a zombie its pid, and so the
        # group's id, cannot be another process's.
        returncode = wait_unreaped(process.pid, TIMEOUT[example.lang])
        left = running_in_group(process.pid) if returncode is not None else []
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    stdout, stderr = out_path.read_text(), err_path.read_text()
    if returncode is None:
        raise subprocess.TimeoutExpired(command, TIMEOUT[example.lang], stdout, stderr)
    if left:
        returncode = returncode or 1
        stderr += f"\nthe example left {', '.join(left)} running: an example stops what it starts"
    return subprocess.CompletedProcess(command, returncode, stdout, stderr)


def wait_unreaped(pid: int, timeout_s: float) -> Optional[int]:
    """Process `pid`'s exit status (a signal as -N) once it has ended, left unreaped; None
    if it is still running after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if ended is not None and ended.si_pid == pid:
            return ended.si_status if ended.si_code == os.CLD_EXITED else -ended.si_status
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)


def running_in_group(group: int, grace_s: float = 3.0) -> List[str]:
    """The processes of process group `group` still running (zombies aside) after up to
    `grace_s` seconds: "PID (name)"."""
    deadline = time.monotonic() + grace_s
    while True:
        running = []
        for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue  # gone meanwhile
            name_end = text.rindex(")")
            state, _ppid, pgrp = text[name_end + 2:].split()[:3]
            if int(pgrp) == group and state != "Z":
                running.append(f"{stat.parent.name} {text[text.index('('):name_end + 1]}")
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


def missing_output(expected: List[str], stdout: str) -> Optional[str]:
    """The first expected line not found in `stdout` (in order), or None."""
    lines = stdout.split("\n")
    at = 0
    for want in expected:
        # Not inside a longer word or number: "batches 4" is not found in "batches 40".
        text = ".*".join(re.escape(part) for part in want.strip().split("..."))
        pattern = re.compile(r"(?<![\w.])" * want.strip()[:1].isalnum() + text +
                             r"(?![\w.])" * want.strip()[-1:].isalnum())
        while at < len(lines) and not pattern.search(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def failure(example: Example, workspace: pathlib.Path) -> Optional[str]:
    """Why `example` failed in `workspace`, or None."""
    try:
        done = run_example(example, workspace)
    except subprocess.TimeoutExpired as timeout:
        return (f"{example.name}: did not finish in {TIMEOUT[example.lang]} s\nstdout:\n{timeout.output}\n"
                f"stderr:\n{timeout.stderr}")
    if done.returncode != 0:
        return f"{example.name}: exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    if example.expected is not None:
        line = missing_output(example.expected, done.stdout)
        if line is not None:
            return f"{example.name}: its output lacks {line!r} (in order)\nstdout:\n{done.stdout}"
    return None


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("docs") / "data"
    subprocess.run([str(BIN_DIR / "forkfeed-mkdata"), "--out", str(root), "--images", "64", "--classes", "4",
                    "--seed", "0", "--min-side", "32", "--max-side", "64"], check=True,
                   stdout=subprocess.DEVNULL)
    return root


@pytest.mark.parametrize("example", all_examples(), ids=lambda e: e.name)
def test_example_runs(example, data):
    # A short path: an example's Unix socket in it must fit sun_path's 108 bytes.
    with tempfile.TemporaryDirectory(prefix="ffdoc-") as short:
        why = failure(example, make_workspace(pathlib.Path(short) / "w", data))
    assert why is None, why


def test_a_broken_example_fails(data, tmp_path):
    page = REPO / "docs" / "broken.md"  # not written: the text is given
    text = "\n".join([
        "```python run", "print('batches 4')", "```", "```output", "batches 5", "```",
        "```sh run", "echo images/s 12.5", "false", "```",
        "```python run", "print('first'); print('images/s 12.5')", "```", "```output", "images/s ...",
        "first", "```",
        "```cpp run", "int main() { return undefined_name; }", "```",
        "```sh run", "sleep 30 &", "echo started", "```",
        "```python run", "print('batches 40')", "```", "```output", "batches 4", "```",
        "```python run", "print('batches 4')", "```", "An output block only right after its example:",
        "```output",
        "batches 5", "```",
    ])
    broken = examples(page, text)
    assert [e.lang for e in broken] == ["python", "sh", "python", "cpp", "sh", "python", "python"]
    assert broken[-1].expected is None, "prose between an example and an output block: not its output"
    for k, example in enumerate(broken[:-1]):
        assert failure(example, make_workspace(tmp_path / f"work{k}", data)) is not None, example


def test_an_example_that_does_its_job_passes(data, tmp_path):
    text = "\n".join([
        "```python run",
        "import forkfeed",
        "with forkfeed.Loader(root='data', batch_size=16, size=32, workers=2) as loader:",
        "    print('batches', sum(1 for _ in loader))",
        "```", "```output", "batches 4", "```",
    ])
    (example,) = examples(REPO / "docs" / "good.md", text)
    assert failure(example, make_workspace(tmp_path / "work", data)) is None


def github_anchor(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose_lines(page: pathlib.Path):
    """(number, line) of the page's lines outside fenced blocks: a heading or a link inside
    a code block is code."""
    inside_code = set()
    for block in fenced_blocks(page):
        inside_code.update(range(block.line, block.end + 1))
    for number, line in enumerate(page.read_text().split("\n"), start=1):
        if number not in inside_code:
            yield number, line


def anchors(page: pathlib.Path) -> set:
    found, seen = set(), {}
    for _, line in prose_lines(page):
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            anchor = github_anchor(heading.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
    return found


def links(page: pathlib.Path):
    for _, line in prose_lines(page):
        for match in re.finditer(r"\]\(([^)\s]+)\)", line):
            yield match.group(1)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_resolve(page):
    broken = []
    for link in links(page):
        if re.match(r"^[a-z]+:", link):
            continue  # http:, https:, mailto:
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link} (no {target.relative_to(REPO) if REPO in target.parents else target})")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link} (no heading #{anchor} in {target.name})")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_readme_is_short_and_starts_a_newcomer():
    readme = (REPO / "README.md").read_text()
    assert readme.count("\n") <= README_LINES, (f"README.md has {readme.count(chr(10))} lines, "
                                                f"over {README_LINES}")
    for command in ("tools/demo.sh", "tools/test.sh"):
        assert command in readme
    linked = {pathlib.Path(link.partition("#")[0]).name for link in links(REPO / "README.md")}
    pages = {page.name for page in PAGES if page.parent.name == "docs"}
    assert pages <= linked, f"README.md does not link {sorted(pages - linked)}"


@pytest.mark.parametrize("tool", TOOLS)
def test_every_flag_of_a_tool_is_in_the_tools_page(tool):
    shown = subprocess.run([str(BIN_DIR / tool), "--help"], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0, shown.stderr
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", shown.stdout))
    page = (REPO / "docs" / "tools.md").read_text()
    missing = sorted(flag for flag in flags if not re.search(rf"`{re.escape(flag)}(?![\w-])", page))
    assert not missing, f"docs/tools.md does not name {tool}'s {missing}"


@pytest.mark.parametrize("name", ["Loader", "Client", "WorkerPool"])
def test_every_keyword_of_the_python_api_is_in_the_python_page(name):
    page = (REPO / "docs" / "python.md").read_text()
    keywords = inspect.signature(getattr(forkfeed, name)).parameters
    missing = sorted(k for k in keywords if f"`{k}`" not in page and f"`{k}=" not in page)
    assert not missing, f"docs/python.md does not name forkfeed.{name}'s {missing}"
