# SPDX-License-Identifier: Apache-2.0
"""What each rank of a wharf.torch.save writes and how the ranks meet: the names of a rank's
shards and manifest, the roll call that every rank of a process group answers (a save called
on some ranks only fails with the fix named instead of hanging), and the barrier."""
from __future__ import annotations

import os
import re
import threading
import time
from typing import Any, Callable, Dict, List

import torch

from .. import _lib
from ..errors import TimedOutError


def _barrier() -> None:
    """torch.distributed.barrier() (untyped in torch 1.13)."""
    barrier: Callable[[], Any] = torch.distributed.barrier
    barrier()


# Rank roll call of a save inside a process group (see _roll_call).
ROLL_CALL_TIMEOUT_S = 300.0


_roll_seq: Dict[str, int] = {}


_roll_lock = threading.Lock()


def _roll_call(url: str, rank: Any, world: int) -> None:
    """Every rank of the process group must call save(url): each sets a key of the group's
    store and waits, with a timeout, for the others' keys. A save called on some ranks only
    (`if rank == 0: wt.save(...)`) then fails with the fix named, instead of waiting forever
    in the barrier (or pairing with training's next collective). The timeout is
    WHARF_SAVE_RANK_TIMEOUT_S seconds (default 300): ranks may reach a save at different
    times."""
    import datetime
    import hashlib
    from torch.distributed import distributed_c10d as c10d
    try:
        default_store: Callable[[], Any] = c10d._get_default_store  # untyped in 1.13
        store = default_store()
    except (AttributeError, RuntimeError, ValueError):
        return  # no store to call the roll on: the barrier decides, as before
    try:
        timeout = float(os.environ.get("WHARF_SAVE_RANK_TIMEOUT_S", ROLL_CALL_TIMEOUT_S))
    except ValueError:
        timeout = ROLL_CALL_TIMEOUT_S
    with _roll_lock:
        n = _roll_seq[url] = _roll_seq.get(url, 0) + 1
    base = f"wharf.save/{hashlib.sha1(url.encode()).hexdigest()[:16]}/{n}"
    store.set(f"{base}/{rank}", "1")
    deadline = time.monotonic() + timeout
    missing: List[Any] = []
    for r in range(world):
        key = f"{base}/{r}"
        if missing:  # past the deadline already: only look
            try:
                if not store.check([key]):
                    missing.append(r)
            except (AttributeError, RuntimeError):
                missing.append(r)
            continue
        left = max(deadline - time.monotonic(), 0.001)
        try:
            store.wait([key], datetime.timedelta(seconds=left))
        except RuntimeError:
            missing.append(r)
    if missing:
        here = [r for r in range(world) if r not in missing]
        raise TimedOutError(_lib.WHARF_ERR_TIMEOUT, f"save {url}: rank(s) {missing} of the process "
                         f"group ({world} ranks) did not call save within {timeout:g} s; "
                         f"ranks {here} did. In a process group every rank calls save (each "
                         "with its own state); to save from one rank only, pass rank=0, "
                         "world_size=1 (and the other ranks do not call it). "
                         "WHARF_SAVE_RANK_TIMEOUT_S sets the wait.")


def _shard_name(rank: Any, world: int, i: int, n: int, gen: str) -> Any:
    if world == 1:
        return f"model-{gen}-{i + 1:05d}-of-{n:05d}.safetensors"
    return f"model-rank{rank:05d}-{gen}-{i + 1:05d}-of-{n:05d}.safetensors"


_GEN_SHARD = re.compile(r"^model-(rank\d{5}-)?[0-9a-f]{12}-\d{5}-of-\d{5}\.safetensors$")


def _is_shard(rel: str, gen: Any = False) -> Any:
    """A shard of a wharf.torch checkpoint (of any generation, also the names saves wrote
    before shards carried one): the only objects a save's cleanup ever deletes. gen=True:
    only names with a generation id (a Hugging Face shard has none)."""
    if gen:
        return bool(_GEN_SHARD.match(rel))
    return rel.startswith("model-") and rel.endswith(".safetensors") and "/" not in rel


def _manifest_name(rank: Any, world: int) -> Any:
    return f"rank-{rank:05d}-of-{world:05d}.json"
