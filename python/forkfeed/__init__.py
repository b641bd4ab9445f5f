"""forkfeed: a forking image loader whose batches reach PyTorch without a copy.

    loader = forkfeed.Loader("/data/imagenet/train", batch_size=256, workers=8,
                             transform="train", size=224, dtype="float32", drop_last=True)
    for epoch in range(90):
        loader.set_epoch(epoch)
        for images, labels in loader:   # tensors whose memory is the batch slot
            ...

``transform`` is "train", "eval", or a pipeline of torchvision's ops run by the C++
workers: ``transform=[RandomResizedCrop(176), RandomHorizontalFlip(), TrivialAugmentWide(),
Normalize(), RandomErasing(p=0.1)]`` with the ops of ``forkfeed.transforms``, or the same as
one string. ``forkfeed.transforms`` also has MixUp and CutMix, which the trainer applies to
each batch.

The package binds the C++ ``forkfeed::Loader``, and ``forkfeed::Client`` for a stream
served by the forkfeedd daemon (``forkfeed.Client``, the same API): options, order,
resume and errors are the C++ ones. Python adds only the defaults of ``rank`` and
``world_size``.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from forkfeed import _forkfeed, transforms
from forkfeed._rank import default_rank_and_world_size as _default_rank_and_world_size
from forkfeed._forkfeed import (BadDataError, DaemonLostError, Error, WorkerDiedError, default_socket_path,
                                fork_report)

__all__ = ["Loader", "WorkerPool", "Client", "Batch", "FieldBatch", "Error", "BadDataError",
           "WorkerDiedError", "DaemonLostError", "fork_report",
           "default_socket_path", "padded", "image_list"]


class Batch(NamedTuple):
    """One batch, as ``Loader.next_batch()`` and ``Client.next_batch()`` return it.

    ``images`` and ``labels`` are views of the batch's slot in shared memory (torch
    tensors, or numpy arrays with ``output="numpy"``); the slot returns to the loader
    when the last view of it is freed. ``indices`` are the dataset indices of the
    samples, ``epoch`` the epoch of the pass and ``index`` the batch's position in it.
    """

    images: Any
    labels: Any
    indices: List[int]
    epoch: int
    index: int


class FieldBatch(NamedTuple):
    """One batch of a Loader or Client opened with ``fields=``, as ``next_batch()``
    returns it: ``fields`` is the dict that iterating gives (see ``Loader``), ``indices``,
    ``epoch`` and ``index`` as ``Batch``'s."""

    fields: Dict[str, Any]
    indices: List[int]
    epoch: int
    index: int


# The largest size_divisible: max_size's largest (plan/option_ranges.cpp), so no image
# forkfeed gives is taller or wider; a larger one only pads.
_MAX_SIZE_DIVISIBLE = 8192


def _dtype_name(dtype) -> str:
    """'uint8' for numpy's and torch's alike."""
    return str(dtype).removeprefix("torch.")


def _fill_refusal(fill: Any, dtype) -> Optional[str]:
    """Why `fill` cannot pad images of `dtype` (torch's or numpy's) as it is, or None: a
    fill the array would wrap (-1 as 255), round (0.5 as 0) or make infinite is refused."""
    import math
    import numbers
    import numpy
    name = _dtype_name(dtype)
    try:
        kind = numpy.dtype(name).kind  # 'b', 'u', 'i', 'f' or 'c': torch's names are numpy's
        info = numpy.iinfo(name) if kind in "ui" else numpy.finfo(name) if kind in "fc" else None
    except TypeError:  # bfloat16, which numpy lacks
        import torch
        kind, info = "f", torch.finfo(dtype)
    if kind == "b":
        allowed = "0 or 1"
    elif kind in "ui":
        allowed = f"a whole number from {int(info.min)} to {int(info.max)}"
    else:  # a float, or a complex whose parts are floats
        allowed = f"a number from {float(info.min):g} to {float(info.max):g}, inf or nan"
    if not isinstance(fill, numbers.Real):
        return f"fill {fill!r} is not a number: {name} images take {allowed}"
    if kind == "b":
        fits = fill in (0, 1)
    elif kind in "ui":
        whole = isinstance(fill, numbers.Integral) or float(fill).is_integer()
        fits = whole and info.min <= fill <= info.max
    else:
        fits = fill != fill or abs(fill) == math.inf or info.min <= fill <= info.max  # nan, inf or in range
    return None if fits else f"fill {fill!r} does not fit: {name} images take {allowed}"


