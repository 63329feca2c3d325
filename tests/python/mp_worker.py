# SPDX-License-Identifier: Apache-2.0
"""Functions that tests/python run in other processes (spawn, forkserver, process pools):
they must live in an importable module, not in a test file."""
import wharf


def get_missing(config, bucket):
    """Raises the NotFoundError of a real GET in this process."""
    with wharf.Client(**config) as c:
        c.get(bucket, "no-such-key")


def raise_error(cls_and_args):
    cls, args = cls_and_args
    raise cls(*args)


def put_get(client, bucket, key, data):
    """A PUT then a GET of data through a client that came here by pickle; returns the bytes
    read back, this process's provider and the endpoint."""
    client.put(bucket, key, data)
    return client.get(bucket, key), client.provider, client.endpoint


def default_client_endpoint():
    c = wharf.Client()
    try:
        return c.endpoint, c.list_buckets() is not None
    finally:
        c.close()


class ObjectDataset:
    """A map-style dataset that holds a wharf.Client, as a DataLoader pickles it to its
    workers under spawn or forkserver."""

    def __init__(self, client, bucket, keys):
        self.client, self.bucket, self.keys = client, bucket, list(keys)

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        import os
        import torch
        data = self.client.get(self.bucket, self.keys[i])
        return torch.frombuffer(bytearray(data), dtype=torch.uint8), os.getpid()
