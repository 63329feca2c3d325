#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""B3: ResNet-50 (torchvision) training steps fed from wharf, three data paths.

The benchmark makes its own synthetic ImageNet-shaped data (224x224x3 uint8 images, smooth
random patterns plus noise, so that JPEG sizes are ImageNet-like) and uploads it twice:
  raw-rdma   raw uint8 NHWC shards (.raw + .json, the GPU-native layout), RawImageShards over
             RDMA (ofi+shm), batches copied to the GPU and normalised there
  raw-http   the same shards over HTTP (libwharf, same prefetch and concurrency)
  jpeg-http  JPEG tar shards (.tar + .index.json), JpegTarShards over HTTP, decoded on the CPU
             (torchvision.io.decode_jpeg) in DataLoader workers, then to the GPU
Each arm runs --steps training steps (bf16 autocast, channels_last, SGD with momentum) over
the whole data set. Repeats are paired: every repeat runs all arms, the order rotated by one
each repeat. Per cell: wall time, images/s, storage wait (time blocked on the next batch),
compute (forward+backward+step, synchronised), host CPU seconds (all processes, from
/proc/stat), client and server CPU. The raw-rdma cell is gated on the server's RDMA read
bytes (>= 0.99 of the bytes it fetched). Verified, for every image of every step: raw arms,
the image ids in order and per-image byte sums against the generated data; the JPEG arm,
distinct ids, the decoded shape, and the decoded mean within 4 of the original's.

  python3 bench/py/train.py [--steps 30] [--batch 256] [--repeats 4] [--workers 8]
