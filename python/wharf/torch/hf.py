# SPDX-License-Identifier: Apache-2.0
"""Hugging Face snapshots under s3:// prefixes.

Reading: load_safetensors (what save_pretrained writes: model.safetensors or
model.safetensors.index.json and its shards, any shard size, 5 GB decimal shards above 4 GiB
included) into host or device memory; load_pretrained, which loads one into a model (tying
weights again and computing the non-persistent buffers a model built on the meta device
lacks); from_pretrained, a transformers model from a snapshot URL in one call.

Writing: save_pretrained writes a model's (or a state dict's) snapshot straight from memory
in Hugging Face's layout (config.json, safetensors shards and their index, tied weights once);
upload_pretrained uploads a folder that transformers' save_pretrained wrote; download_pretrained
fetches a snapshot's files into a local folder for code that wants a path (tokenizers)."""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import os
import re
import tempfile
import time
import types
import uuid
import warnings
from typing import Any, Dict, Iterator, List, Optional, Set

import numpy as np
import torch

from .. import _lib
from .. import safetensors as st
from ..client import Client
from ..errors import (CheckpointChangedError, CheckpointConflictError, NotFoundError,
                      PreconditionFailedError, SafetensorsError, WharfError)
from ._common import INDEX_NAME, _client, _join, parse_url
from .checkpoint import _read_json
from .dtypes import as_bytes as _as_bytes, prepare as _prepare
from .fetch import fetch
from .structure import _view_key


def _resolve_hf(c: Client, bucket: str, key: str, url: str) -> Any:
    """[(shard key, size)], weight_map or None for a file, an index or a snapshot dir."""
    def one_file(k: Any) -> Any:
        return [(k, c.stat(bucket, k).length)], None, None

    def from_index(k: Any, seen: Any = False) -> Any:
        try:
            idx = _read_json(c, bucket, k)
        except NotFoundError as e:
            if not seen:
                raise
            # it was there a moment ago: replaced under us
            raise CheckpointChangedError(_lib.WHARF_ERR_NOT_FOUND, f"{url}: {k} went away "
                                         f"while it was read ({e.message})") from None
        meta = idx.get("metadata") if isinstance(idx, dict) else None
        sid = meta.get(SNAPSHOT_KEY) if isinstance(meta, dict) else None
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
        return out, wm, sid

    def index_there(k: Any) -> Any:
        return from_index(k, seen=True)

    if key.endswith(".json"):
        return from_index(key)
    if key.endswith(".safetensors"):
        return one_file(key)
    for name, fn in ((INDEX_NAME, index_there), ("model.safetensors", one_file)):
        k = _join(key, name)
        if c.exists(bucket, k):
            return fn(k)
    pre = key + "/" if key else ""
    files = [(o.key, o.length) for o in c.list(bucket, pre or None)
             if o.key.endswith(".safetensors") and "/" not in o.key[len(pre):]]
    if not files:
        raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"{url}: no {INDEX_NAME}, "
                            "model.safetensors or *.safetensors there")
    return files, None, None


