# SPDX-License-Identifier: Apache-2.0
"""wharf.lightning.WharfCheckpointIO: a Lightning CheckpointIO plugin that saves and restores
s3:// checkpoints through wharf (wharf.torch.save / load: safetensors shards over RDMA, the
index written last), in the place of s3torchconnector's S3LightningCheckpoint.

    from lightning.pytorch import Trainer
    from wharf.lightning import WharfCheckpointIO
    trainer = Trainer(plugins=[WharfCheckpointIO(client=c)], ...)
    trainer.fit(model)
    trainer.save_checkpoint("s3://ckpt/run1/epoch-2")
    Trainer(plugins=[WharfCheckpointIO(client=c)]).fit(model, ckpt_path="s3://ckpt/run1/epoch-2")

Paths that are not s3:// URLs (ModelCheckpoint's local directory, say) go to Lightning's own
TorchCheckpointIO. A Lightning checkpoint holds objects besides tensors and plain values
(hyperparameters as AttributeDict, callback states): they are pickled into the checkpoint's
structure, so loading unpickles them, as torch.load of a Lightning .ckpt file does; load only
checkpoints you trust. Works with the `lightning` package or `pytorch_lightning`, whichever is
installed (lightning first).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

import torch

from .client import Client
from .config import is_url, parse_url
from .errors import MissingDependencyError, NotFoundError

try:
    from lightning.pytorch.plugins.io import CheckpointIO, TorchCheckpointIO
except ImportError:
    try:
        from pytorch_lightning.plugins.io import CheckpointIO, TorchCheckpointIO
    except ImportError as e:
        raise MissingDependencyError(
            f"wharf.lightning needs Lightning (the lightning or pytorch_lightning package, "
            f"2.x): {e}. Install it, or use wharf.torch.save/load directly") from None


# Lightning may be absent where mypy runs: CheckpointIO is then Any to it
class WharfCheckpointIO(CheckpointIO):  # type: ignore[misc]
    """CheckpointIO for s3:// paths. client: a wharf.Client (default: wharf.torch's default
    client, from the environment). transport, shard_size, progress: as wharf.torch.save.
    async_=True: save_checkpoint returns once wharf.torch.save_async has a snapshot of the
    checkpoint (training goes on while it uploads); the next save_checkpoint and teardown
    wait for it and raise its error, if it failed; staging_budget as save_async's. Lightning's
    own AsyncCheckpointIO over a WharfCheckpointIO() also works: it runs the whole save in a
    thread, on tensors recent Lightning clones into host memory first (older versions read
    the live tensors there); async_=True snapshots into wharf's reused pool instead."""

    def __init__(self, client: Optional[Client] = None, transport: str = "auto",
                 shard_size: Optional[int] = None, progress: bool = False, async_: bool = False,
                 staging_budget: Optional[float] = None) -> None:
        super().__init__()
        self.client = client
        self.transport = transport
        self.shard_size = shard_size
        self.progress = progress
        self.async_ = async_
        self.staging_budget = staging_budget
        self.last_report = None
        self._pending = None
        self._local = TorchCheckpointIO()

    def save_checkpoint(self, checkpoint: Any, path: Any, storage_options: Any = None) -> Any:
        path = str(path)
        if not is_url(path):
            return self._local.save_checkpoint(checkpoint, path, storage_options)
        import wharf.torch as wt
        self.wait()
        kw: Dict[str, Any] = {} if self.shard_size is None else {"shard_size": int(self.shard_size)}
        if self.async_:
            self._pending = wt.save(checkpoint, path, client=self.client,
                                    transport=self.transport, allow_pickle=True,
                                    progress=self.progress, async_=True,
                                    staging_budget=self.staging_budget, **kw)
            return
        self.last_report = wt.save(checkpoint, path, client=self.client,
                                   transport=self.transport, allow_pickle=True,
                                   progress=self.progress, **kw)

    def wait(self) -> None:
        """Waits for the async save in flight (async_=True), if any; raises its error."""
        fut, self._pending = self._pending, None
        if fut is not None:
            self.last_report = fut.result()

    def load_checkpoint(self, path: Any, map_location: Any = None, **kwargs: Any) -> Any:
        path = str(path)
        if not is_url(path):
            return self._local.load_checkpoint(path, map_location, **kwargs)
        import wharf.torch as wt
        device: Union[str, torch.device] = "cpu"
        if isinstance(map_location, (str, torch.device)):
            device = map_location
        return wt.load(path, client=self.client, device=device, transport=self.transport,
                       allow_pickle=True, progress=self.progress)

    def remove_checkpoint(self, path: Any) -> Any:
        path = str(path)
        if not is_url(path):
            return self._local.remove_checkpoint(path)
        from .torch._common import _client
        c = _client(self.client)
        bucket, key = parse_url(path)
        from .torch._common import INDEX_NAME
        try:  # the commit point first: a half-removed checkpoint reads as incomplete
            c.delete(bucket, f"{key}/{INDEX_NAME}")
        except NotFoundError:
            pass
        for o in c.list(bucket, key + "/"):
            try:
                c.delete(bucket, o.key)
            except NotFoundError:
                pass

    def teardown(self) -> None:
        self.wait()


__all__ = ["WharfCheckpointIO"]
