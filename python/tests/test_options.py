"""Bad options raise ValueError (a bad value) or TypeError (a wrong type) naming the
option; errors carry the C++ message; a closed loader says so."""

import pytest

import forkfeed


@pytest.mark.parametrize("name,value", [
    ("dtype", "int8"), ("transform", "random"), ("on_error", "ignore"), ("start_method", "thread"),
    ("fork_hazard", "panic"), ("workers", -1), ("batch_size", 2**32), ("seed", -5),
    ("mean", [0.5, 0.5]), ("task_timeout", -1.0), ("pin_memory_device", -2**31 - 1),
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


def test_checks_of_the_cpp_options_are_value_errors(dataset):
    with pytest.raises(ValueError, match="batch size"):
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
    for cls in (forkfeed.Loader, forkfeed.Client):
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

    for cls in (forkfeed.Loader, forkfeed.Client):
        init = next(n for n in classes[cls.__name__].body
                    if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        stub_args = [a.arg for a in init.args.args + init.args.kwonlyargs]
        assert stub_args == list(inspect.signature(cls.__init__).parameters), cls.__name__
        public = {n for c in cls.__mro__[:-1] for n in vars(c)
                  if not n.startswith("_") or n in ("__iter__", "__len__")}
        assert public <= stub_names(cls.__name__), cls.__name__


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
