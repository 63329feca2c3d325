# SPDX-License-Identifier: Apache-2.0
"""A Lightning run preempted by SIGTERM mid-epoch saves through WharfCheckpointIO and resumes:
the job's own SIGTERM handler (installed before wharf is imported, as SLURM, Kubernetes and
torchelastic jobs do) still runs after libwharf and libfabric are loaded, the checkpoint lands
on a real wharfd over ofi+shm, and a new process resumes from it at the saved step with the
saved weights. On CUDA where a GPU is present. Skipped, with the reason, where Lightning is not
installed."""
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

try:
    import lightning.pytorch  # noqa: F401
    WHY = ""
except ImportError:
    try:
        import pytorch_lightning  # noqa: F401
        WHY = ""
    except ImportError as e:
        WHY = f"Lightning is not installed ({e})"

from wharfd import unique_bucket
from conftest import make_client

pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "lightning_preempt_worker.py")


def _run(mode, srv, url, device):
    return subprocess.Popen([sys.executable, WORKER, mode, srv.endpoint, srv.unix_socket, url,
                             device], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))


def _lines_until(p, prefix, limit_s):
    """Reads p's output until a line starts with prefix (bounded in time); returns it and all
    lines read."""
    seen, end = [], time.monotonic() + limit_s
    while time.monotonic() < end:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if line.startswith(prefix):
            return line.split(), seen
    return None, seen


def test_sigterm_mid_epoch_saves_and_resumes(wharfd):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("preempt")
    c.create_bucket(b)
    url = f"s3://{b}/run/last.ckpt"
    p = _run("train", wharfd, url, device)
    try:
        step, seen = _lines_until(p, "STEP 20", 120)
        assert step, "the run never reached step 20:\n" + "\n".join(seen[-30:])
        p.send_signal(signal.SIGTERM)
        saved, more = _lines_until(p, "SAVED", 60)
        seen += more
        assert saved, "no checkpoint saved after SIGTERM:\n" + "\n".join(seen[-30:])
        rest = p.communicate(timeout=60)[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, f"rc {p.returncode}:\n" + rest[-2000:]
    saved_step, saved_sum = int(saved[1]), float(saved[2])
    assert 20 <= saved_step < 200, "SIGTERM was not handled mid-epoch 1 or 2"
    r = _run("resume", wharfd, url, device)
    try:
        res, seen = _lines_until(r, "RESUMED", 120)
        out = r.communicate(timeout=120)[0]
    finally:
        if r.poll() is None:
            r.kill()
            r.wait()
    assert res, "resume did not start:\n" + "\n".join(seen[-30:]) + out[-2000:]
    assert r.returncode == 0, out[-2000:]
    assert int(res[1]) == saved_step
    assert float(res[2]) == pytest.approx(saved_sum, rel=1e-9, abs=1e-9)
    c.close()