def load_safetensors(url: str, device: Any = "cpu", client: Optional[Client] = None,
                     transport: str = "auto", report: Any = None, progress: bool = False,
                     copy: bool = False) -> Any:
    """{name: tensor} of a Hugging Face safetensors snapshot (a directory with
    model.safetensors.index.json and its shards, or with model.safetensors / *.safetensors),
    an index, or a single file. Every tensor is a zero-copy view of one arena (copy=False,
    the default: one allocation, one GET per data section), or with copy=True in a storage
    of its own (a tensor kept alive then holds only its own bytes, and torch.save of it
    writes only those); dtypes this torch lacks come back as raw uint8 views (see
    wharf.torch.dtypes.view). progress=True: a progress bar (tqdm where installed, else
    lines on stderr)."""
    c = _client(client)
    bucket, key = parse_url(url, need_key=False)
    rep = {} if report is None else report
    t0 = time.perf_counter()
    first: Optional[WharfError] = None
    for attempt in range(1 + SNAPSHOT_RESTARTS):
        try:
            shards, wm, sid = _resolve_hf(c, bucket, key, url)
        except CheckpointChangedError as e:  # its index went away as it was read
            first = first or e
            time.sleep(min(RESTART_PAUSE_MAX_S, RESTART_PAUSE_S * 2 ** attempt))
            continue
        except NotFoundError as e:
            # no snapshot there, or a shard its index names is gone (an upload deleting the
            # shards a new index no longer names): the same error twice is not a race
            if first is not None and type(first) is type(e) and first.message == e.message:
                raise
            first = first or e
            time.sleep(min(RESTART_PAUSE_MAX_S, RESTART_PAUSE_S * 2 ** attempt))
            continue
        try:
            tensors = fetch(c, bucket, shards, device, transport, rep, progress=progress,
                            desc=f"load_safetensors {url}", copy=copy)
            _check_weight_map(url, key, wm, rep)
            _check_snapshot(url, sid, rep)
        except (NotFoundError, CheckpointChangedError, SafetensorsError) as e:
            # a shard gone, short or replaced under the load (or its header torn): the
            # snapshot is being uploaded again; it is read again from its index. The same
            # error every time is the snapshot's own (a malformed one), not a race.
            if first is not None and not isinstance(e, CheckpointChangedError) and \
                    type(e) is type(first) and e.message == first.message:
                raise
            first = first or e
            time.sleep(min(RESTART_PAUSE_MAX_S, RESTART_PAUSE_S * 2 ** attempt))
            continue
        rep["restarts"] = attempt
        rep["wall_s"] = time.perf_counter() - t0
        rep["tied"] = _tied_of(rep)
        rep.pop("headers", None)
        return tensors
    assert first is not None  # every pass that did not return recorded its error
    raise CheckpointChangedError(
        _lib.WHARF_ERR_PRECONDITION, f"load_safetensors {url}: the snapshot changed while it "
        f"was read, {1 + SNAPSHOT_RESTARTS} times (it is being uploaded again: "
        f"{first.message}); load it once the upload is done") from first


# How many times load_safetensors reads a snapshot again after it changed under the load.
SNAPSHOT_RESTARTS = 10
# before restart k: min(RESTART_PAUSE_MAX_S, RESTART_PAUSE_S * 2**k), about 1.1 s in all
RESTART_PAUSE_S = 0.01
RESTART_PAUSE_MAX_S = 0.16


# save_pretrained tags every shard (__metadata__) and the index (metadata) with one id per
# save: load_safetensors then knows shards of two saves apart (an upload over a snapshot
# rewrites the same file names), and reads the snapshot again.
SNAPSHOT_KEY = "wharf.snapshot"
# ... and the names it left out as repeats of a tied tensor ({dropped: kept}, JSON)
TIED_KEY = "wharf.tied"


def _tied_of(rep: Any) -> Any:
    tied = {}
    for h in rep["headers"].values():
        raw = (h.metadata or {}).get(TIED_KEY)
        if raw:
            try:
                got = json.loads(raw)
            except ValueError:
                continue
            if isinstance(got, dict):
                tied.update({str(k): str(v) for k, v in got.items()})
    return tied


def _check_snapshot(url: str, sid: Any, rep: Any) -> None:
    ids = {k: (h.metadata or {}).get(SNAPSHOT_KEY) for k, h in rep["headers"].items()}
    seen = set(ids.values()) | ({sid} if sid else set())
    if len(seen - {None}) > 1 or (len(seen - {None}) == 1 and None in seen and sid):
        raise CheckpointChangedError(
            _lib.WHARF_ERR_PRECONDITION, f"{url}: its files come from different saves "
            f"(index {sid}, shards {sorted(set(map(str, ids.values())))}): the snapshot is "
            "being written")


def _check_weight_map(url: str, key: str, wm: Any, rep: Any) -> None:
    if wm is not None:
        hdrs = rep["headers"]
        d = key.rpartition("/")[0] if key.endswith(".json") else key
        for name, f in wm.items():
            h = hdrs.get(_join(d, f))
            if h is None or name not in h.by_name():
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{url}: the index puts tensor "
                                       f"{name!r} in {f}, but that shard has no such tensor")


