"""forkfeed: a forking image loader whose batches reach PyTorch without a copy.

    loader = forkfeed.Loader("/data/imagenet/train", batch_size=256, workers=8,
                             transform="train", size=224, dtype="float32", drop_last=True)
    for epoch in range(90):
        loader.set_epoch(epoch)
        for images, labels in loader:   # tensors whose memory is the batch slot
            ...

The package binds the C++ ``forkfeed::Loader``: options, order, resume and errors are
the C++ ones. Python adds only the defaults of ``rank`` and ``world_size``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from forkfeed import _forkfeed
from forkfeed._forkfeed import BadDataError, Error, WorkerDiedError, fork_report

__all__ = ["Loader", "Batch", "Error", "BadDataError", "WorkerDiedError", "fork_report"]


class Batch(NamedTuple):
    """One batch, as ``Loader.next_batch()`` returns it.

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


def _default_rank_and_world_size() -> Tuple[int, int]:
    """torch.distributed's rank and world size when it is initialised, else $RANK and
    $WORLD_SIZE (torchrun sets them), else 0 and 1."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    rank, world_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    try:
        return (int(rank) if rank else 0), (int(world_size) if world_size else 1)
    except ValueError:
        raise ValueError(f"RANK={rank!r} and WORLD_SIZE={world_size!r} must be integers "
                         "(or pass rank= and world_size=)") from None


class Loader:
    """Batches of decoded, transformed images from an ImageFolder tree or a manifest.

    Every keyword is the ``forkfeed::LoaderOptions`` field of that name (see
    include/forkfeed/options.h); ``None`` leaves the C++ default. Exactly one of
    ``root`` (an ImageFolder directory) and ``manifest`` (a file of
    "path<TAB>label" lines). ``task_timeout`` is in seconds (0: never).
    ``rank``/``world_size`` default to torch.distributed's when it is initialised,
    else to $RANK/$WORLD_SIZE, else 0/1. ``output`` chooses torch tensors (the
    default) or numpy arrays.

    Iterating gives one pass (epoch) of ``(images, labels)``: images uint8 NHWC or
    float32 NCHW, labels int64; both are views of the batch slot in shared memory,
    with no copy. The slot goes back to the pool when the last view dies; holding
    more than ``workers * prefetch + 1`` batches makes the next step raise
    ``forkfeed.Error``. Bad options raise ValueError (or TypeError for a wrong
    type) naming the option. Ctrl-C while waiting for a batch raises
    KeyboardInterrupt at once, and the loader stays usable.
    """

    _impl: Optional[_forkfeed.Loader] = None  # None until opened, e.g. if __init__ raised

    def __init__(
        self,
        root: Optional[os.PathLike | str] = None,
        *,
        manifest: Optional[os.PathLike | str] = None,
        batch_size: Optional[int] = None,
        workers: Optional[int] = None,
        prefetch: Optional[int] = None,
        transform: Optional[str] = None,
        size: Optional[int] = None,
        dtype: Optional[str] = None,
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
        if output not in ("torch", "numpy"):
            raise ValueError(f"output must be one of 'torch', 'numpy', got {output!r}")
        self._numpy = output == "numpy"
        if not self._numpy:
            import torch.utils.dlpack  # noqa: F401 (fails here, not at the first batch)
        if rank is None or world_size is None:
            default_rank, default_world_size = _default_rank_and_world_size()
            rank = default_rank if rank is None else rank
            world_size = default_world_size if world_size is None else world_size
        options = {
            "root": None if root is None else os.fspath(root),
            "manifest": None if manifest is None else os.fspath(manifest),
            "batch_size": batch_size, "workers": workers, "prefetch": prefetch,
            "transform": transform, "size": size, "dtype": dtype, "mean": mean, "std": std,
            "seed": seed, "epoch": epoch, "rank": rank, "world_size": world_size,
            "shuffle": shuffle, "drop_last": drop_last, "on_error": on_error,
            "start_method": start_method, "fork_hazard": fork_hazard,
            "max_worker_restarts": max_worker_restarts, "task_timeout": task_timeout,
            "pin_memory_device": pin_memory_device, "max_pixels": max_pixels,
            "max_file_bytes": max_file_bytes, "log_level": log_level,
        }
        self._options = {k: v for k, v in options.items() if v is not None}
        self._impl = _forkfeed.Loader(self._options)

    # Iteration ------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Tuple[Any, Any]]:
        """One pass. Like ``forkfeed::Loader::begin()``, starting it is a reset(): a
        pass part-way starts its epoch again, a finished one gives way to the next."""
        self._open().reset()
        while True:
            batch = self.next_batch()
            if batch is None:
                return
            yield batch.images, batch.labels

    def next_batch(self) -> Optional[Batch]:
        """The next batch of the current pass with its dataset indices, or None once the
        pass is over (the call after that starts the following epoch)."""
        out = self._open().next(self._numpy)
        if out is None:
            return None
        images, labels, indices, epoch, index = out
        if not self._numpy:
            from torch.utils.dlpack import from_dlpack

            images, labels = from_dlpack(images), from_dlpack(labels)
        return Batch(images, labels, indices, epoch, index)

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
        """Where the loader stands, as a plain dict (json, pickle and torch.save take
        it). A new Loader with the same order options, any worker count, resumes from
        it exactly with load_state_dict()."""
        return json.loads(self._open().state())

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Resumes from a state_dict(). One from another dataset or from options that
        change the order raises ValueError naming the difference; the loader is then
        unchanged."""
        self._open().load_state(json.dumps(state_dict))

    # What it is -----------------------------------------------------------------------

    @property
    def classes(self) -> List[str]:
        """ImageFolder class names by label; empty for a manifest."""
        return self._open().classes()

    def stats(self) -> Dict[str, Any]:
        """Counters (delivered batches and samples, skipped samples, worker restarts),
        how the workers started ("fork" or "spawn"), the arena's size and slots, and
        whether the slots are pinned."""
        return self._open().stats()

    def shared_memory(self) -> Tuple[int, int]:
        """(address, size) of the shared memory arena in this process: every batch's
        images and labels lie inside it."""
        return self._open().shared_memory()

    # Lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        """Stops and reaps the workers and unmaps the arena. Batches still held stay
        valid and unchanged until their last view dies. Idempotent."""
        if self._impl is not None:
            self._impl.close()

    @property
    def closed(self) -> bool:
        """Whether close() was called."""
        return self._impl is None or self._impl.closed

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"epoch={self.epoch}"
        return f"forkfeed.Loader({self._options!r}, {state})"

    def _open(self) -> "_forkfeed.Loader":
        if self._impl is None:
            raise Error("the loader failed to open")
        return self._impl
