# SPDX-License-Identifier: Apache-2.0
"""Lightning through wharf's fsspec filesystem, with no wharf plugin at all: ModelCheckpoint
(dirpath wharf:// or s3:// with wharf.fsspec.serve_s3()) keeping save_top_k=2 plus
save_last, the Trainer's default_root_dir (its CSV logger appends metrics.csv), resuming a fit
from the last checkpoint's URL, and load_from_checkpoint of the best one, against a real
wharfd. Skipped, with the reason, where Lightning or fsspec is not installed."""
import importlib
import os

import pytest
import torch

fsspec = pytest.importorskip("fsspec")
try:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import ModelCheckpoint
    from lightning.pytorch.loggers import CSVLogger
except ImportError:
    try:
        import pytorch_lightning as pl
        from pytorch_lightning.callbacks import ModelCheckpoint
        from pytorch_lightning.loggers import CSVLogger
    except ImportError as e:
        pl = None
        WHY = f"Lightning is not installed ({e})"

import wharf.fsspec  # noqa: E402
from wharf.config import ENV_ORDER  # noqa: E402
from conftest import make_client  # noqa: E402
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket  # noqa: E402

pytestmark = pytest.mark.skipif(pl is None, reason=WHY if pl is None else "")

if pl is not None:
    class Tiny(pl.LightningModule):
        def __init__(self, lr=0.05):
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                           torch.nn.Linear(16, 1))

        def _data(self, seed):
            g = torch.Generator().manual_seed(seed)
            x = torch.randn(64, 8, generator=g)
            return torch.utils.data.DataLoader(
                torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=16)

        def training_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def validation_step(self, batch, _):
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

        def train_dataloader(self):
            return self._data(0)

        def val_dataloader(self):
            return self._data(1)


@pytest.fixture()
def env_client(wharfd, monkeypatch, tmp_path):
    """The environment a Lightning user sets: fsspec builds wharf.Client() from it."""
    for names in ENV_ORDER.values():
        for v in names:
            monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("WHARF_ENDPOINT", wharfd.endpoint)
    monkeypatch.setenv("WHARF_ACCESS_KEY", ACCESS_KEY)
    monkeypatch.setenv("WHARF_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("WHARF_PROVIDER", "ofi+shm")
    monkeypatch.setenv("WHARF_UNIX_SOCKET", wharfd.unix_socket)
    wharf.fsspec.WharfFileSystem.clear_instance_cache()
    yield
    wharf.fsspec.WharfFileSystem.clear_instance_cache()


@pytest.fixture(params=["wharf", "s3"])
def scheme(request):
    if request.param == "s3":
        reg = importlib.import_module("fsspec.registry")._registry
        before = dict(reg)
        wharf.fsspec.serve_s3()
        yield "s3"
        reg.clear()
        reg.update(before)
        assert fsspec.get_filesystem_class("wharf") is wharf.fsspec.WharfFileSystem
    else:
        yield "wharf"


def _trainer(root, callbacks, epochs, logger=True):
    return pl.Trainer(max_epochs=epochs, accelerator="cpu", devices=1, callbacks=callbacks,
                      default_root_dir=root, logger=CSVLogger(root) if logger else False,
                      enable_progress_bar=False, enable_model_summary=False,
                      num_sanity_val_steps=0)


def test_model_checkpoint_top_k_last_root_dir_and_load(wharfd, env_client, scheme):
    c = make_client(wharfd, "http")
    b = unique_bucket("plfs")
    c.create_bucket(b)
    fs = wharf.fsspec.WharfFileSystem(client=c, skip_instance_cache=True)
    ckdir, root = f"{scheme}://{b}/ckpts", f"{scheme}://{b}/root"
    torch.manual_seed(0)
    m = Tiny()
    cb = ModelCheckpoint(dirpath=ckdir, monitor="val_loss", save_top_k=2, save_last=True,
                         filename="e{epoch}-{val_loss:.4f}")
    t = _trainer(root, [cb], 4)
    t.fit(m)
    names = sorted(os.path.basename(n) for n in fs.ls(f"{b}/ckpts", detail=False))
    assert "last.ckpt" in names and len(names) == 3, names   # top 2 plus last
    kept = sorted(os.path.basename(p) for p in cb.best_k_models)
    assert sorted(n for n in names if n != "last.ckpt") == kept
    assert cb.best_model_path.startswith(f"{scheme}://{b}/ckpts/")
    # the logger wrote (and appended to) metrics.csv under default_root_dir
    logs = fs.find(f"{b}/root")
    assert any(p.endswith("metrics.csv") for p in logs), logs
    csv = fs.cat_file(next(p for p in logs if p.endswith("metrics.csv"))).decode()
    assert csv.count("\n") >= 5 and "val_loss" in csv.splitlines()[0]
    # load_from_checkpoint of the best, straight from its URL
    best = Tiny.load_from_checkpoint(cb.best_model_path)
    with fsspec.open(cb.best_model_path, "rb") as f:
        sd = torch.load(f, map_location="cpu", weights_only=False)["state_dict"]
    for k, v in best.state_dict().items():
        assert torch.equal(v, sd[k]), k
    # last.ckpt holds the final weights; a fit resumed from its URL goes on from epoch 4
    last = Tiny.load_from_checkpoint(f"{ckdir}/last.ckpt")
    for k, v in m.state_dict().items():
        assert torch.equal(v, last.state_dict()[k]), k
    # with no dirpath and no logger, ModelCheckpoint writes under default_root_dir itself
    t2 = _trainer(root, [ModelCheckpoint(save_last=True)], 5, logger=False)
    m2 = Tiny()
    t2.fit(m2, ckpt_path=f"{ckdir}/last.ckpt")
    assert t2.current_epoch == 5 and t2.global_step == 5 * 4
    assert fs.isfile(f"{b}/root/checkpoints/last.ckpt"), fs.find(f"{b}/root")
    c.close()
