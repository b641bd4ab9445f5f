"""Bad options raise ValueError (a bad value) or TypeError (a wrong type) naming the
option by its keyword; errors carry the C++ message; a closed loader says so. Paths are
str, bytes or os.PathLike, whatever bytes they hold; a NUL byte in one is refused."""

import os
import pathlib
import subprocess

import pytest

import forkfeed
from conftest import BIN_DIR


@pytest.mark.parametrize("name,value", [
    ("dtype", "int8"), ("transform", "random"), ("on_error", "ignore"), ("start_method", "thread"),
    ("fork_hazard", "panic"), ("workers", -1), ("batch_size", 2**32), ("seed", -5),
    ("mean", [0.5, 0.5]), ("task_timeout", -1.0), ("pin_memory_device", -2**31 - 1), ("weight", 0),
    ("weight", 1001),
])
def test_bad_value_names_the_option(dataset, name, value):
    with pytest.raises(ValueError, match=name):
        forkfeed.Loader(dataset, **{name: value})


@pytest.mark.parametrize("name,value", [
    ("batch_size", "8"), ("batch_size", 8.0), ("shuffle", 1), ("workers", True), ("std", "abc"),
    ("log_level", 3),
])
def test_wrong_type_names_the_option(dataset, name, value):
    with pytest.raises(TypeError, match=name):
        forkfeed.Loader(dataset, **{name: value})


@pytest.mark.parametrize("name,values,range_", [
    ("weight", [0, -1, 1001, 2**32], "an integer from 1 to 1000"),
    ("prefetch", [0, -1, 2**32], "an integer from 1 to 4294967295"),
    ("workers", [0, -1], "an integer from 1 to 4294967295"),
    ("batch_size", [0, -1, 65537, 2**64], "an integer from 1 to 65536"),
    ("size", [7, -1, 4097], "0 .the transform's. or an integer from 8 to 4096"),
])
def test_a_value_outside_an_options_range_gets_one_message(dataset, name, values, range_):
    # weight=-1 said "in [0, 4294967295]" (uint32's range) and weight=0 "1 to 1000": one
    # range now, the option's, whatever the value.
    for value in values:
        with pytest.raises(ValueError, match=rf"^{name} must be {range_}.*, got {value}$"):
            forkfeed.Loader(dataset, **{name: value})


def test_checks_of_the_cpp_options_are_value_errors(dataset):
    with pytest.raises(ValueError, match="batch_size"):
        forkfeed.Loader(dataset, batch_size=0)
    with pytest.raises(ValueError, match="size"):
        forkfeed.Loader(dataset, size=4)
    with pytest.raises(ValueError, match="rank"):
        forkfeed.Loader(dataset, rank=2, world_size=2)


def test_output_and_unknown_keywords(dataset):
    with pytest.raises(ValueError, match="output"):
        forkfeed.Loader(dataset, output="jax")
    with pytest.raises(TypeError, match="batchsize"):
        forkfeed.Loader(dataset, batchsize=8)
    with pytest.raises(TypeError):
        forkfeed.Loader(dataset, 8)  # everything but root is keyword-only


def test_missing_root_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        forkfeed.Loader(tmp_path / "nowhere")


def test_exception_hierarchy():
    assert issubclass(forkfeed.Error, RuntimeError)
    assert issubclass(forkfeed.BadDataError, forkfeed.Error)
    assert issubclass(forkfeed.WorkerDiedError, forkfeed.Error)
    assert issubclass(forkfeed.DaemonLostError, forkfeed.Error)


def test_closed_loader(dataset):
    loader = forkfeed.Loader(dataset, batch_size=8, workers=1, size=16)
    loader.close()
    loader.close()
    assert loader.closed
    with pytest.raises(ValueError, match="closed"):
        len(loader)
    with pytest.raises(ValueError, match="closed"):
        loader.next_batch()


def test_docstrings_on_public_names():
    for name in forkfeed.__all__:
        assert getattr(forkfeed, name).__doc__, name
    for cls in (forkfeed.Loader, forkfeed.Client, forkfeed.WorkerPool):
        for name in dir(cls):
            if not name.startswith("_"):
                assert getattr(cls, name).__doc__, f"{cls.__name__}.{name}"