def image_list(images: Sequence[Any], size_divisible: int = 1, fill: Union[int, float] = 0,
               channels_last: Optional[bool] = None) -> Tuple[Any, Any]:
    """An image field's list of B images of each their own size (``max_size``): ``[H_i, W_i,
    C]`` or ``[C, H_i, W_i]`` arrays as one ``[B, H, W, C]`` (or ``[B, C, H, W]``) array, H and
    W the largest rounded up to ``size_divisible`` (an integer from 1 to 8192), ``fill`` past
    each image (a value the images' dtype holds as it is), and the images' sizes as int64
    ``[B, 2]`` (height, width): what torchvision's ``ImageList`` holds (its detection models
    pad to 32). Torch tensors from tensors, numpy arrays from numpy arrays; a copy. The images
    agree in dtype and in C (1 to 4), last or first: which one is told by the shapes (the
    dimension all share), or by ``channels_last`` where both ends could be."""
    import numbers
    if len(images) == 0:
        raise ValueError("image_list() needs at least one image")
    if (not isinstance(size_divisible, numbers.Integral) or isinstance(size_divisible, bool)
            or not 1 <= size_divisible <= _MAX_SIZE_DIVISIBLE):
        raise ValueError(f"image_list(): size_divisible must be an integer from 1 to {_MAX_SIZE_DIVISIBLE} "
                         f"(a side is rounded up to a multiple of it; max_size is {_MAX_SIZE_DIVISIBLE} at "
                         f"most), got {size_divisible!r}")
    first = images[0]
    shapes = [tuple(int(d) for d in i.shape) for i in images]
    if any(len(shape) != 3 for shape in shapes):
        raise ValueError(f"image_list(): images are [H, W, C] or [C, H, W]; got shapes {shapes[:4]}")
    could_be = {end: all(shape[end] == shapes[0][end] and 1 <= shape[end] <= 4 for shape in shapes)
                for end in (-1, 0)}
    if channels_last is None:
        if could_be[-1] == could_be[0]:
            raise ValueError(f"image_list(): the channels could be {'either' if could_be[0] else 'neither'} "
                             f"end of shapes {shapes[:4]}: pass channels_last=True ([H, W, C]) "
                             "or False ([C, H, W])")
        channels_last = could_be[-1]
    end = -1 if channels_last else 0
    channels = shapes[0][end]
    if not 1 <= channels <= 4:
        raise ValueError(f"image_list(): image 0 is {_dtype_name(first.dtype)} {shapes[0]}: with "
                         f"channels_last={channels_last} its channels ({channels}, the "
                         f"{'last' if channels_last else 'first'} dimension) are not 1 to 4")
    for n, image in enumerate(images[1:], start=1):
        if shapes[n][end] != channels or image.dtype != first.dtype:
            raise ValueError(f"image_list(): image {n} is {_dtype_name(image.dtype)} {shapes[n]}, image 0 "
                             f"{_dtype_name(first.dtype)} {shapes[0]}; images of one list share their dtype "
                             f"and their channels (1 to 4, {'last' if channels_last else 'first'})")
    refusal = _fill_refusal(fill, first.dtype)
    if refusal is not None:
        raise ValueError(f"image_list(): {refusal}")
    sizes = [shape[:2] if channels_last else shape[1:] for shape in shapes]
    up = lambda n: -(-n // size_divisible) * size_divisible  # noqa: E731
    height, width = up(max(h for h, _ in sizes)), up(max(w for _, w in sizes))
    shape = (len(images), height, width, channels) if channels_last else (len(images), channels, height,
                                                                          width)
    import numpy
    if isinstance(first, numpy.ndarray):
        out, hw = numpy.full(shape, fill, dtype=first.dtype), numpy.asarray(sizes, dtype=numpy.int64)
    else:
        import torch
        out, hw = torch.full(shape, fill, dtype=first.dtype), torch.tensor(sizes, dtype=torch.int64)
    for n, (image, (h, w)) in enumerate(zip(images, sizes)):
        if channels_last:
            out[n, :h, :w] = image
        else:
            out[n, :, :h, :w] = image
    return out, hw


def padded(values: Sequence[Any], fill: Union[int, float] = 0) -> Tuple[Any, Any]:
    """A ragged field's list of B arrays (boxes ``[K_i, 4]``, per_box values ``[K_i]``,
    arrays whose first dimension varies) as one ``[B, max K_i, ...]`` array, ``fill`` past
    each sample's ``K_i``, and the ``K_i`` as int64 ``[B]``: torch tensors from tensors,
    numpy arrays from numpy arrays. A copy; the list's own arrays are views of the batch's
    slot. The arrays must agree in dtype and in every dimension but the first."""
    if len(values) == 0:
        raise ValueError("padded() needs at least one array to take its dtype and shape from")
    first = values[0]
    rest, dtype = tuple(first.shape[1:]), first.dtype
    for i, v in enumerate(values):
        if tuple(v.shape[1:]) != rest or v.dtype != dtype or len(v.shape) == 0:
            raise ValueError(f"padded(): array {i} is {v.dtype} {tuple(v.shape)}, array 0 {dtype} "
                             f"{tuple(first.shape)}; the arrays must agree in dtype and in every dimension "
                             "but the first")
    counts = [int(v.shape[0]) for v in values]
    shape = (len(values), max(counts), *rest)
    import numpy
    if isinstance(first, numpy.ndarray):
        out, sizes = numpy.full(shape, fill, dtype=dtype), numpy.asarray(counts, dtype=numpy.int64)
    else:
        import torch
        out, sizes = torch.full(shape, fill, dtype=dtype), torch.tensor(counts, dtype=torch.int64)
    for i, v in enumerate(values):
        out[i, :counts[i]] = v
    return out, sizes


# A file's name as the os module takes it: os.fsencode() reaches the file whatever its
# bytes (a str with surrogate escapes, bytes or an os.PathLike).
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

# The LoaderOptions keywords of Loader() and Client(), from the C++ options' table; their
# signatures below and in __init__.pyi spell them out for readers and type checkers, and
# python/tests/test_options.py checks that they are these.
_OPTION_NAMES = tuple(_forkfeed.option_keywords())


def _outside_parentheses(text: str) -> str:
    """`text` without what its parentheses hold, as the schema's parser splits entries."""
    out, depth = [], 0
    for c in text:
        depth += c == "("
        if depth == 0:
            out.append(c)
        depth -= c == ")" and depth > 0
    return "".join(out)


def _fields_spec(fields: Union[str, Mapping[str, str]]) -> str:
    """The schema text the C++ side parses (include/forkfeed/fields.h), from
    ``{"image": "jpg;png", "caption": "txt"}`` or the text itself."""
    if isinstance(fields, str):
        return fields
    if not isinstance(fields, Mapping):
        raise TypeError(f"fields must be a dict of field name to its member extensions, such as "
                        f"{{\"image\": \"jpg;png\", \"caption\": \"txt\"}}, got {type(fields).__name__}")
    if not fields:
        raise ValueError("fields is empty: name at least one field, or leave fields out for (images, labels)")
    for name, source in fields.items():
        if not isinstance(name, str) or not isinstance(source, str):
            raise TypeError(f"fields[{name!r}] must map a str name to a str of extensions (\"jpg;png\", "
                            f"\"txt\", \"json:label(class)\"), got {type(source).__name__}")
        # The text joins entries with ',' and names to sources with '=': a dict entry
        # holding either (or a name that trimming changes) would read back as another. A
        # kind's arguments may hold ',' inside their parentheses: "mask(fill=255, dtype=uint16)".
        if "," in name or "=" in name or name != name.strip() or "," in _outside_parentheses(source):
            raise ValueError(f"fields[{name!r}] = {source!r}: a field's name is letters, digits and '_' "
                             f"(\"caption\"), its extensions are separated by ';' (\"jpg;png\"); "
                             f"neither may hold ',' (nor the name '=' or surrounding spaces)")
    return ", ".join(f"{name}={source}" for name, source in fields.items())


def _transform_spec(transform: Any) -> str:
    """The transform text the C++ side parses: a pipeline, or a pipeline per image field
    ("image: ...; view2: ...", plan/field_transforms.h) from a dict of them."""
    if not isinstance(transform, Mapping):
        return transforms.pipeline_spec(transform)
    if not transform:
        raise ValueError("transform is an empty dict: give each image field its pipeline, "
                         "or leave transform out")
    sections = []
    for name, pipeline in transform.items():
        if not isinstance(name, str):
            raise TypeError(f"transform's keys are image field names, got {type(name).__name__}")
        try:
            sections.append(f"{name}: {transforms.pipeline_spec(pipeline)}")
        except (TypeError, ValueError) as e:
            raise type(e)(f"transform[{name!r}]: {e}") from None
    return "; ".join(sections)


class _Pass:
    """What Loader and Client share: a pass (epoch) of batches from a C++ source, its
    order, resume and lifetime. Subclasses open ``_impl`` in ``__init__``.

    Threads: ``next_batch()`` may be called from several threads, which then share the
    pass (each batch goes to one caller). The pass ends with one ``None``, to one caller:
    a call after it, from any thread, starts the next epoch, so the thread that gets it
    should stop the others. Iterating (``for``) is one thread's at a time:
    a second thread that starts iterating while another is raises ``forkfeed.Error``; a
    new ``for`` in the same thread starts the pass again, and the iterator it replaced
    raises if it is resumed.

    Processes: a Loader or Client belongs to the process that opened it. In the child
    of ``os.fork()`` every call raises ``forkfeed.Error``; the child's copy is let go
    without touching the parent's workers or stream."""

    _impl: Any = None  # None until opened, e.g. if __init__ raised
    _kind = "loader"  # names it in errors
    _fields = False  # opened with fields=: batches are dicts
    _presence = False  # missing="empty": the dicts hold "__present__"
    _iteration: Optional[Tuple[int, object]] = None  # (thread, claim) of the iterator now
    _iteration_lock = threading.Lock()  # guards _iteration of every instance; held briefly

    def _options_from(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        """The options dict the C++ side takes, from an ``__init__``'s arguments: rank
        and world_size defaulted, ``None`` left out; sets the output kind. Paths go as
        given: the extension takes str, bytes and os.PathLike as os.fsencode() does."""
        output = arguments["output"]
        if output not in ("torch", "numpy"):
            raise ValueError(f"output must be one of 'torch', 'numpy', got {output!r}")
        self._numpy = output == "numpy"
        if not self._numpy:
            import torch.utils.dlpack  # noqa: F401 (fails here, not at the first batch)
        options = {name: arguments[name] for name in _OPTION_NAMES}
        self._fields = options["fields"] is not None
        self._presence = options["missing"] == "empty"
        if self._fields:
            options["fields"] = _fields_spec(options["fields"])
        if options["transform"] is not None:  # a list of ops becomes the one string the C++ side parses
            options["transform"] = _transform_spec(options["transform"])
        if options["rank"] is None or options["world_size"] is None:
            default_rank, default_world_size = _default_rank_and_world_size()
            options["rank"] = default_rank if options["rank"] is None else options["rank"]
            options["world_size"] = (default_world_size if options["world_size"] is None
                                     else options["world_size"])
        self._options = {k: v for k, v in options.items() if v is not None}
        return self._options

    # Iteration ------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        """One pass. Like ``forkfeed::Loader::begin()``, starting it is a reset(): a
        pass part-way starts its epoch again, a finished one gives way to the next."""
        claim = self._claim_iteration()
        try:
            self._open().reset()
            while True:
                self._check_iteration(claim)
                batch = self.next_batch()
                if batch is None:
                    return
                yield batch.fields if self._fields else (batch.images, batch.labels)
        finally:
            with self._iteration_lock:
                if self._iteration is not None and self._iteration[1] is claim:
                    self._iteration = None

    def _claim_iteration(self) -> object:
        """Makes the calling thread's new iterator the pass's; refuses while another
        thread's iterator holds it."""
        me = threading.get_ident()
        with self._iteration_lock:
            if self._iteration is not None and self._iteration[0] != me:
                raise Error(f"this {self._kind} is being iterated by another thread; a pass belongs to one "
                            "iterator at a time (a second one would start the pass again under the first): "
                            "iterate it from one thread, or call next_batch() from several, which share the "
                            "pass, each batch going to one caller")
            claim = object()
            self._iteration = (me, claim)
            return claim

    def _check_iteration(self, claim: object) -> None:
        if self._iteration is None or self._iteration[1] is not claim:
            raise Error(f"this iterator over the {self._kind} was replaced by a newer one (a new `for` over "
                        "it starts the pass again); go on with the newer one")

    def __getitem__(self, index: Any) -> Any:
        raise TypeError(f"forkfeed.{type(self).__name__} is a data loader, not a dataset to index: iterate "
                        "it directly (`for images, labels in loader:`) instead of wrapping it in "
                        "torch.utils.data.DataLoader, whose work (workers, batching, shuffling) "
                        "it does itself")

    def __reduce__(self) -> Any:
        raise TypeError(f"a forkfeed.{type(self).__name__} cannot be pickled: it holds processes and shared "
                        "memory of the process that opened it; open one in each process, from the same "
                        "options (and a state_dict() to continue where another left off)")

    def next_batch(self) -> Union[Batch, FieldBatch, None]:
        """The next batch of the current pass with its dataset indices, or None once the
        pass is over (the call after that starts the following epoch): a ``Batch``, or a
        ``FieldBatch`` when opened with ``fields=``."""
        out = self._open().next(self._numpy, self._presence)
        if out is None:
            return None
        views, indices, epoch, index = out
        if self._fields:
            return FieldBatch(views, indices, epoch, index)
        return Batch(*views, indices, epoch, index)

    def __len__(self) -> int:
        """Batches in one pass (epoch) of this rank."""
        return self._open().batches_per_epoch()

    # Epochs and resume ----------------------------------------------------------------

    @property
    def epoch(self) -> int:
        """The epoch of the current pass."""
        return self._open().epoch()

    def set_epoch(self, epoch: int) -> None:
        """Starts a new pass over ``epoch``; batches prefetched for the old one are
        discarded."""
        self._open().set_epoch(epoch)

    def reset(self) -> None:
        """Starts a fresh pass: the current epoch again if it is part-way, the next if
        it is finished; nothing if no batch of the pass was delivered."""
        self._open().reset()

    def state_dict(self) -> Dict[str, Any]:
        """Where the pass stands, as a plain dict (json, pickle and torch.save take it).
        A new Loader or Client with the same order options, any worker count, resumes
        from it exactly with load_state_dict()."""
        return json.loads(self._open().state())

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Resumes from a state_dict() of a Loader or a Client. One from another dataset
        or from options that change the order raises ValueError naming the difference;
        the pass is then unchanged."""
        self._open().load_state(json.dumps(state_dict))

    # Lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        """Stops the workers (a Loader) or closes the stream (a Client) and unmaps the
        arena. Batches still held stay valid and unchanged until their last view dies.
        Idempotent."""
        if self._impl is not None:
            self._impl.close()

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._impl is None or self._impl.closed

    def __enter__(self) -> "_Pass":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"epoch={self.epoch}"
        return f"forkfeed.{type(self).__name__}({self._options!r}, {state})"

    def _open(self) -> Any:
        if self._impl is None:
            raise Error(f"the {self._kind} failed to open")
        return self._impl


class Loader(_Pass):
    """Batches of decoded, transformed images from an ImageFolder tree, a manifest or
    WebDataset tar shards.

    Every keyword is the ``forkfeed::LoaderOptions`` field of that name (see
    include/forkfeed/options.h); ``None`` leaves the C++ default. Exactly one of
    ``root`` (an ImageFolder directory), ``manifest`` (a file of "path<TAB>label"
    lines) and ``shards`` (tar shards: a brace pattern such as
    "/data/train-{000000..000146}.tar", a directory of .tar files or a file listing
    them; ``shard_label`` is "cls", "json" with ``shard_label_field``, or
    "class_folder"). ``fields`` (shards) reads several fields of each sample, see below.
    ``task_timeout`` is in seconds (0: never).
    ``rank``/``world_size`` default to torch.distributed's when it is initialised,
    else to $RANK/$WORLD_SIZE, else 0/1. ``output`` chooses torch tensors (the
    default) or numpy arrays.

    ``transform``: "train" (RandomResizedCrop(size) and a flip), "eval" (Resize and
    CenterCrop(size)), or a pipeline: a list of ``forkfeed.transforms`` ops, or the same as
    one string, e.g. "RandomResizedCrop(224), RandomHorizontalFlip(), Normalize()". Its ops
    are torchvision's, with their arguments; Normalize() makes the batches float32 (its mean
    and std default to ``mean`` and ``std``), and the last crop sets the size (``size`` may
    be left out). A bad op or argument raises ValueError naming it; torchvision's own
    transform objects raise TypeError (forkfeed's workers run C++, not them).

    Iterating gives one pass (epoch) of ``(images, labels)``: images uint8 or
    float32, NHWC or NCHW by ``layout`` ("nhwc", "nchw"; by default NHWC for uint8 and
    NCHW for float32), labels int64; both are views of the batch slot in shared memory,
    with no copy. The slot goes back to the pool when the last view dies; holding
    more than ``workers * prefetch + 1`` batches makes the next step raise
    ``forkfeed.Error``. Bad options raise ValueError (or TypeError for a wrong
    type) naming the option. Ctrl-C while waiting for a batch raises
    KeyboardInterrupt at once, and the loader stays usable.

    ``fields``: a dict of field name to the member extensions it is read from, as
    WebDataset names a sample's members ("000123.jpg", "000123.txt": key "000123",
    extensions "jpg", "txt"), alternatives separated by ";":
    ``{"image": "jpg;png", "caption": "txt", "label": "cls", "meta": "json", "emb": "npy"}``.
    A field's kind comes from its first extension: an image extension -> image, "cls" ->
    label, "txt" -> text, "npy" -> array, anything else -> bytes; or is written out:
    ``"json:label(class_id)"`` (an integer key of the .json member), ``"json:number(score)"``,
    ``"ids.txt:bytes"``, ``"seg.png:mask(fill=255)"`` (a segmentation mask that follows the
    first image field), ``"json:boxes(key=bbox, format=xywh)"`` (detection boxes that follow
    it) with ``"json:per_box(key=category_id)"`` beside them. An image field with the same
    extensions as another is a second view of the same image: read and decoded once,
    augmented with draws of its own.
    Iterating then gives one dict per batch, in the fields' order, ``"__key__"`` last:

    - image fields: tensors [B, H, W, C] or [B, C, H, W] as ``images`` above, zero-copy;
      ``transform`` may be one pipeline for every image field or a dict with each one's,
      ``{"image": [RandomResizedCrop(224)], "view2": "RandomResizedCrop(96)"}``; a
      transform whose size depends on the image (detection's, without a final crop or
      resize to one size) takes ``max_size``, the longest side a sample may have, and its
      field is a list of B views [H_i, W_i, C] (or [C, H_i, W_i]), each its own size, its
      masks [H_i, W_i] beside them; ``forkfeed.image_list()`` pads such a list into one
      tensor and the sizes;
    - mask fields: uint8 [B, H, W], zero-copy (``mask(dtype=uint16)``: int32, a copy, as
      torch has no uint16): the class ids of a PNG (grey or palette indices, never
      colours) or a 2-D .npy of the image's size, moved by the
      image's own draws (crops, nearest resizes, flips, nearest warps with ``fill``);
      colour ops, Normalize and RandomErasing leave them alone; AugMix is refused;
    - boxes fields: a list of B float32 tensors [K_i, 4], XYXY in the output image's
      pixels (read as ``format=xyxy``, ``xywh`` or ``cxcywh``, ``normalized=true`` for
      fractions of the image's size), moved by the image's draws as
      torchvision.transforms.v2 moves BoundingBoxes, clamped, and sanitised as
      v2.SanitizeBoundingBoxes (under 1 pixel wide or high, or NaN: dropped); per_box
      fields: a list of B tensors [K_i] (int64, or ``per_box(key=K, dtype=float32)``), the
      values of dropped boxes dropped with them; ``forkfeed.padded()`` makes such a list one
      padded array and the counts;
    - label fields: int64 [B]; number fields: float64 [B]; arrays (.npy) of one shape:
      [B, *shape] of their dtype, zero-copy; arrays whose shape varies: a list of B
      tensors (views; uint16 and uint32 arrays come widened to int32 and int64, a copy,
      as torch has no such types);
    - text fields: a list of B ``str``; bytes fields: a list of B ``bytes`` (a .json stays
      bytes: parse what you need);
    - ``"__key__"``: the samples' keys, a list of B ``str``.

    ``missing`` says what a sample lacking a field does: "error" (the default: bad data,
    named with its shard, key and field; ``on_error`` then fails or skips it), "skip" (left
    out, counted as skipped) or "empty" (an empty value: no bytes, a label -1, a number
    NaN, zeros in a dense array or image; and ``batch["__present__"][name]``, a bool
    tensor [B], False there). ``next_batch()``
    gives a ``FieldBatch(fields, indices, epoch, index)``.

    ``content_check`` says how much of each sample the dataset's identity reads while
    indexing (what a resumed state_dict and a fan-in's daemons compare): "windows" (the
    default: a file or member of up to 16 KiB whole, a larger one by its first and last
    4 KiB) or "full" (every byte: a read of the whole dataset at its first open).

    ``pool``: a ``forkfeed.WorkerPool`` whose workers this loader shares with the other
    loaders on it (``workers`` then sizes only its batch slots); without one a Loader
    starts workers of its own.
    """

    def __init__(
        self,
        root: Optional[PathLike] = None,
        *,
        manifest: Optional[PathLike] = None,
        shards: Optional[PathLike] = None,
        shard_label: Optional[str] = None,
        shard_label_field: Optional[str] = None,
        fields: Union[Mapping[str, str], str, None] = None,
        missing: Optional[str] = None,
        content_check: Optional[str] = None,
        batch_size: Optional[int] = None,
        workers: Optional[int] = None,
        prefetch: Optional[int] = None,
        weight: Optional[int] = None,
        transform: Union[str, Sequence[Union[transforms.Op, str]], Mapping[str, Any], None] = None,
        size: Optional[int] = None,
        max_size: Optional[int] = None,
        dtype: Optional[str] = None,
        layout: Optional[str] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        seed: Optional[int] = None,
        epoch: Optional[int] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shuffle: Optional[bool] = None,
        drop_last: Optional[bool] = None,
        on_error: Optional[str] = None,
        start_method: Optional[str] = None,
        fork_hazard: Optional[str] = None,
        max_worker_restarts: Optional[int] = None,
        task_timeout: Optional[float] = None,
        pin_memory_device: Optional[int] = None,
        max_pixels: Optional[int] = None,
        max_file_bytes: Optional[int] = None,
        log_level: Optional[str] = None,
        output: str = "torch",
        pool: Optional["WorkerPool"] = None,
    ) -> None:
        options = self._options_from(locals())
        if pool is not None and not isinstance(pool, WorkerPool):
            raise TypeError(f"pool must be a forkfeed.WorkerPool, got {type(pool).__name__}")
        self._impl = _forkfeed.Loader(options, None, None if pool is None else pool._impl)

    @property
    def classes(self) -> List[str]:
        """ImageFolder class names by label; empty for a manifest. Names that are not
        UTF-8 come as os.fsdecode() gives them (with surrogate escapes)."""
        return [os.fsdecode(name) for name in self._open().classes()]

    @property
    def num_classes(self) -> int:
        """How many classes: ``len(classes)``."""
        return len(self._open().classes())

    def stats(self) -> Dict[str, Any]:
        """Counters (delivered batches and samples, skipped samples, worker restarts,
        boxes that sanitising dropped), how the workers started ("fork" or "spawn"), the
        arena's size and slots, and whether the slots are pinned."""
        return self._open().stats()

    def shared_memory(self) -> Tuple[int, int]:
        """(address, size) of the shared memory arena in this process: every batch's
        images and labels lie inside it."""
        return self._open().shared_memory()


class WorkerPool:
    """Decode workers that several Loaders share, e.g. a training and a validation
    loader: ``pool = forkfeed.WorkerPool(workers=8)``, then
    ``forkfeed.Loader(train_dir, pool=pool)`` and ``forkfeed.Loader(val_dir, pool=pool)``.

    Each loader keeps its own order, state_dict and errors; the workers serve the loaders
    in equal shares of their time, sample by sample whatever their batch sizes and
    pipelines, and a share one leaves unused (the validation loader during training) goes
    to the others. ``workers`` defaults to the CPU count;
    ``start_method``, ``fork_hazard`` and ``log_level`` are as Loader's. The workers stop
    when the pool and every loader on it are gone."""

    def __init__(self, workers: Optional[int] = None, *, start_method: Optional[str] = None,
                 fork_hazard: Optional[str] = None, log_level: Optional[str] = None) -> None:
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool)):
            raise TypeError(f"workers must be an int, got {type(workers).__name__}")
        if workers is not None and not 1 <= workers <= 1024:
            raise ValueError(f"workers must be 1 to 1024, got {workers!r}")
        self._impl = _forkfeed.WorkerPool(workers or 0, start_method or "auto", fork_hazard or "warn",
                                          log_level or "")

    @property
    def workers(self) -> int:
        """How many decode workers the pool has."""
        return self._impl.workers

    @property
    def start_method(self) -> str:
        """How the workers started: "fork" or "spawn"."""
        return self._impl.start_method

    @property
    def loaders(self) -> int:
        """Loaders on the pool now."""
        return self._impl.loaders

    def __repr__(self) -> str:
        return f"forkfeed.WorkerPool(workers={self.workers}, start_method={self.start_method!r})"


