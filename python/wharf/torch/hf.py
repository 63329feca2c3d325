"""Hugging Face safetensors snapshots (what save_pretrained writes: model.safetensors or
model.safetensors.index.json and its shards, any shard size, 5 GB decimal shards above 4 GiB
included) from s3:// prefixes, into host or device memory; and load_pretrained, which loads
one into a model."""
import time

from .. import _lib
from ..errors import NotFoundError, SafetensorsError, WharfError
from ._common import INDEX_NAME, _client, _join, parse_url
from .checkpoint import _read_json
from .fetch import fetch


def _resolve_hf(c, bucket, key, url):
    """[(shard key, size)], weight_map or None for a file, an index or a snapshot dir."""
    def one_file(k):
        return [(k, c.stat(bucket, k).length)], None

    def from_index(k):
        idx = _read_json(c, bucket, k)
        wm = idx.get("weight_map") if isinstance(idx, dict) else None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"s3://{bucket}/{k}: no weight_map "
                                   "of tensor name to shard file")
        d = k.rpartition("/")[0]
        files = list(dict.fromkeys(wm.values()))
        out = []
        for f in files:
            sk = _join(d, f)
            try:
                out.append((sk, c.stat(bucket, sk).length))
            except NotFoundError:
                raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"{url}: the index names shard "
                                    f"{f}, but s3://{bucket}/{sk} does not exist") from None
        return out, wm

    if key.endswith(".json"):
        return from_index(key)
    if key.endswith(".safetensors"):
        return one_file(key)
    for name, fn in ((INDEX_NAME, from_index), ("model.safetensors", one_file)):
        k = _join(key, name)
        if c.exists(bucket, k):
            return fn(k)
    pre = key + "/" if key else ""
    files = [(o.key, o.length) for o in c.list(bucket, pre or None)
             if o.key.endswith(".safetensors") and "/" not in o.key[len(pre):]]
    if not files:
        raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"{url}: no {INDEX_NAME}, "
                            "model.safetensors or *.safetensors there")
    return files, None


def load_safetensors(url, device="cpu", client=None, transport="auto", report=None,
                     progress=False):
    """{name: tensor} of a Hugging Face safetensors snapshot (a directory with
    model.safetensors.index.json and its shards, or with model.safetensors / *.safetensors),
    an index, or a single file. Every tensor is a zero-copy view of one arena; dtypes this
    torch lacks come back as raw uint8 views (see wharf.torch.dtypes.view). progress=True:
    a progress bar (tqdm where installed, else lines on stderr)."""
    c = _client(client)
    bucket, key = parse_url(url, need_key=False)
    shards, wm = _resolve_hf(c, bucket, key, url)
    rep = {} if report is None else report
    t0 = time.perf_counter()
    tensors = fetch(c, bucket, shards, device, transport, rep, progress=progress,
                    desc="load_safetensors")
    if wm is not None:
        hdrs = rep["headers"]
        d = key.rpartition("/")[0] if key.endswith(".json") else key
        for name, f in wm.items():
            h = hdrs.get(_join(d, f))
            if h is None or name not in h.by_name():
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{url}: the index puts tensor "
                                       f"{name!r} in {f}, but that shard has no such tensor")
    rep["wall_s"] = time.perf_counter() - t0
    rep.pop("headers", None)
    return tensors


def load_pretrained(url, model=None, device=None, client=None, strict=True, transport="auto",
                    report=None, progress=False):
    """A Hugging Face snapshot under url as a state dict ({name: tensor}, model None), or
    loaded into model with load_state_dict(assign=True): the model's parameters become the
    loaded tensors (zero-copy views of one arena on device), and the model is returned.
    device: where the tensors land (default: where the model's first parameter is, "cpu" for
    a model on the meta device or without parameters, "cpu" without a model). Weights that
    save_pretrained leaves out because they are tied (lm_head to the embedding) are tied
    again by model.tie_weights() when the model has it. strict: refuse keys missing from the
    snapshot or unknown to the model (WharfError naming them). On a torch without
    load_state_dict(assign=) the values are copied into the model's own tensors instead."""
    if device is None:
        device = "cpu"
        if model is not None:
            p = next(iter(model.parameters()), None)
            if p is not None and p.device.type != "meta":
                device = p.device
    sd = load_safetensors(url, device=device, client=client, transport=transport,
                          report=report, progress=progress)
    if model is None:
        return sd
    try:
        res = model.load_state_dict(sd, strict=False, assign=True)
    except TypeError:  # torch < 2.1: no assign=
        res = model.load_state_dict(sd, strict=False)
    if hasattr(model, "tie_weights"):
        model.tie_weights()
    mine = model.state_dict()
    # a key the snapshot lacks is fine when tie_weights made it share a loaded key's memory
    loaded = {mine[k].data_ptr() for k in sd if k in mine and mine[k].numel()}
    missing = [k for k in res.missing_keys
               if not (k in mine and mine[k].numel() and mine[k].data_ptr() in loaded)]
    if strict and (missing or res.unexpected_keys):
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{url} does not fit {type(model).__name__}: "
                         f"missing from the snapshot: {missing[:8]}; in the snapshot but not the "
                         f"model: {list(res.unexpected_keys)[:8]}; pass strict=False to load "
                         "what matches")
    if report is not None:
        report.update(missing_keys=missing, unexpected_keys=list(res.unexpected_keys))
    return model