"""
import argparse
import io
import json
import sys
import tarfile
import time

import common as cm
import torch

from wharf.torch import JpegTarShards, RawImageShards

H = W = 224
C = 3
ARMS = ["raw-rdma", "raw-http", "jpeg-http"]


def make_images(lo, hi):
    """Images lo..hi-1: smooth random patterns plus noise (uint8 NHWC), each from its id."""
    g = torch.Generator().manual_seed(lo)
    n = hi - lo
    low = torch.rand(n, 3, 7, 7, generator=g) * 255
    img = torch.nn.functional.interpolate(low, size=(H, W), mode="bicubic", align_corners=False)
    img = img + torch.randn(n, 3, H, W, generator=g) * 6
    return img.clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).contiguous()


def encode(imgs):
    """JPEG bytes (quality 90) of NHWC uint8 images: on the GPU where torchvision can, else
    torchvision or PIL on the CPU (PIL: for a smoke run on a machine without torchvision)."""
    import concurrent.futures as cf
    try:
        import torchvision
    except ImportError:
        torchvision = None
    if torchvision is None:
        from PIL import Image

        def pil(im):
            b = io.BytesIO()
            Image.fromarray(im.numpy()).save(b, format="JPEG", quality=90)
            return b.getvalue()
        with cf.ThreadPoolExecutor(4) as ex:
            return list(ex.map(pil, imgs))
    chw = [im.permute(2, 0, 1).contiguous() for im in imgs]
    if torch.cuda.is_available():
        try:
            out = torchvision.io.encode_jpeg([t.cuda() for t in chw], quality=90)
            return [o.cpu().numpy().tobytes() for o in out]
        except Exception as e:
            print(f"GPU JPEG encoding failed ({e}); encoding on the CPU", file=sys.stderr)
    with cf.ThreadPoolExecutor(8) as ex:
        return list(ex.map(lambda t: torchvision.io.encode_jpeg(t, quality=90)
                           .numpy().tobytes(), chw))


def decode(data):
    """uint8 CHW of JPEG bytes (torchvision, else PIL)."""
    try:
        import torchvision
    except ImportError:
        import numpy as np
        from PIL import Image
        im = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        return torch.from_numpy(im.copy()).permute(2, 0, 1).contiguous()
    return torchvision.io.decode_jpeg(torch.frombuffer(bytearray(data), dtype=torch.uint8))


def upload(c, bucket, shards, per):
    """shards x per images as raw shards and as JPEG tar shards. The label of image i is i
    (its id: the training class is i % 1000), so that every arm's batches can be checked
    against the images they came from. Returns (per-image byte sums, per-image means, JPEG
    bytes)."""
    sums, means, jpeg_bytes = [], [], 0
    for s in range(shards):
        lo, hi = s * per, (s + 1) * per
        part = make_images(lo, hi)
        sums.append(part.view(per, -1).sum(1, dtype=torch.int64))
        means.append(part.view(per, -1).float().mean(1))
        name = f"shard-{s:05d}"
        c.put_from(bucket, f"raw/{name}.raw", part)
        c.put(bucket, f"raw/{name}.json", json.dumps(
            {"samples": per, "height": H, "width": W, "channels": C, "dtype": "uint8",
             "sample_bytes": H * W * C, "labels": list(range(lo, hi)),
             "keys": [f"{i:08d}" for i in range(lo, hi)], "synthetic": True}).encode())
        buf = io.BytesIO()
        samples = []
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
            for i, jpg in zip(range(lo, hi), encode(part)):
                for ext, data in (("jpg", jpg), ("cls", str(i % 1000).encode())):
                    ti = tarfile.TarInfo(f"{i:08d}.{ext}")
                    ti.size = len(data)
                    data_at = tf.offset + tarfile.BLOCKSIZE   # one USTAR header block
                    tf.addfile(ti, io.BytesIO(data))
                    if ext == "jpg":
                        samples.append({"key": f"{i:08d}", "offset": data_at,
                                        "length": len(data), "label": i})
                jpeg_bytes += len(jpg)
        data = buf.getvalue()
        c.put(bucket, f"jpeg/{name}.tar", data)
        c.put(bucket, f"jpeg/{name}.index.json", json.dumps(
            {"shard": f"{name}.tar", "size": len(data), "samples": samples}).encode())
    return torch.cat(sums), torch.cat(means), jpeg_bytes


class Decoded(torch.utils.data.IterableDataset):
    """JPEG bytes -> uint8 CHW tensors, in whichever DataLoader worker iterates."""

    def __init__(self, ds):
        self.ds = ds

    def __iter__(self):
        for data, label in self.ds:
            yield decode(data), label


def train_step(model, opt, x, y, loss_fn):
    cuda = x.is_cuda
    with torch.autocast("cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
        loss = loss_fn(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if cuda:
        torch.cuda.synchronize()
    return loss


def make_model(name, device):
    if name == "resnet50":
        import torchvision
        m = torchvision.models.resnet50()
    else:  # a small net, for a smoke run of the data paths on a machine without a GPU
        m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, stride=4), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(8, 1000))
    return m.to(device).to(memory_format=torch.channels_last)


_loaders = {}


def batches(arm, clients, bucket, a):
    """An iterator of (uint8 images on the host, NHWC or NCHW, ids) and a stats getter. The
    JPEG arm's DataLoader keeps its workers between runs (persistent_workers), as a training
    job keeps them between epochs: their start is paid in the warm-up, not in a timed run."""
    if arm.startswith("raw"):
        c = clients["rdma" if arm == "raw-rdma" else "http"]
        ds = RawImageShards(f"s3://{bucket}/raw/", client=c, batch_size=a.batch, copy=False,
                            num_buffers=3, buffer_bytes=a.batch * H * W * C * 2,
                            fetch_workers=2, drop_last=True)
        ds.pin_memory = torch.cuda.is_available()
        return iter(ds), (lambda: ds.last_stats), "nhwc"
    if arm not in _loaders:
        ds = JpegTarShards(f"s3://{bucket}/jpeg/", client=clients["http"],
                           buffer_bytes=4 << 20, fetch_workers=1, num_buffers=2)
        _loaders[arm] = torch.utils.data.DataLoader(
            Decoded(ds), batch_size=a.batch, num_workers=a.workers,
            pin_memory=torch.cuda.is_available(),
            drop_last=True, prefetch_factor=4, persistent_workers=True)
    return iter(_loaders[arm]), (lambda: None), "nchw"


def run_arm(arm, clients, bucket, a, model, opt, mean, std, want_sums, want_means, srv,
            steps=None):
    dev = torch.device(a.device)
    steps = steps or a.steps
    it, stats, layout = batches(arm, clients, bucket, a)
    wait = compute = 0.0
    sums, labs, shapes_ok = [], [], True
    loss_fn = torch.nn.CrossEntropyLoss()
    with cm.Window(srv) as w:
        for step in range(steps):
            t0 = time.perf_counter()
            x, y = next(it)
            t1 = time.perf_counter()
            x = x.to(dev, non_blocking=True)
            ids = torch.as_tensor(y).to(dev, non_blocking=True)
            y = ids % 1000
            if layout == "nhwc":
                sums.append(x.view(x.shape[0], -1).sum(1, dtype=torch.int64))
                x = x.permute(0, 3, 1, 2)
            else:
                shapes_ok &= tuple(x.shape[1:]) == (C, H, W)
                sums.append(x.reshape(x.shape[0], -1).float().mean(1))
            labs.append(ids)
            x = x.float().sub_(mean).div_(std).contiguous(memory_format=torch.channels_last)
            loss = train_step(model, opt, x, y, loss_fn)
            t2 = time.perf_counter()
            wait += t1 - t0
            compute += t2 - t1
        del it
    n = steps * a.batch
    st = stats()
    cell = {"arm": arm, "steps": steps, "images": n, "wall_s": w.wall_s,
            "images_per_s": n / w.wall_s, "storage_wait_s": wait, "compute_s": compute,
            "host_cpu_s": w.host_cpu_s, "client_cpu_s": w.client_cpu_s,
            "server_cpu_s": w.server_cpu_s, "loss": float(loss),
            "rdma_witness": w.witness()}
    nbytes = st["bytes"] if st else None
    if st:
        cell.update(bytes=nbytes, transports=sorted(st["transports"]))
    if arm == "raw-rdma":
        err = w.gate("rdma", "get", nbytes)
        if err:
            cell["error"] = err
    ids = torch.cat(labs).cpu()
    got = torch.cat(sums).cpu()
    if layout == "nhwc":  # in order, and every byte (per-image sums)
        ok = torch.equal(ids, torch.arange(n)) and torch.equal(got, want_sums[:n])
        what = "image ids in order and per-image byte sums"
        worst = None
    else:  # DataLoader workers interleave: distinct ids; decoded means near the originals
        worst = float((got - want_means[ids]).abs().max())
        ok = len(set(ids.tolist())) == n and worst < 4.0 and shapes_ok
        what = "distinct image ids, decoded shapes, per-image mean within 4 of the original"
    cell["verified"] = {"ok": bool(ok), "images_checked": n, "what": what,
                        "worst_mean_diff": worst}
    return cell


def _version(mod):
    try:
        return __import__(mod).__version__
    except ImportError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    cm.common_args(ap)
    ap.set_defaults(repeats=4)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--workers", type=int, default=8, help="DataLoader workers (JPEG arm)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--model", default="resnet50", help="resnet50, or tiny (a smoke run)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    arms = a.arms.split(",")
    lim = cm.limits(a)
    srv = cm.start_server(a)
    try:
        clients = {"rdma": cm.make_client(srv, "rdma", a.concurrency),
                   "http": cm.make_client(srv, "http", a.concurrency)}
        bucket = "bench-train"
        clients["http"].create_bucket(bucket)
        n = a.steps * a.batch
        # whole batches per shard, and enough that each JPEG worker's last partial batch
        # (dropped) still leaves a.steps batches
        per = -(-(a.steps + a.workers + 1) // a.shards) * a.batch
        t = time.perf_counter()
        want_sums, want_means, jpeg_bytes = upload(clients["http"], bucket, a.shards, per)
        total = a.shards * per
        prep_s = time.perf_counter() - t
        print(f"data: {total} images, raw {total * H * W * C / 1e9:.2f} GB, jpeg "
              f"{jpeg_bytes / 1e9:.3f} GB, made and uploaded in {prep_s:.1f} s",
              file=sys.stderr, flush=True)
        torch.backends.cudnn.benchmark = True
        dev = torch.device(a.device)
        model = make_model(a.model, dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        mean = torch.tensor([123.7, 116.3, 103.5], device=dev).view(1, 3, 1, 1)
        std = torch.tensor([58.4, 57.1, 57.4], device=dev).view(1, 3, 1, 1)
        # warm-up on device data: cudnn autotuning is not charged to any arm
        xw = torch.randn(a.batch, 3, H, W, device=dev).contiguous(
            memory_format=torch.channels_last)
        yw = torch.randint(0, 1000, (a.batch,), device=dev)
        ce = torch.nn.CrossEntropyLoss()
        for _ in range(5):
            train_step(model, opt, xw, yw, ce)
        t = time.perf_counter()
        for _ in range(10):
            train_step(model, opt, xw, yw, ce)
        compute_only = a.batch * 10 / (time.perf_counter() - t)
        print(f"compute only (device data): {compute_only:.0f} images/s", file=sys.stderr)
        for arm in arms:  # untimed: first touches, the JPEG workers' start
            run_arm(arm, clients, bucket, a, model, opt, mean, std, want_sums, want_means,
                    srv, steps=3)
        inc = cm.Incremental(a, "train")

        def report(complete):
            results = {}
            for arm in arms:
                ok = [x for x in runs if x["arm"] == arm and "error" not in x]
                results[arm] = {k: cm.bl.summary([x[k] for x in ok])
                                for k in ("wall_s", "images_per_s", "storage_wait_s", "compute_s",
                                          "host_cpu_s", "client_cpu_s", "server_cpu_s")}
                results[arm]["failures"] = [x["error"] for x in runs
                                            if x["arm"] == arm and "error" in x]
            ratios = {}

            def med(arm, k="images_per_s"):
                v = results.get(arm, {}).get(k, {})
                return v.get("median") if v.get("n") else None
            if med("raw-http") and med("jpeg-http"):
                ratios["layout_raw_http_vs_jpeg_http"] = med("raw-http") / med("jpeg-http")
            if med("raw-rdma") and med("raw-http"):
                ratios["transport_raw_rdma_vs_raw_http"] = med("raw-rdma") / med("raw-http")
            if med("raw-rdma") and med("jpeg-http"):
                ratios["raw_rdma_vs_jpeg_http"] = med("raw-rdma") / med("jpeg-http")
            root = {"params": {"steps": a.steps, "batch": a.batch, "images_per_run": n,
                               "images_stored": total, "shards": a.shards,
                               "image_shape": [H, W, C], "raw_bytes_stored": total * H * W * C,
                               "jpeg_bytes": jpeg_bytes, "workers": a.workers,
                               "concurrency": a.concurrency, "repeats": a.repeats, "arms": arms,
                               "model": a.model, "device": a.device,
                               "precision": "bf16 autocast" if a.device == "cuda" else "fp32",
                               "compute_only_images_per_s": compute_only},
                    "environment": dict(cm.bl.environment("ofi+shm"), torch=torch.__version__,
                                        torchvision=_version("torchvision"),
                                        gpu=torch.cuda.get_device_name()
                                        if torch.cuda.is_available() else None),
                    "limits": lim, "results": {"arms": results, "ratios": ratios, "runs": runs}}
            inc.write(root, complete)
            return results, ratios

        runs = []
        for r in range(a.repeats):
            order = arms[r % len(arms):] + arms[:r % len(arms)]
            for arm in order:
                try:
                    cell = run_arm(arm, clients, bucket, a, model, opt, mean, std, want_sums,
                                   want_means, srv)
                except Exception as e:  # one arm failing must not lose the others
                    cell = {"arm": arm, "error": f"{type(e).__name__}: {e}"}
                cell["repeat"] = r
                runs.append(cell)
                print(f"repeat {r} {arm:9s} " + (
                    f"{cell['images_per_s']:7.0f} img/s wall {cell['wall_s']:.2f}s wait "
                    f"{cell['storage_wait_s']:.2f}s compute {cell['compute_s']:.2f}s host cpu "
                    f"{cell['host_cpu_s']:.1f}s verified {cell['verified']['ok']} "
                    if "wall_s" in cell else "") + cell.get("error", ""),
                    file=sys.stderr, flush=True)
                report(False)
        results, ratios = report(True)
        for arm in arms:
            x = results[arm]
            if x["images_per_s"]["n"]:
                print(f"{arm:9s} {x['images_per_s']['median']:.0f} img/s "
                      f"({x['images_per_s']['min']:.0f}-{x['images_per_s']['max']:.0f}) wait "
                      f"{x['storage_wait_s']['median']:.2f}s host cpu "
                      f"{x['host_cpu_s']['median']:.1f}s failures {x['failures']}")
        print(ratios)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