class Client(_Pass):
    """A Loader run by the forkfeedd daemon: this process forks nothing and reads the
    daemon's batches in place, through shared memory.

    The same keywords, iteration, order, state_dict and errors as ``Loader`` — a state
    from either resumes the other — plus ``socket`` (forkfeedd's Unix socket, default
    ``default_socket_path()``), ``dataset`` (a dataset named in forkfeedd's config,
    instead of ``root``/``manifest``/``shards``) and ``connect_timeout`` (seconds to
    wait for the daemon to answer, default 10). With ``address`` ("HOST:PORT", a
    forkfeedd started with ``--listen``) the stream comes from another machine over UCX
    (RDMA where the fabric has it, else TCP): ``dataset`` must name one of its datasets,
    and ``token_file`` (default ``$FORKFEED_TOKEN_FILE``) holds the token it was started
    with; batches land in this process's own memory, which ``pin_memory_device``
    page-locks as a Loader's.

    ``address`` may also be a list of "HOST:PORT" (each daemon once, all serving the
    same files under the name ``dataset``, all with the token in ``token_file``): one
    stream drawn from all of them at once (a fan-in). Each batch is asked of one daemon,
    the next going to whichever has room, so each makes batches at its own speed; they
    come in the pass's order, and the stream, state_dict and resume are exactly one
    daemon's (or a Loader's). A daemon that dies or cannot be reached loses nothing: its
    batches are asked of the others, and it is tried again now and then; one that holds
    batches for ``overdue`` seconds (default 2) of waiting in next() without delivering
    one has them asked of the others too. One not open within ``connect_timeout`` (a hung
    node) is left out at connect and tried again later. Only when every daemon is lost
    does a call raise ``DaemonLostError``. ``daemons()`` says what each did;
    ``add_daemon()`` adds one. The stream shares the daemon's pool of workers: ``workers``
    only caps how many it keeps busy at once (its batch slots are ``workers * prefetch + 1``,
    as a Loader's, whatever the daemon's cap), ``start_method`` and ``log_level`` are the
    daemon's, a ``weight`` other than 1 is refused (forkfeedd's streams share its workers
    equally), and ``pin_memory_device`` is refused for a local daemon (its memory is the
    daemon's).
    If the daemon goes away, the next call raises an error saying so, never hangs:
    create a Client again from the last state_dict() to continue exactly. Ctrl-C while
    waiting for a batch raises KeyboardInterrupt at once, and the stream stays usable.
    """

    _kind = "client"

    def __init__(
        self,
        root: Optional[PathLike] = None,
        *,
        manifest: Optional[PathLike] = None,
        shards: Optional[PathLike] = None,
        shard_label: Optional[str] = None,
        shard_label_field: Optional[str] = None,
        fields: Union[Mapping[str, str], str, None] = None,
        missing: Optional[str] = None,
        content_check: Optional[str] = None,
        dataset: Optional[str] = None,
        socket: Optional[PathLike] = None,
        address: Union[str, Sequence[str], None] = None,
        token_file: Optional[PathLike] = None,
        connect_timeout: Optional[float] = None,
        overdue: Optional[float] = None,
        batch_size: Optional[int] = None,
        workers: Optional[int] = None,
        prefetch: Optional[int] = None,
        weight: Optional[int] = None,
        transform: Union[str, Sequence[Union[transforms.Op, str]], Mapping[str, Any], None] = None,
        size: Optional[int] = None,
        max_size: Optional[int] = None,
        dtype: Optional[str] = None,
        layout: Optional[str] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        seed: Optional[int] = None,
        epoch: Optional[int] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shuffle: Optional[bool] = None,
        drop_last: Optional[bool] = None,
        on_error: Optional[str] = None,
        start_method: Optional[str] = None,
        fork_hazard: Optional[str] = None,
        max_worker_restarts: Optional[int] = None,
        task_timeout: Optional[float] = None,
        pin_memory_device: Optional[int] = None,
        max_pixels: Optional[int] = None,
        max_file_bytes: Optional[int] = None,
        log_level: Optional[str] = None,
        output: str = "torch",
    ) -> None:
        options = self._options_from(locals())
        self._impl = _forkfeed.Client(options, socket=None if socket is None else os.fsencode(socket),
                                      dataset=dataset, connect_timeout=connect_timeout, address=address,
                                      token_file=None if token_file is None else os.fsencode(token_file),
                                      overdue=overdue)

    @property
    def classes(self) -> List[str]:
        """ImageFolder class names by label, as ``Loader.classes``; empty for a
        manifest. forkfeedd sends them when they fit in its reply (48 KiB of names;
        ImageNet's take 10); for more it sends only their count, ``num_classes``, and
        this raises ``forkfeed.Error`` saying so."""
        impl = self._open()
        names, count = impl.class_names(), impl.classes()
        if count and len(names) != count:
            raise Error(f"forkfeedd sent the number of classes ({count}) but not their names, which take "
                        "more than its reply holds; num_classes has the count, and a forkfeed.Loader over "
                        "the same dataset has the names")
        return [os.fsdecode(name) for name in names]

    @property
    def num_classes(self) -> int:
        """How many classes (ImageFolder class folders; 0 for a manifest)."""
        return self._open().classes()

    @property
    def workers(self) -> int:
        """Workers forkfeedd runs for this stream (at most the ``workers`` asked for)."""
        return self._open().workers()

    def stats(self) -> Dict[str, Any]:
        """The stream's counters, asked from forkfeedd: delivered batches and samples,
        skipped samples, worker restarts, the arena's size and slots, how the daemon's workers
        started (as Loader.stats()). Raises if the daemon is gone."""
        return self._open().stats()

    def daemons(self) -> List[Dict[str, Any]]:
        """What each remote forkfeedd of the stream did for it, in the order given (those
        added after): dicts with ``address``, ``up`` (connected now), ``stalled``
        (overdue: its batches are asked of the others too), ``batches`` (first copies it
        delivered), ``bytes`` (of their pixels), ``wait_ns`` and ``wait_s`` (from asking
        for a batch to its arrival, summed over its batches; time spent waiting in next()
        only, as ``overdue`` counts it), ``reassigned`` (its batches
        asked of the others when it was lost or overdue), ``duplicates`` (copies it
        delivered after another's, dropped), ``losses`` (times it was lost) and
        ``last_error`` (why it was last lost; empty if never). Empty for a local daemon."""
        return self._open().daemons()

    def add_daemon(self, address: str, token_file: Optional[PathLike] = None) -> None:
        """Adds a remote forkfeedd ("HOST:PORT", serving the same files under the name
        ``dataset``, with the token in ``token_file``, default the Client's own) to this
        remote stream: it joins the pass at once, waiting up to ``connect_timeout`` for
        it. If it cannot join, this raises and it is not added: ValueError for a local
        Client or a bad address, DaemonLostError when it cannot be reached or does not
        open the stream in time, forkfeed.Error when it refuses (token, dataset, other
        files)."""
        self._open().add_daemon(address, None if token_file is None else os.fsencode(token_file))