# --- loading into a model ---------------------------------------------------------------------

@contextlib.contextmanager
def init_empty_weights(device: Any = None) -> Iterator[Any]:
    """Modules built inside have their parameters on the meta device (no memory, and no
    initialisation: an init on meta does nothing) and their buffers real, on device (default:
    where torch would put them). A model built so needs no buffer repair after
    load_pretrained, since the buffers a checkpoint lacks (non-persistent: a rotary
    embedding's inv_freq) were computed by its own constructor; the way transformers and
    accelerate build a model before loading (init_empty_weights(include_buffers=False))."""
    old = torch.nn.Module.register_parameter

    def register_parameter(self: torch.nn.Module, name: str, param: Any) -> None:
        old(self, name, param)
        if param is not None and param.device.type != "meta":
            p: Any = self._parameters[name]
            self._parameters[name] = type(p)(p.to("meta"), requires_grad=p.requires_grad)

    setattr(torch.nn.Module, "register_parameter", register_parameter)
    try:
        # torch.device is a context manager from torch 2.0 (where set_default_device is)
        ctx: Any = (torch.device(device) if device is not None
                    and hasattr(torch, "set_default_device") else contextlib.nullcontext())
        with ctx:
            yield
    finally:
        setattr(torch.nn.Module, "register_parameter", old)


def _meta_buffers(model: Any) -> Any:
    return [(n, b) for n, b in model.named_buffers() if b.device.type == "meta"]


def _set_buffer(model: Any, name: str, value: Any) -> None:
    mod_name, _, leaf = name.rpartition(".")
    mod = model.get_submodule(mod_name) if mod_name else model
    mod._buffers[leaf] = value  # keeps the buffer's persistence (mod._non_persistent_buffers_set)


def _materialize_buffers(model: Any, device: Any, buffers_from: Any, url: str) -> Any:
    """Buffers still on the meta device after the load (non-persistent ones are in no
    checkpoint) get the values a real build of the model computes: from buffers_from (a module
    or a callable returning one), else from a rebuild of type(model)(model.config) with its
    parameters on meta (init_empty_weights: cheap, nothing initialised). Returns their names."""
    meta = _meta_buffers(model)
    if not meta:
        return []
    names = [n for n, _ in meta]
    if buffers_from is None and getattr(model, "config", None) is not None:
        def buffers_from() -> Any:
            with init_empty_weights(device):
                return type(model)(model.config)
    if buffers_from is None:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{url}: buffers {names[:8]} of "
                         f"{type(model).__name__} are on the meta device and no checkpoint "
                         "holds them (non-persistent); build the model inside "
                         "wharf.torch.hf.init_empty_weights() (parameters on meta, buffers "
                         "real), or pass buffers_from= (a module, or a callable returning one, "
                         "whose buffers have the values)")
    src = buffers_from() if callable(buffers_from) and not isinstance(
        buffers_from, torch.nn.Module) else buffers_from
    have = dict(src.named_buffers())
    lacking = [n for n in names if n not in have or have[n].device.type == "meta"]
    if lacking:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{url}: buffers {lacking[:8]} are on the "
                         f"meta device and the rebuilt {type(src).__name__} has no values for "
                         "them either; pass buffers_from=")
    for n, b in meta:
        _set_buffer(model, n, have[n].to(device=device, dtype=b.dtype).clone())
    return names


def _load_without_assign(model: Any, sd: Any) -> Any:
    """load_state_dict(sd, strict=False) for a torch without assign=: values are copied into
    the model's tensors, except into tensors on the meta device (a copy there does nothing),
    which are replaced by the loaded ones. Returns (missing_keys, unexpected_keys)."""
    mine = model.state_dict(keep_vars=True)
    for name, v in sd.items():
        t = mine.get(name)
        if t is None:
            continue
        if t.device.type != "meta":
            with torch.no_grad():
                t.copy_(v)
            continue
        mod_name, _, leaf = name.rpartition(".")
        mod = model.get_submodule(mod_name) if mod_name else model
        if leaf in mod._parameters:
            mod._parameters[leaf] = torch.nn.Parameter(v, requires_grad=t.requires_grad)
        else:
            mod._buffers[leaf] = v
    return types.SimpleNamespace(missing_keys=[k for k in mine if k not in sd],
                                 unexpected_keys=[k for k in sd if k not in mine])


