"""The rank and world size a Loader, a Client and a batch mix take when given none; a module
of its own so that forkfeed and forkfeed.mixing both import it, and neither the other."""

from __future__ import annotations

import os
from typing import Tuple


def default_rank_and_world_size() -> Tuple[int, int]:
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
