# SPDX-License-Identifier: Apache-2.0
"""Shared by wharf.torch's modules: the default client, rank and world size, and the bits of
safetensors naming used by both checkpoints and Hugging Face loading."""
import threading
from typing import Optional, Tuple

import torch

from .. import _lib
from ..client import Client
from ..config import client_from_env, join as _join, parse_url  # noqa: F401

__all__ = ["INDEX_NAME", "set_default_client", "rank_world", "parse_url", "_join", "_client",
           "client_from_env"]
from ..errors import WharfError

INDEX_NAME = "model.safetensors.index.json"

_default_client = None
_default_lock = threading.Lock()


def set_default_client(client: Optional[Client]) -> None:
    """The client used when client= is not given (else one is built from WHARF_* variables)."""
    global _default_client
    _default_client = client


def _client(client: Optional[Client]) -> Client:
    global _default_client
    if client is not None:
        if not isinstance(client, Client):
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"client must be a wharf.Client, not {type(client).__name__}")
        return client
    with _default_lock:
        if _default_client is None:
            _default_client = client_from_env()
        return _default_client


def rank_world(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int, bool]:
    """(rank, world_size, whether torch.distributed's group is that world)."""
    dist = torch.distributed
    pg = dist.is_available() and dist.is_initialized()
    if rank is None and world_size is None and pg:
        return dist.get_rank(), dist.get_world_size(), True
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"rank {rank} is not in [0, world_size "
                         f"{world_size})")
    return rank, world_size, pg and dist.get_world_size() == world_size