def load_pretrained(url: str, model: Any = None, device: Any = None,
                    client: Optional[Client] = None, strict: bool = True, transport: str = "auto",
                    report: Any = None, progress: bool = False, copy: bool = False,
                    buffers_from: Any = None) -> Any:
    """A Hugging Face snapshot under url as a state dict ({name: tensor}, model None), or
    loaded into model with load_state_dict(assign=True): the model's parameters become the
    loaded tensors (zero-copy views of one arena on device; copy=True: a storage each), and
    the model is returned.
    device: where the tensors land (default: where the model's first parameter is, "cpu" for
    a model on the meta device or without parameters, "cpu" without a model). Weights that
    save_pretrained leaves out because they are tied (lm_head to the embedding) are tied
    again by model.tie_weights() when the model has it. Buffers left on the meta device (a
    model built under torch.device("meta"): its non-persistent buffers are in no snapshot)
    are computed by a rebuild of the model with its parameters on meta (buffers_from= gives
    the module to take them from instead); report["materialized_buffers"] names them.
    strict: refuse keys missing from the snapshot or unknown to the model (WharfError naming
    them). On a torch without load_state_dict(assign=) the values are copied into the
    model's own tensors instead (tensors on the meta device are replaced)."""
    if device is None:
        device = "cpu"
        if model is not None:
            p = next(iter(model.parameters()), None)
            if p is not None and p.device.type != "meta":
                device = p.device
    rep = {} if report is None else report
    sd = load_safetensors(url, device=device, client=client, transport=transport,
                          report=rep, progress=progress, copy=copy)
    if model is None:
        return sd
    groups = _tied_groups(model)
    try:
        res = model.load_state_dict(sd, strict=False, assign=True)
    except TypeError:  # torch < 2.1: no assign=
        res = _load_without_assign(model, sd)
    if hasattr(model, "tie_weights"):
        model.tie_weights()
    _retie(model, sd, groups, rep.get("tied") or {})
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
    made = _materialize_buffers(model, torch.device(device), buffers_from, url)
    left = [n for n, _, _, _, t in _named_tensors(model) if t.device.type == "meta"]
    rep.update(missing_keys=missing, unexpected_keys=list(res.unexpected_keys),
               materialized_buffers=made, left_on_meta=left)
    if left:
        what = (f"{url}: {len(left)} tensors of {type(model).__name__} are in no snapshot "
                f"and stay on the meta device (no memory, no values): {left[:8]}")
        if strict:
            raise WharfError(_lib.WHARF_ERR_INVALID, what + "; build the model with them "
                             "real, or load with strict=False and initialise them "
                             "(report['left_on_meta'] names them)")
        warnings.warn(what + "; initialise them before use (report['left_on_meta'])",
                      UserWarning, stacklevel=2)
    return model


def _named_tensors(model: Any) -> Any:
    """[(name, module, leaf, "_parameters" or "_buffers", tensor)] of every name, a tensor
    reached by two names (tied) listed under each."""
    out = []
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            for leaf, t in getattr(mod, kind).items():
                if t is not None:
                    out.append((f"{mod_name}.{leaf}" if mod_name else leaf, mod, leaf, kind, t))
    return out


def _tied_groups(model: Any) -> Any:
    """Names that share one Parameter (or buffer) object in the model as built: tied weights,
    whatever device they are on (on meta, memory cannot tell them apart; the object can)."""
    by_id: Dict[Any, Any] = {}
    for name, _, _, _, t in _named_tensors(model):
        by_id.setdefault(id(t), []).append(name)
    return [names for names in by_id.values() if len(names) > 1]