def test_stub_matches_the_package():
    import ast
    import inspect
    import pathlib

    stub = ast.parse((pathlib.Path(forkfeed.__file__).parent / "__init__.pyi").read_text())
    classes = {n.name: n for n in stub.body if isinstance(n, ast.ClassDef)}

    def stub_names(name):  # methods of the stub's class `name` and of its stub bases
        c = classes[name]
        own = {n.name for n in c.body if isinstance(n, ast.FunctionDef)}
        return own.union(*(stub_names(b.id) for b in c.bases if b.id in classes))

    for cls in (forkfeed.Loader, forkfeed.Client, forkfeed.WorkerPool):
        init = next(n for n in classes[cls.__name__].body
                    if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        stub_args = [a.arg for a in init.args.args + init.args.kwonlyargs]
        assert stub_args == list(inspect.signature(cls.__init__).parameters), cls.__name__
        public = {n for c in cls.__mro__[:-1] for n in vars(c)
                  if not n.startswith("_") or n in ("__iter__", "__len__")}
        assert public <= stub_names(cls.__name__), cls.__name__


def test_option_keywords_are_the_cpp_options():
    """Loader() and Client() take every C++ option, in its table's order, under the keyword
    the extension names it by (plan/option_fields.h), and no other option; the stub's are
    the same (test_stub_matches_the_package)."""
    import inspect

    keywords = forkfeed._forkfeed.option_keywords()
    assert len(keywords) == len(set(keywords))
    assert {"root", "task_timeout", "batch_size"} <= set(keywords)
    own = {forkfeed.Loader: {"self", "output", "pool"},
           forkfeed.Client: {"self", "output", "dataset", "socket", "address", "token_file",
                             "connect_timeout",
                             "overdue"}}
    for cls, extras in own.items():
        params = [p for p in inspect.signature(cls.__init__).parameters if p not in extras]
        assert params == keywords, cls.__name__
    assert list(forkfeed._OPTION_NAMES) == keywords


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_layout_gives_the_same_pixels_in_nhwc_or_nchw(dataset, dtype):
    import numpy

    options = dict(batch_size=4, size=16, seed=2, dtype=dtype, output="numpy")
    with forkfeed.Loader(dataset, layout="nhwc", **options) as nhwc, \
            forkfeed.Loader(dataset, layout="nchw", **options) as nchw:
        a, b = nhwc.next_batch(), nchw.next_batch()
        assert a.images.shape == (4, 16, 16, 3) and b.images.shape == (4, 3, 16, 16)
        assert list(a.indices) == list(b.indices)
        assert numpy.array_equal(a.images.transpose(0, 3, 1, 2), b.images)
    with pytest.raises(ValueError, match="layout"):
        forkfeed.Loader(dataset, layout="chw")


@pytest.mark.parametrize("name,value", [
    ("mean", [float("nan"), 0.5, 0.5]), ("mean", [1e300, 0.5, 0.5]), ("mean", [0.5, float("inf"), 0.5]),
    ("std", [0.2, 0.2, 0.0]), ("std", [1e-45, 0.2, 0.2]), ("std", [0.2, float("nan"), 0.2]),
    ("std", [0.2, 0.2, -1.0]), ("std", [1e-38, 0.2, 0.2]), ("std", [5e-324, 0.2, 0.2]),
])
def test_normalisation_that_would_not_give_finite_pixels_is_refused(dataset, name, value):
    with pytest.raises(ValueError, match=name):
        forkfeed.Loader(dataset, dtype="float32", **{name: value})


def test_messages_name_keywords_not_command_line_flags(dataset):
    with pytest.raises(ValueError) as error:
        forkfeed.Loader(dataset, workers=40, prefetch=2)
    assert "prefetch" in str(error.value) and "--" not in str(error.value)


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory):
    """A dataset in a folder whose name is not UTF-8, with a class folder that is not
    either: (its folder as bytes, the class name's bytes)."""
    top = os.fsencode(tmp_path_factory.mktemp("names")) + b"/data-\xff"
    subprocess.run([os.fsencode(BIN_DIR / "forkfeed-mkdata"), b"--out", top, b"--images", b"6",
                    b"--classes", b"2", b"--min-side", b"24", b"--max-side", b"32"],
                   check=True, stdout=subprocess.DEVNULL)
    os.rename(top + b"/class_001", top + b"/class-\xfe")
    return top, b"class-\xfe"


