# SPDX-License-Identifier: Apache-2.0
"""The non-tensor structure of a saved object, as JSON that keeps its types: tensors become
{"__tensor__": name} (one name for every object that is the same tensor: the same object, or
tied weights, the same memory seen through the same shape, strides and dtype); dicts keep key
types and order (OrderedDict too), tuples stay tuples, nan/inf, bytes, torch.dtype/device/Size
survive. With allow_pickle, anything else is pickled (base64) under {"__pickle__": ...} and
only unpickled by a load that also passes allow_pickle=True: Lightning checkpoints hold such
objects (hyperparameters, callbacks)."""
import base64
import collections
import math
import pickle
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
import torch

from .. import _lib
from ..errors import WharfError


class _Flatten:
    """Walks obj depth-first; tensors become {"__tensor__": name}, everything else a JSON
    encoding that keeps types (tuples, non-string keys, OrderedDict, nan)."""

    def __init__(self, name_prefix: str = "", allow_pickle: bool = False) -> None:
        self.prefix = name_prefix
        self.allow_pickle = allow_pickle
        self.tensors: List[Tuple[str, torch.Tensor, bool]] = []   # (name, tensor, as_numpy)
        self.by_id: Dict[int, str] = {}     # id(tensor) -> name
        # _view_key(tensor) -> name: tied weights (one memory, two objects)
        self.by_view: Dict[Any, str] = {}
        self.names: Set[str] = set()
        self.keep: List[Any] = []      # keeps ids stable while walking

    def name_for(self, path: List[Any]) -> str:
        base = self.prefix + (".".join(_path_part(p) for p in path) if path else "tensor")
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}#{n}"
        self.names.add(name)
        return name

    def enc(self, obj: Any, path: List[Any]) -> Any:
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj, path, False)
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"__float__": repr(float(obj))}
        if isinstance(obj, (bytes, bytearray)):
            return {"__bytes__": base64.b64encode(bytes(obj)).decode()}
        if isinstance(obj, torch.dtype):
            return {"__dtype__": str(obj).replace("torch.", "")}
        if isinstance(obj, torch.device):
            return {"__device__": str(obj)}
        if isinstance(obj, torch.Size):
            return {"__size__": list(obj)}
        if isinstance(obj, np.ndarray):
            return self.tensor(torch.from_numpy(np.ascontiguousarray(obj)), path, True)
        if isinstance(obj, dict) and type(obj) in (dict, collections.OrderedDict):
            items = []
            for k, v in obj.items():
                items.append([self.enc_key(k, path), self.enc(v, path + [k])])
            out: Dict[str, Any] = {"__dict__": items}
            if type(obj) is collections.OrderedDict:
                out["__type__"] = "OrderedDict"
            return out
        if type(obj) is list:
            return [self.enc(v, path + [i]) for i, v in enumerate(obj)]
        if type(obj) is tuple:
            return {"__tuple__": [self.enc(v, path + [i]) for i, v in enumerate(obj)]}
        if self.allow_pickle:
            return {"__pickle__": base64.b64encode(pickle.dumps(obj)).decode()}
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"cannot save {type(obj).__module__}.{type(obj).__qualname__} at "
                         f"{_show_path(path)}: supported are tensors, numpy arrays, dict, "
                         f"OrderedDict, list, tuple, str, int, float, bool, None, bytes, "
                         f"torch.dtype, torch.device and torch.Size (or pass allow_pickle=True to "
                         f"pickle other objects)")

    def enc_key(self, k: Any, path: List[Any]) -> Any:
        if isinstance(k, torch.Tensor) or isinstance(k, np.ndarray):
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"cannot save a tensor as a dict key at {_show_path(path)}")
        return self.enc(k, path)

    def tensor(self, t: torch.Tensor, path: List[Any], as_numpy: bool) -> Any:
        if not as_numpy:
            name = self.by_id.get(id(t)) or self.by_view.get(_view_key(t))
            if name is not None:
                self.by_id[id(t)] = name
                return {"__tensor__": name}
        name = self.name_for(path)
        self.keep.append(t)
        self.by_id[id(t)] = name
        if not as_numpy and _view_key(t) is not None:
            self.by_view[_view_key(t)] = name
        self.tensors.append((name, t, as_numpy))
        tout: Dict[str, Any] = {"__tensor__": name}
        if as_numpy:
            tout["numpy"] = True
        return tout


def _view_key(t: torch.Tensor) -> Optional[Tuple[Any, ...]]:
    """What makes two tensor objects the same tensor: one memory seen the same way. A
    module's state_dict() hands out a new detached tensor per name, so weights tied to one
    Parameter (an embedding and an LM head) are two objects with one view key. None for
    tensors without memory of their own to compare (empty, meta)."""
    if t.numel() == 0 or t.device.type == "meta" or t.layout != torch.strided:
        return None
    return (t.device, t.dtype, t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.is_conj(),
            t.is_neg())


def _path_part(k: Any) -> str:
    return k if isinstance(k, str) else str(k)


def _show_path(path: Sequence[Any]) -> str:
    return "the root" if not path else "[" + "][".join(repr(p) for p in path) + "]"


def _decode(v: Any, tensors: Dict[str, Any], allow_pickle: bool = False) -> Any:
    if isinstance(v, list):
        return [_decode(x, tensors, allow_pickle) for x in v]
    if not isinstance(v, dict):
        return v
    if "__tensor__" in v:
        t = tensors[v["__tensor__"]]
        return t.numpy() if v.get("numpy") else t
    if "__dict__" in v:
        cls = collections.OrderedDict if v.get("__type__") == "OrderedDict" else dict
        return cls((_decode_key(k, tensors, allow_pickle), _decode(x, tensors, allow_pickle))
                   for k, x in v["__dict__"])
    if "__tuple__" in v:
        return tuple(_decode(x, tensors, allow_pickle) for x in v["__tuple__"])
    if "__float__" in v:
        return float(v["__float__"])
    if "__bytes__" in v:
        return base64.b64decode(v["__bytes__"])
    if "__dtype__" in v:
        return getattr(torch, v["__dtype__"])
    if "__device__" in v:
        return torch.device(v["__device__"])
    if "__size__" in v:
        return torch.Size(v["__size__"])
    if "__pickle__" in v:
        if not allow_pickle:
            raise WharfError(_lib.WHARF_ERR_PRECONDITION, "the checkpoint holds pickled objects "
                             "(saved with allow_pickle=True); load it with allow_pickle=True "
                             "if you trust whoever wrote it (unpickling runs their code)")
        return pickle.loads(base64.b64decode(v["__pickle__"]))
    raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"checkpoint structure has an unknown node "
                     f"{str(v)[:200]}")


def _decode_key(k: Any, tensors: Dict[str, Any], allow_pickle: bool = False) -> Any:
    k = _decode(k, tensors, allow_pickle)
    return tuple(k) if isinstance(k, list) else k  # (lists are not hashable; never saved)


Flatten, decode = _Flatten, _decode