def _retie(model: Any, sd: Any, groups: Any, tied: Any) -> None:
    """Ties again what the load untied: each group of names that shared one object before the
    load shares the loaded one again (a load with assign, or into meta, replaces one name's
    object only); each name the snapshot left out as a repeat of another (tied: {dropped:
    kept}, recorded by save_pretrained) gets a Parameter over the kept one's memory."""
    where = {n: (mod, leaf, kind) for n, mod, leaf, kind, _ in _named_tensors(model)}

    def cur(n: int) -> Any:
        mod, leaf, kind = where[n]
        return getattr(mod, kind)[leaf]

    def put(n: int, t: Any) -> None:
        mod, leaf, kind = where[n]
        getattr(mod, kind)[leaf] = t
    for names in groups:
        src = next((n for n in names if n in sd and cur(n).device.type != "meta"), None)
        if src is None:
            src = next((n for n in names if cur(n).device.type != "meta"), None)
        if src is None:
            continue
        for n in names:
            if cur(n) is not cur(src):
                put(n, cur(src))
    for dropped, kept in tied.items():
        if dropped in sd or dropped not in where or kept not in where:
            continue
        k, d = cur(kept), cur(dropped)
        if k.device.type == "meta" or (d.device.type != "meta" and
                                       d.data_ptr() == k.data_ptr()):
            continue
        if d.device.type != "meta":
            with torch.no_grad():
                d.copy_(k)  # a real tensor of the model's own: gets the values
            continue
        if isinstance(d, torch.nn.Parameter):
            put(dropped, torch.nn.Parameter(k.data, requires_grad=d.requires_grad))
        else:
            put(dropped, k.data)


def from_pretrained(url: str, model_class: Any = None, device: Any = "cpu", dtype: Any = None,
                    client: Optional[Client] = None, transport: str = "auto", report: Any = None,
                    progress: bool = False, **config_kw: Any) -> Any:
    """A transformers model from a snapshot URL in one call, without a download loop: its
    config.json (read with transformers' AutoConfig), the model built with its parameters on
    the meta device (init_empty_weights: buffers real, on device), then load_pretrained.
    model_class: a transformers class with from_config (AutoModelForCausalLM by default) or a
    model class; dtype: the dtype the model is built with and cast to after the load (default:
    the parameters keep the snapshot's dtypes, as load_state_dict(assign=True) leaves them)."""
    try:
        import transformers
    except ImportError as e:
        from ..errors import MissingDependencyError
        raise MissingDependencyError(f"wharf.torch.hf.from_pretrained needs transformers "
                                     f"({e})") from None
    c = _client(client)
    bucket, key = parse_url(url, need_key=False)
    d = key[:-len(".json")].rpartition("/")[0] if key.endswith(".json") else key
    cfg_dict = _read_json(c, bucket, _join(d, "config.json"))
    with tempfile.TemporaryDirectory(prefix="wharf-cfg-") as tmp:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(cfg_dict, f)
        cfg = transformers.AutoConfig.from_pretrained(tmp, **config_kw)
    cls = model_class or transformers.AutoModelForCausalLM
    kw = {} if dtype is None else {"dtype": dtype}
    with init_empty_weights(device):
        if hasattr(cls, "from_config"):
            model = cls.from_config(cfg, **kw)
        else:
            model = cls._from_config(cfg, **kw)
    load_pretrained(url, model=model, device=device, client=c, transport=transport,
                    report=report, progress=progress)
    if dtype is not None:
        # The parameters, as transformers' from_pretrained(dtype=) leaves them: computed
        # buffers a model keeps in float32 (rotary inv_freq) stay so (model.to would cast them).
        with torch.no_grad():
            for p in model.parameters():
                if p.is_floating_point() and p.dtype != dtype:
                    p.data = p.data.to(dtype)
    return model.eval()


# --- writing snapshots -------------------------------------------------------------------------

_SHARD_RE = re.compile(r"^model-\d{5}-of-\d{5}\.safetensors$")
_UNITS = {"B": 1, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12,
          "KIB": 2 ** 10, "MIB": 2 ** 20, "GIB": 2 ** 30, "TIB": 2 ** 40}


def parse_size(size: int) -> Any:
    """Bytes of an int or of "5GB" / "100KB" / "2GiB" (decimal and binary units, as
    transformers' max_shard_size)."""
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?I?B)\s*", str(size).upper()) \
        if isinstance(size, str) else None
    if not m:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"max_shard_size must be a positive int or a "
                         f"size such as \"5GB\" or \"500MiB\", not {size!r}")
    return max(1, int(float(m.group(1)) * _UNITS[m.group(2)]))


