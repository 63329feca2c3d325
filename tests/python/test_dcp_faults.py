# SPDX-License-Identifier: Apache-2.0
"""A wharf error on one rank of a multi-rank dcp.save or dcp.load ends every rank, on its own
and within a bounded time, with the real cause: the wharf error's type and message (carried
to the other ranks inside DCP's CheckpointException), never a hang until the process
group's timeout nor a TypeError. Faults: a secret key the server refuses (on a worker rank
and on the coordinator), a bucket that does not exist, the server stopped in the middle of a
save, and a load from a stopped server. 2 to 3 gloo processes, CPU tensors, a real wharfd
(dcp_fault_worker.py). Needs torch.distributed.checkpoint (torch >= 2.2): skipped, with the
reason, on older torch."""
import os
import tempfile
import time

import pytest
import torch

try:
    import torch.distributed.checkpoint  # noqa: F401
    from torch.distributed.tensor import distribute_tensor  # noqa: F401 (DTensor is needed)
    import wharf.torch.dcp  # noqa: F401
    HAVE_DCP = True
    WHY = ""
except ImportError as e:
    HAVE_DCP = False
    WHY = f"torch {torch.__version__} has no usable torch.distributed.checkpoint ({e})"

from conftest import make_client
from wharfd import unique_bucket

pytestmark = pytest.mark.skipif(not HAVE_DCP, reason=WHY)
LIMIT = 90   # seconds for every rank to end; the ranks' process group waits 300


def errors(out):
    """{rank: (wharf type, message)} from each rank's ERR line; asserts every rank failed."""
    got = {}
    for r, (rc, text) in enumerate(out):
        lines = [ln for ln in text.splitlines() if ln.startswith(f"ERR {r} ")]
        assert rc == 3 and lines, f"rank {r}: rc {rc}, no ERR line\n{text[-3000:]}"
        _, _, rest = lines[0].partition(f"ERR {r} ")
        outer, wtype, msg = (x.strip() for x in rest.split("|", 2))
        assert "TypeError" not in outer, lines[0]
        got[r] = (wtype, msg)
    return got


def fault_env(srv, rank, fault, **extra):
    from test_dcp import env_for
    env = env_for(srv, "ofi+shm")
    env.update(DCP_BAD_RANK=str(rank), DCP_BAD=fault, **{k: str(v) for k, v in extra.items()})
    return env


def saved(srv, world=2):
    """A bucket with a good checkpoint saved by WORLD ranks; returns (client, bucket, url)."""
    from test_dcp import env_for, run_all
    c = make_client(srv, "http")
    b = unique_bucket("dcpf")
    c.create_bucket(b)
    url = f"s3://{b}/ck"
    out = run_all("save", url, world, env_for(srv, "ofi+shm"), limit=LIMIT)
    assert all(rc == 0 and "OK" in t for rc, t in out), out
    return c, b, url


@pytest.mark.parametrize("bad_rank", [0, 1])
def test_save_with_a_refused_key_ends_every_rank(wharfd, bad_rank):
    from test_dcp import run_all
    c = make_client(wharfd, "http")
    b = unique_bucket("dcpf")
    c.create_bucket(b)
    url = f"s3://{b}/ck"
    out = run_all("save", url, 2, fault_env(wharfd, bad_rank, "secret"), limit=LIMIT)
    for r, (wtype, msg) in errors(out).items():
        assert wtype == "AuthError" and b in msg, (r, wtype, msg)
    assert not c.exists(b, "ck/.metadata")
    c.close()


def test_save_to_a_missing_bucket_ends_every_rank(wharfd):
    from test_dcp import run_all
    c = make_client(wharfd, "http")
    b = unique_bucket("dcpf")
    c.create_bucket(b)
    out = run_all("save", f"s3://{b}/ck", 3, fault_env(wharfd, 1, "bucket"), limit=LIMIT)
    for r, (wtype, msg) in errors(out).items():
        assert wtype == "NotFoundError" and f"no-such-bucket-{b}" in msg, (r, wtype, msg)
    assert not c.exists(b, "ck/.metadata")
    c.close()


@pytest.mark.parametrize("fault,wtype", [("secret", "AuthError"), ("bucket", "NotFoundError")])
def test_load_fault_on_one_rank_ends_every_rank(wharfd, fault, wtype):
    from test_dcp import run_all
    c, b, url = saved(wharfd)
    out = run_all("load", url, 2, fault_env(wharfd, 1, fault), limit=LIMIT)
    for r, (got, msg) in errors(out).items():
        assert got == wtype and b in msg, (r, got, msg)
    c.close()


def test_server_stopped_mid_save_then_load(fresh_wharfd):
    """Rank 1 stalls after its first object; the server is stopped then. Every rank ends with
    the TransportError (the server unreachable), and so does a load from the stopped server;
    the checkpoint saved before under the same URL is still whole once the server is back."""
    from test_dcp import run_all
    srv = fresh_wharfd
    c, b, url = saved(srv)
    c.close()
    marker = os.path.join(tempfile.gettempdir(), f"wharf-stall-{b}")
    env = fault_env(srv, 1, "stall", DCP_MARKER=marker, DCP_STALL_S=3, DCP_SEED=1)

    def stop_when_stalled():
        deadline = time.monotonic() + LIMIT
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.path.exists(marker), "rank 1 never wrote its first object"
        srv.stop()

    port = int(srv.endpoint.rsplit(":", 1)[1])
    out = run_all("save", url, 2, env, limit=LIMIT, on_start=stop_when_stalled)
    for r, (wtype, msg) in errors(out).items():
        assert wtype in ("TransportError", "TimedOutError") and srv.endpoint in msg, \
            (r, wtype, msg)
    out = run_all("load", url, 2, env, limit=LIMIT)
    for r, (wtype, msg) in errors(out).items():
        assert wtype in ("TransportError", "TimedOutError") and srv.endpoint in msg, \
            (r, wtype, msg)
    srv.start(port=port)
    from test_dcp import env_for
    out = run_all("load", url, 2, env_for(srv, "ofi+shm"), limit=LIMIT)
    assert all(rc == 0 and "OK" in t for rc, t in out), out
