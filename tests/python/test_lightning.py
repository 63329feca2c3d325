# SPDX-License-Identifier: Apache-2.0
"""wharf.lightning.WharfCheckpointIO: a 2-epoch Trainer.fit, a checkpoint saved to s3://,
and a resumed fit from it (epoch, global step, weights and optimizer state restored), and
async saves (async_=True, and Lightning's AsyncCheckpointIO over it), against a real wharfd. Skipped, with the reason, where Lightning is not installed."""
import pytest
import torch

try:
    import lightning.pytorch as pl
except ImportError:
    try:
        import pytorch_lightning as pl
    except ImportError as e:
        pl = None
        WHY = f"Lightning is not installed ({e})"

from conftest import make_client
from wharfd import unique_bucket

pytestmark = pytest.mark.skipif(pl is None, reason=WHY if pl is None else "")


def _model_cls():
    class Tiny(pl.LightningModule):
        def __init__(self, lr=0.05):
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                           torch.nn.Linear(16, 1))

        def training_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

        def train_dataloader(self):
            g = torch.Generator().manual_seed(0)
            x = torch.randn(64, 8, generator=g)
            ds = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
            return torch.utils.data.DataLoader(ds, batch_size=16)
    return Tiny


def trainer(io, epochs, tmp_path):
    return pl.Trainer(max_epochs=epochs, plugins=[io], accelerator="cpu", devices=1,
                      logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, default_root_dir=str(tmp_path))


def test_fit_save_resume(wharfd, tmp_path):
    from wharf.lightning import WharfCheckpointIO
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("pl")
    c.create_bucket(b)
    url = f"s3://{b}/run/epoch-2"
    Tiny = _model_cls()
    torch.manual_seed(0)
    m = Tiny()
    t = trainer(WharfCheckpointIO(client=c), 2, tmp_path)
    t.fit(m)
    t.save_checkpoint(url)
    assert c.exists(b, "run/epoch-2/model.safetensors.index.json")
    saved = {k: v.clone() for k, v in m.state_dict().items()}
    step = t.global_step
    assert step == 8

    # resume: a fresh model; weights, optimizer and loop state come from the checkpoint
    torch.manual_seed(1)
    m2 = Tiny()
    t2 = trainer(WharfCheckpointIO(client=c), 4, tmp_path)
    restored = {}

    class Probe(pl.Callback):
        def on_train_start(self, trainer, module):
            restored.update(epoch=trainer.current_epoch, step=trainer.global_step,
                            sd={k: v.clone() for k, v in module.state_dict().items()},
                            opt=trainer.optimizers[0].state_dict())
    t2.callbacks.append(Probe())
    t2.fit(m2, ckpt_path=url)
    assert restored["epoch"] == 2 and restored["step"] == step
    for k, v in saved.items():
        assert torch.equal(restored["sd"][k], v), k
    assert restored["opt"]["state"], "the Adam state was not restored"
    assert t2.global_step == 16 and t2.current_epoch == 4
    assert m2.hparams.lr == 0.05

    # loading directly and removing
    io = WharfCheckpointIO(client=c)
    ck = io.load_checkpoint(url)
    assert ck["global_step"] == step and "state_dict" in ck
    io.remove_checkpoint(url)
    assert not c.list(b, "run/epoch-2/")
    c.close()


@pytest.mark.parametrize("how", ["wharf-async", "lightning-async"])
def test_async_checkpoint_io(wharfd, tmp_path, how):
    """WharfCheckpointIO(async_=True), and Lightning's AsyncCheckpointIO over a
    WharfCheckpointIO: fit, save twice to one URL (an overwrite), teardown waits; the
    checkpoint loads with the weights it was saved with."""
    from wharf.lightning import WharfCheckpointIO
    try:
        from lightning.pytorch.plugins.io import AsyncCheckpointIO
    except ImportError:
        from pytorch_lightning.plugins.io import AsyncCheckpointIO
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("pla")
    c.create_bucket(b)
    url = f"s3://{b}/run/last"
    io = WharfCheckpointIO(client=c, async_=True) if how == "wharf-async" else \
        AsyncCheckpointIO(WharfCheckpointIO(client=c))
    Tiny = _model_cls()
    torch.manual_seed(0)
    m = Tiny()
    t = trainer(io, 1, tmp_path)
    t.fit(m)
    t.save_checkpoint(url)
    t.save_checkpoint(url)   # over the first, possibly while it is in flight
    saved = {k: v.clone() for k, v in m.state_dict().items()}
    with torch.no_grad():    # after the save returned: not in the checkpoint
        for p in m.parameters():
            p.add_(1.0)
    io.teardown()
    ck = WharfCheckpointIO(client=c).load_checkpoint(url)
    import sys
    # Lightning's AsyncCheckpointIO clones the tensors first only in recent versions
    snapshots = how == "wharf-async" or hasattr(sys.modules[AsyncCheckpointIO.__module__],
                                                "_clone_tensor")
    for k, v in saved.items():
        assert torch.equal(ck["state_dict"][k], v) or not snapshots, k
    assert set(ck["state_dict"]) == set(saved)
    names = {o.key for o in c.list(b, "run/last/")}
    index = __import__("json").loads(c.get(b, "run/last/model.safetensors.index.json"))
    assert names == {f"run/last/{f}" for f in index["weight_map"].values()} | \
        {"run/last/model.safetensors.index.json"}
    c.close()
