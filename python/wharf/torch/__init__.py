# SPDX-License-Identifier: Apache-2.0
"""wharf.torch: PyTorch over wharf. Every entry point takes s3://bucket/key URLs; without
client= the client comes from set_default_client() or the environment (wharf.config).

    checkpoint  save / save_async / load / commit: checkpoints as standard safetensors
                shards, overwrite-safe (the index swap is the commit)
    hf          load_safetensors / load_pretrained / from_pretrained / save_pretrained /
                upload_pretrained / download_pretrained: Hugging Face snapshots
    dcp         WharfStorageWriter / WharfStorageReader for torch.distributed.checkpoint
                (imported on its own: it needs a torch with DCP)
    structure   the non-tensor structure of a saved object, as typed JSON
    dtypes      torch dtypes <-> safetensors names
    fetch       ranged GETs of safetensors data sections into one arena (or a storage
                per tensor)
    data        datasets: ObjectMapDataset / ObjectIterableDataset over any objects,
                TokenDataset, RawImageShards, JpegTarShards over the fixed layouts, and
                the shard writers (wharf.data is the same module)
"""
from ..config import parse_url
from ._common import INDEX_NAME, set_default_client
from .checkpoint import (DEFAULT_SHARD_SIZE, FORMAT, commit, default_staging_budget,
                         free_staging, load, save, save_async, wait_async)
from .fetch import ARENA_ALIGN
from .hf import load_pretrained, load_safetensors
from .data import (JpegTarShards, ObjectIterableDataset, ObjectMapDataset, RawImageShards,
                   RawImageShardWriter, TokenDataset, TokenShardWriter, WharfObject,
                   write_raw_image_shards, write_token_shards)

__all__ = ["save", "save_async", "wait_async", "default_staging_budget", "load", "commit",
           "free_staging", "load_safetensors", "load_pretrained",
           "set_default_client", "parse_url", "TokenDataset", "RawImageShards",
           "JpegTarShards", "ObjectMapDataset", "ObjectIterableDataset", "WharfObject",
           "TokenShardWriter", "RawImageShardWriter", "write_token_shards",
           "write_raw_image_shards", "FORMAT", "INDEX_NAME", "DEFAULT_SHARD_SIZE", "ARENA_ALIGN"]