def _untie(sd: Any) -> Any:
    """The state dict without the names that repeat a tensor already in it (tied weights:
    transformers' save_pretrained leaves them out too, and tie_weights() ties them back);
    the first name of each tensor is kept. Returns (kept {name: tensor}, {dropped: kept})."""
    kept: Dict[str, Any] = {}
    seen: Dict[Any, str] = {}
    dropped: Dict[str, str] = {}
    for name, t in sd.items():
        if not isinstance(t, torch.Tensor):
            raise WharfError(_lib.WHARF_ERR_INVALID, f"state dict entry {name!r} is a "
                             f"{type(t).__name__}, not a tensor")
        k = _view_key(t)
        if k is not None and k in seen:
            dropped[name] = seen[k]
            continue
        if k is not None:
            seen[k] = name
        kept[name] = t
    return kept, dropped


def _shard_bytes(items: Any, metadata: Any) -> Any:
    """One safetensors file (bytes as a numpy uint8 array) of items [(name, tensor, dtype)],
    laid out by descending item size then name (the reference writer's order)."""
    items = sorted(items, key=lambda it: (-it[1].element_size(), it[0]))
    entries, off = [], 0
    for name, t, dt in items:
        n = t.numel() * t.element_size()
        entries.append((name, dt, tuple(t.shape), off, off + n))
        off += n
    head = st.build_header(entries, metadata)
    out = np.empty(len(head) + off, dtype=np.uint8)
    out[:len(head)] = np.frombuffer(head, dtype=np.uint8)
    for (name, t, _), (_, _, _, b, e) in zip(items, entries):
        if e > b:
            src = _as_bytes(t.cpu() if t.device.type != "cpu" else t)
            out[len(head) + b:len(head) + e] = src.numpy()
    return out


def _config_json(model: Any, config: Any) -> Any:
    if config is not None:
        if isinstance(config, dict):
            return json.dumps(config, indent=2, sort_keys=True)
        if hasattr(config, "to_json_string"):
            return config.to_json_string()
        raise WharfError(_lib.WHARF_ERR_INVALID, f"config must be a dict or a transformers "
                         f"config, not {type(config).__name__}")
    cfg: Any = getattr(model, "config", None)
    return cfg.to_json_string() if hasattr(cfg, "to_json_string") else None


