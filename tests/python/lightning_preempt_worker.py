# SPDX-License-Identifier: Apache-2.0
"""A Lightning run that a test preempts with SIGTERM (tests/python/test_lightning_preempt.py).

  python3 lightning_preempt_worker.py train|resume ENDPOINT UNIX_SOCKET URL DEVICE

train: fits a small model for up to 4 epochs of 50 slow steps through WharfCheckpointIO over
ofi+shm. A SIGTERM handler installed before wharf is imported (as a job's preemption path is)
asks the run to stop; a callback then saves the checkpoint to URL through the trainer, so
through WharfCheckpointIO, and prints "SAVED <global_step> <weights sum>"; the fit ends and the
process exits 0. resume: fits from URL for one more epoch and prints
"RESUMED <global_step at start> <weights sum at start>"."""
import signal
import sys

STOP = {"term": False}


def _on_term(signum, frame):
    STOP["term"] = True


signal.signal(signal.SIGTERM, _on_term)

import torch  # noqa: E402

try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl

import wharf  # noqa: E402
from wharf.lightning import WharfCheckpointIO  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/lib")
from wharfd import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402


def wsum(m):
    return float(sum(p.detach().double().sum().item() for p in m.parameters()))


class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(),
                                       torch.nn.Linear(64, 1))

    def training_step(self, batch, idx):
        import time
        time.sleep(0.02)
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(400, 8, generator=g)
        ds = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
        return torch.utils.data.DataLoader(ds, batch_size=8)


class Preempt(pl.Callback):
    def __init__(self, url):
        self.url = url

    def on_train_batch_end(self, trainer, module, outputs, batch, idx):
        print(f"STEP {trainer.global_step}", flush=True)
        if STOP["term"] and not trainer.should_stop:
            trainer.save_checkpoint(self.url)
            trainer.strategy.checkpoint_io.wait() if hasattr(
                trainer.strategy.checkpoint_io, "wait") else None
            print(f"SAVED {trainer.global_step} {wsum(module):.9e}", flush=True)
            trainer.should_stop = True

    def on_train_start(self, trainer, module):
        print(f"RESUMED {trainer.global_step} {wsum(module):.9e}", flush=True)


def main():
    mode, endpoint, sock, url, device = sys.argv[1:6]
    c = wharf.Client(endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+shm",
                     unix_socket=sock)
    c.list_buckets()  # libwharf and its transports are loaded before the signal arrives
    accel = "gpu" if device == "cuda" else "cpu"
    t = pl.Trainer(max_epochs=4 if mode == "train" else 5, plugins=[WharfCheckpointIO(client=c)],
                   callbacks=[Preempt(url)],
                   accelerator=accel, devices=1, logger=False, enable_checkpointing=False,
                   enable_progress_bar=False, enable_model_summary=False,
                   default_root_dir="/tmp")
    torch.manual_seed(0)
    try:
        t.fit(Tiny(), ckpt_path=url if mode == "resume" else None)
    except Exception as e:
        # Lightning 2.x has a SIGTERM handler of its own (it calls the job's too) and then
        # ends the fit with SIGTERMException: after the save, that is the expected end.
        if type(e).__name__ != "SIGTERMException" or not STOP["term"]:
            raise
        print("FIT ENDED BY SIGTERMException", flush=True)
    print(f"END {t.global_step}", flush=True)
    c.close()


if __name__ == "__main__":
    main()
