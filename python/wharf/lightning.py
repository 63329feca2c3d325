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
import torch

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


class WharfCheckpointIO(CheckpointIO):
    """CheckpointIO for s3:// paths. client: a wharf.Client (default: wharf.torch's default
    client, from the environment). transport, shard_size, progress: as wharf.torch.save."""

    def __init__(self, client=None, transport="auto", shard_size=None, progress=False):
        super().__init__()
        self.client = client
        self.transport = transport
        self.shard_size = shard_size
        self.progress = progress
        self._local = TorchCheckpointIO()

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        path = str(path)
        if not is_url(path):
            return self._local.save_checkpoint(checkpoint, path, storage_options)
        import wharf.torch as wt
        kw = {} if self.shard_size is None else {"shard_size": int(self.shard_size)}
        wt.save(checkpoint, path, client=self.client, transport=self.transport,
                allow_pickle=True, progress=self.progress, **kw)

    def load_checkpoint(self, path, map_location=None, **kwargs):
        path = str(path)
        if not is_url(path):
            return self._local.load_checkpoint(path, map_location, **kwargs)
        import wharf.torch as wt
        device = "cpu"
        if isinstance(map_location, (str, torch.device)):
            device = map_location
        return wt.load(path, client=self.client, device=device, transport=self.transport,
                       allow_pickle=True, progress=self.progress)

    def remove_checkpoint(self, path):
        path = str(path)
        if not is_url(path):
            return self._local.remove_checkpoint(path)
        from .torch._common import _client
        c = _client(self.client)
        bucket, key = parse_url(path)
        from .torch.checkpoint import INDEX_NAME
        try:  # the commit point first: a half-removed checkpoint reads as incomplete
            c.delete(bucket, f"{key}/{INDEX_NAME}")
        except NotFoundError:
            pass
        for o in c.list(bucket, key + "/"):
            try:
                c.delete(bucket, o.key)
            except NotFoundError:
                pass

    def teardown(self):
        pass


__all__ = ["WharfCheckpointIO"]