def save_pretrained(model: Any, url: str, client: Optional[Client] = None,
                    max_shard_size: Any = "5GB", config: Any = None, metadata: Any = None,
                    transport: str = "auto", report: Any = None) -> Any:
    """Writes a Hugging Face snapshot of model (an nn.Module, or a state dict) under url,
    straight from memory: config.json (model.config, or config=), generation_config.json when
    the model has one, model.safetensors or model-0000i-of-0000N.safetensors shards of at most
    max_shard_size (an int, or "5GB" / "500MiB") with their model.safetensors.index.json
    ({"metadata": {"total_size"}, "weight_map"}), tensors laid out as the reference writer
    does, __metadata__ {"format": "pt"}. Tied weights (two names, one tensor) are stored once
    under their first name, as transformers does; load_pretrained and from_pretrained tie them
    again. The index (or the single file) is written last: an index of an older save there is
    deleted first, and shards of it that the new one does not use are deleted after. The
    index commit is a conditional create (If-None-Match: *) after a check that every shard
    still has the ETag its PUT returned: of two saves racing to one URL at most one commits,
    the other gets CheckpointConflictError and leaves the index alone. Returns a report:
    files, total_size, dropped_tied {name: kept name}."""
    c = _client(client)
    bucket, prefix = parse_url(url, need_key=False)
    limit = parse_size(max_shard_size)
    sd = model.state_dict() if isinstance(model, torch.nn.Module) else model
    if not isinstance(sd, dict):
        raise WharfError(_lib.WHARF_ERR_INVALID, f"save_pretrained takes an nn.Module or a "
                         f"state dict, not {type(model).__name__}")
    kept, dropped = _untie(sd)
    items = []
    for name, t in kept.items():
        s, dt, special = _prepare(name, t)
        if special is not None:
            raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"tensor {name!r}: {t.dtype} has no "
                             "safetensors dtype that Hugging Face loaders read")
        items.append((name, s, dt))
    shards: List[Any] = []
    cur: List[Any] = []
    cur_bytes = 0
    for it in items:
        n = it[1].numel() * it[1].element_size()
        if cur and cur_bytes + n > limit:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append(it)
        cur_bytes += n
    shards.append(cur)
    nsh = len(shards)
    names = (["model.safetensors"] if nsh == 1 else
             [f"model-{i + 1:05d}-of-{nsh:05d}.safetensors" for i in range(nsh)])
    meta = {"format": "pt"}
    meta.update(metadata or {})
    sid = uuid.uuid4().hex[:16]
    meta[SNAPSHOT_KEY] = sid
    if dropped:  # load_pretrained ties them again, also in a model without tie_weights()
        meta[TIED_KEY] = json.dumps(dropped, separators=(",", ":"), sort_keys=True)
    index_key = _join(prefix, INDEX_NAME)
    pre = prefix + "/" if prefix else ""
    old = [o.key for o in c.list(bucket, pre or None) if "/" not in o.key[len(pre):] and
           (o.key[len(pre):] in (INDEX_NAME, "model.safetensors") or
            _SHARD_RE.match(o.key[len(pre):]))]
    if index_key in old:
        c.delete(bucket, index_key)  # from here on no reader takes the old shards for whole
    cfg = _config_json(model, config)
    if cfg is not None:
        c.put(bucket, _join(prefix, "config.json"), cfg.encode())
    gen: Any = getattr(model, "generation_config", None)
    if hasattr(gen, "to_json_string"):
        c.put(bucket, _join(prefix, "generation_config.json"), gen.to_json_string().encode())
    weight_map, total = {}, 0
    etags: Dict[str, Optional[str]] = {}
    # the single file is the commit point itself, so it goes last; shards of an index first
    for name, sh in zip(names, shards):
        buf = _shard_bytes(sh, meta)
        etags[name] = c.put_from(bucket, _join(prefix, name), buf, transport=transport).etag
        for n, t, _ in sh:
            weight_map[n] = name
            total += t.numel() * t.element_size()
    if nsh > 1:
        idx = {"metadata": {"total_size": total, SNAPSHOT_KEY: sid},
               "weight_map": dict(sorted(weight_map.items()))}
        _commit_index(c, bucket, prefix, index_key, json.dumps(idx, indent=2).encode(), etags)
    for k in old:
        if k.rpartition("/")[2] not in names and k != index_key:
            c.delete(bucket, k)
    rep = {"files": names, "total_size": total, "dropped_tied": dropped,
           "config": cfg is not None}
    if report is not None:
        report.update(rep)
    return rep


def _commit_index(c: Client, bucket: str, prefix: str, index_key: str, body: bytes,
                  etags: Dict[str, Optional[str]]) -> None:
    """save_pretrained's commit point: its shards are checked to still be the ones it wrote
    (shard names carry no generation, so a save racing this one writes over them), then the
    index is created with If-None-Match: * (save_pretrained deleted the old one first: an
    index there now is another save's commit)."""
    url = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
    for name, etag in sorted(etags.items()):
        try:
            now: Optional[str] = c.stat(bucket, _join(prefix, name)).etag
        except NotFoundError:
            now = None
        if etag and now != etag:
            raise CheckpointConflictError(
                _lib.WHARF_ERR_PRECONDITION,
                f"{url}: {name} was written over while this save_pretrained ran (ETag {etag} "
                f"then, {now or 'gone'} now): another save to the same URL is racing this one; "
                f"this save was not committed (no {INDEX_NAME} written); save again, once")
    try:
        c.put(bucket, index_key, body, transport="http", if_none_match=True)
    except PreconditionFailedError as e:
        raise CheckpointConflictError(
            _lib.WHARF_ERR_PRECONDITION,
            f"{url}: another save committed {INDEX_NAME} while this save_pretrained ran; "
            "this save was not committed and the other snapshot stands (its shards may have "
            "been written over by this save's: load_safetensors refuses a mix)",
            getattr(e, "report", None)) from None


