# Type stub for the forkfeed package (docstrings live in __init__.py).
import os
from typing import Any, Dict, Iterator, List, Literal, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from typing_extensions import Self

from forkfeed import transforms as transforms

PathLike = Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]

class Error(RuntimeError): ...
class BadDataError(Error): ...
class WorkerDiedError(Error): ...
class DaemonLostError(Error): ...

def fork_report() -> Dict[str, Any]: ...
def default_socket_path() -> str: ...
def padded(values: Sequence[Any], fill: Union[int, float] = ...) -> Tuple[Any, Any]: ...
def image_list(images: Sequence[Any], size_divisible: int = ..., fill: Union[int, float] = ...,
               channels_last: Optional[bool] = ...) -> Tuple[Any, Any]: ...

class Batch(NamedTuple):
    images: Any
    labels: Any
    indices: List[int]
    epoch: int
    index: int

class FieldBatch(NamedTuple):
    fields: Dict[str, Any]
    indices: List[int]
    epoch: int
    index: int

# A pipeline, or (a schema with several image fields) a pipeline per image field.
Transform = Union[Literal["train", "eval"], str, Sequence[Union[transforms.Op, str]],
                  Mapping[str, Union[str, Sequence[Union[transforms.Op, str]]]]]

class _Pass:
    # (images, labels) per batch; with fields=, a Dict[str, Any] per batch.
    def __iter__(self) -> Iterator[Any]: ...
    def next_batch(self) -> Union[Batch, FieldBatch, None]: ...
    def __len__(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    def set_epoch(self, epoch: int) -> None: ...
    def reset(self) -> None: ...
    def state_dict(self) -> Dict[str, Any]: ...
    def load_state_dict(self, state_dict: Dict[str, Any]) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc_info: object) -> None: ...

class WorkerPool:
    def __init__(
        self,
        workers: Optional[int] = None,
        *,
        start_method: Optional[Literal["auto", "fork", "spawn"]] = None,
        fork_hazard: Optional[Literal["warn", "error", "ignore"]] = None,
        log_level: Optional[str] = None,
    ) -> None: ...
    @property
    def workers(self) -> int: ...
    @property
    def start_method(self) -> str: ...
    @property
    def loaders(self) -> int: ...

class Loader(_Pass):
    def __init__(
        self,
        root: Optional[PathLike] = None,
        *,
        manifest: Optional[PathLike] = None,
        shards: Optional[PathLike] = None,
        shard_label: Optional[Literal["cls", "json", "class_folder"]] = None,
        shard_label_field: Optional[str] = None,
        fields: Union[Mapping[str, str], str, None] = None,
        missing: Optional[Literal["error", "skip", "empty"]] = None,
        content_check: Optional[Literal["windows", "full"]] = None,
        batch_size: Optional[int] = None,
        workers: Optional[int] = None,
        prefetch: Optional[int] = None,
        weight: Optional[int] = None,
        transform: Optional[Transform] = None,
        size: Optional[int] = None,
        max_size: Optional[int] = None,
        dtype: Optional[Literal["uint8", "float32"]] = None,
        layout: Optional[Literal["auto", "nhwc", "nchw"]] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        seed: Optional[int] = None,
        epoch: Optional[int] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shuffle: Optional[bool] = None,
        drop_last: Optional[bool] = None,
        on_error: Optional[Literal["fail", "skip"]] = None,
        start_method: Optional[Literal["auto", "fork", "spawn"]] = None,
        fork_hazard: Optional[Literal["warn", "error", "ignore"]] = None,
        max_worker_restarts: Optional[int] = None,
        task_timeout: Optional[float] = None,
        pin_memory_device: Optional[int] = None,
        max_pixels: Optional[int] = None,
        max_file_bytes: Optional[int] = None,
        log_level: Optional[str] = None,
        output: Literal["torch", "numpy"] = "torch",
        pool: Optional[WorkerPool] = None,
    ) -> None: ...
    @property
    def classes(self) -> List[str]: ...
    @property
    def num_classes(self) -> int: ...
    def stats(self) -> Dict[str, Any]: ...
    def shared_memory(self) -> Tuple[int, int]: ...

class Client(_Pass):
    def __init__(
        self,
        root: Optional[PathLike] = None,
        *,
        manifest: Optional[PathLike] = None,
        shards: Optional[PathLike] = None,
        shard_label: Optional[Literal["cls", "json", "class_folder"]] = None,
        shard_label_field: Optional[str] = None,
        fields: Union[Mapping[str, str], str, None] = None,
        missing: Optional[Literal["error", "skip", "empty"]] = None,
        content_check: Optional[Literal["windows", "full"]] = None,
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
        transform: Optional[Transform] = None,
        size: Optional[int] = None,
        max_size: Optional[int] = None,
        dtype: Optional[Literal["uint8", "float32"]] = None,
        layout: Optional[Literal["auto", "nhwc", "nchw"]] = None,
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        seed: Optional[int] = None,
        epoch: Optional[int] = None,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        shuffle: Optional[bool] = None,
        drop_last: Optional[bool] = None,
        on_error: Optional[Literal["fail", "skip"]] = None,
        start_method: Optional[Literal["auto", "fork", "spawn"]] = None,
        fork_hazard: Optional[Literal["warn", "error", "ignore"]] = None,
        max_worker_restarts: Optional[int] = None,
        task_timeout: Optional[float] = None,
        pin_memory_device: Optional[int] = None,
        max_pixels: Optional[int] = None,
        max_file_bytes: Optional[int] = None,
        log_level: Optional[str] = None,
        output: Literal["torch", "numpy"] = "torch",
    ) -> None: ...
    @property
    def classes(self) -> List[str]: ...
    @property
    def num_classes(self) -> int: ...
    @property
    def workers(self) -> int: ...
    def stats(self) -> Dict[str, Any]: ...
    def daemons(self) -> List[Dict[str, Any]]: ...
    def add_daemon(self, address: str, token_file: Optional[PathLike] = None) -> None: ...