def test_a_path_may_be_bytes_a_str_with_surrogate_escapes_or_a_path(odd_names):
    top, odd_class = odd_names
    for root in (top, os.fsdecode(top), pathlib.Path(os.fsdecode(top))):
        with forkfeed.Loader(root, batch_size=3, workers=1, size=16, output="numpy") as loader:
            assert loader.classes == [os.fsdecode(odd_class), "class_000"]  # sorted bytewise
            assert sum(len(b.indices) for b in iter(loader.next_batch, None)) == 6
    manifest = top + b"/list.tsv"
    with open(manifest, "wb") as f:
        f.write(b"class_000/" + sorted(os.listdir(top + b"/class_000"))[0] + b"\t0\n")
    for path in (manifest, pathlib.Path(os.fsdecode(manifest))):
        with forkfeed.Loader(manifest=path, batch_size=1, workers=1, size=16, output="numpy") as loader:
            assert len(loader) == 1


@pytest.mark.parametrize("keyword", ["root", "manifest", "shards"])
def test_a_nul_byte_in_a_path_is_refused(dataset, keyword):
    with pytest.raises(ValueError, match="NUL byte"):
        forkfeed.Loader(**{keyword: str(dataset) + "\0junk"})
    with pytest.raises(ValueError, match="NUL byte"):
        forkfeed.Client(**{keyword: str(dataset)}, socket="/tmp/forkfeed\0.sock")


def test_a_path_of_another_type_is_a_type_error(dataset):
    with pytest.raises(TypeError, match="root"):
        forkfeed.Loader(3)


def test_a_positive_task_timeout_is_never_rounded_to_never(dataset):
    # 0.0004 s would round to 0 ms, which means "never": it is 1 ms. A worker stopped
    # with a task is then killed and replaced, and the batch comes.
    from conftest import run_python

    result = run_python(f"""
import os, signal, forkfeed
loader = forkfeed.Loader({str(dataset)!r}, batch_size=4, workers=1, size=16, task_timeout=0.0004,
                         max_worker_restarts=100, log_level="off", output="numpy")
worker = int(open(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children").read().split()[0])
os.kill(worker, signal.SIGSTOP)
assert loader.next_batch() is not None
assert loader.stats()["worker_restarts"] >= 1
""", timeout=60)
    assert result.returncode == 0, result.stderr


def test_an_oversized_state_is_refused_unread(dataset):
    with forkfeed.Loader(dataset, batch_size=8, workers=1, size=16) as loader:
        state = loader.state_dict()
        with pytest.raises(ValueError, match="bytes, over the 65536"):
            loader.load_state_dict(dict(state, padding="x" * (1 << 20)))
        loader.load_state_dict(state)


def test_a_number_float32_cannot_hold_is_refused_as_given(dataset):
    with pytest.raises(ValueError, match=r"std must be 3 numbers float32 can hold.*5e-324"):
        forkfeed.Loader(dataset, std=[5e-324, 0.2, 0.2])


def test_an_epoch_without_a_next_one_is_refused(dataset):
    with pytest.raises(ValueError, match="epoch"):
        forkfeed.Loader(dataset, epoch=2**64 - 1)
    with forkfeed.Loader(dataset, batch_size=8, workers=1, size=16) as loader:
        with pytest.raises(ValueError, match="not below 2\\^62"):
            loader.set_epoch(2**63)
        with pytest.raises(ValueError, match="epoch"):
            loader.load_state_dict(dict(loader.state_dict(), epoch=2**64 - 1))