def _upload_order(names: Any) -> Any:
    """Files in upload order: weights, then config files, and the index (the commit) last."""
    def rank(n: str) -> Any:
        if n == INDEX_NAME:
            return 2
        if n == "model.safetensors" or _SHARD_RE.match(n) or n.endswith(".safetensors"):
            return 0
        return 1
    return sorted(names, key=lambda n: (rank(n), n))


def _threads(threads: Optional[int]) -> int:
    """Requests in flight for many-file transfers: threads=, else from the host's CPUs."""
    return int(threads) if threads else max(2, min(16, os.cpu_count() or 2))


def upload_pretrained(local_dir: str, url: str, client: Optional[Client] = None,
                      threads: Optional[int] = None, transport: str = "auto") -> Any:
    """Uploads a folder that transformers' save_pretrained (or anything else) wrote, files of
    its subfolders included, under url: `threads` PUTs at once (default: from the CPU count,
    2 to 16), the index last. Returns the keys written."""
    c = _client(client)
    n_threads = _threads(threads)
    bucket, prefix = parse_url(url, need_key=False)
    files = []
    for root, _, fs in os.walk(local_dir):
        for f in fs:
            files.append(os.path.relpath(os.path.join(root, f), local_dir))
    if not files:
        raise WharfError(_lib.WHARF_ERR_NOT_FOUND, f"{local_dir}: no files to upload")

    def put(rel: str) -> Any:
        path, key = os.path.join(local_dir, rel), _join(prefix, rel.replace(os.sep, "/"))
        # mapped, not read: a 5 GB shard goes from the page cache without a copy in memory
        data = np.memmap(path, dtype=np.uint8, mode="r") if os.path.getsize(path) else b""
        c.put_from(bucket, key, data, transport=transport, cache=False)
        return key

    order = _upload_order(files)
    last = [f for f in order if f == INDEX_NAME]
    body = [f for f in order if f != INDEX_NAME]
    with cf.ThreadPoolExecutor(max(1, min(n_threads, len(body) or 1)),
                               thread_name_prefix="wharf-up") as ex:
        keys = list(ex.map(put, body))
    return keys + [put(f) for f in last]


def download_pretrained(url: str, local_dir: str, client: Optional[Client] = None,
                        threads: Optional[int] = None, weights: bool = True,
                        transport: str = "auto") -> Any:
    """Every object under url into local_dir (weights=False: all but *.safetensors, e.g.
    config and tokenizer files for code that wants a path), `threads` GETs at once (default:
    from the CPU count, 2 to 16). Returns the local paths."""
    c = _client(client)
    n_threads = _threads(threads)
    bucket, prefix = parse_url(url, need_key=False)
    pre = prefix + "/" if prefix else ""
    objs = [o for o in c.list(bucket, pre or None)
            if not o.key.endswith("/") and (weights or not o.key.endswith(".safetensors"))]
    if not objs:
        raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"no objects under {url}")

    def get(o: Any) -> Any:
        rel = o.key[len(pre):]
        if rel.startswith("/") or ".." in rel.split("/"):
            raise WharfError(_lib.WHARF_ERR_INVALID, f"s3://{bucket}/{o.key}: not a path "
                             f"inside {local_dir}")
        path = os.path.join(local_dir, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not o.length:
            open(path, "wb").close()
            return path
        # straight into the file's pages: a mapping of the file, not a buffer and a write
        out = np.memmap(path, dtype=np.uint8, mode="w+", shape=(o.length,))
        try:
            r = c.get_into(bucket, o.key, out, transport=transport, cache=False)
            if r.bytes != o.length:
                raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"s3://{bucket}/{o.key}: {r.bytes} "
                                 f"bytes of {o.length}")
            out.flush()
        finally:
            del out
        return path

    with cf.ThreadPoolExecutor(max(1, min(n_threads, len(objs))),
                               thread_name_prefix="wharf-down") as ex:
        return list(ex.map(get, objs))
