# SPDX-License-Identifier: Apache-2.0
"""IAM users and access keys for tests: the one way a test makes a user and its keys.

It runs `wharfd user ...` / `wharfd key ...` against the same metadata store as a running
WharfServer (SQLite in its data directory, or the PostgreSQL URL and server key file it was
started with), so it works while the server runs, as an operator would use it.

    from users import create_user
    alice = create_user(srv, "alice")           # User(name, access_key, secret_key, ...)
    s3 = alice.boto3(srv)                       # a boto3 S3 client signed with alice's key
    k2 = add_key(srv, "alice")                  # (access_key, secret_key)
    disable_key(srv, k2[0]); enable_key(...); delete_key(...); delete_user(srv, "alice")
"""
import os
import re
import subprocess
from dataclasses import dataclass

from wharfd import REGION, build_dir


def _store_args(srv):
    """The store arguments of srv's own command line: --meta URL and --server-key-file F when
    it was started with them, else --data DIR."""
    args = list(srv.extra_args)
    out = []
    if "--meta" in args:
        out += ["--meta", args[args.index("--meta") + 1]]
    else:
        out += ["--data", srv.data_dir]
    if "--server-key-file" in args:
        out += ["--server-key-file", args[args.index("--server-key-file") + 1]]
    if "--account-id" in args:
        out += ["--account-id", args[args.index("--account-id") + 1]]
    return out


def wharfd_cmd(srv, *argv, check=True, timeout=30, env_extra=None):
    """Runs `wharfd ARGV... <srv's store>`; returns the CompletedProcess (text)."""
    env = dict(srv.env)
    env.update(env_extra or {})
    r = subprocess.run([os.path.join(build_dir(), "wharfd"), *argv, *_store_args(srv)],
                       capture_output=True, text=True, timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise RuntimeError(f"wharfd {' '.join(argv)} failed ({r.returncode}): {r.stderr}")
    return r


def _kv(out, name):
    m = re.search(rf"\b{name}=(\S+)", out)
    if not m:
        raise RuntimeError(f"no {name}= in: {out!r}")
    return m.group(1)


@dataclass
class User:
    name: str
    access_key: str
    secret_key: str
    user_id: str
    arn: str

    def boto3(self, srv, service="s3", **cfg):
        return client(srv, self.access_key, self.secret_key, service, **cfg)


def client(srv, access_key, secret_key, service="s3", **cfg):
    """A boto3 client of srv signed with the given key (no retries: a refusal shows at once)."""
    import boto3
    from botocore.config import Config
    conf = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg)
    return boto3.client(service, endpoint_url=srv.endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, region_name=REGION, config=conf)


def create_user(srv, name, access_key=None, secret_key=None):
    """A new user with one Active key (generated unless given)."""
    argv = ["user", "create", name]
    if access_key:  # the secret by the environment: never on a command line
        argv += ["--access-key", access_key]
    out = wharfd_cmd(srv, *argv, env_extra={"WHARF_USER_SECRET_KEY": secret_key or ""}).stdout
    return User(name=name, access_key=_kv(out, "access_key"), secret_key=_kv(out, "secret_key"),
                user_id=_kv(out, "user_id"), arn=_kv(out, "arn"))


def add_key(srv, name, access_key=None, secret_key=None):
    argv = ["key", "create", name]
    if access_key:
        argv += ["--access-key", access_key]
    out = wharfd_cmd(srv, *argv, env_extra={"WHARF_USER_SECRET_KEY": secret_key or ""}).stdout
    return _kv(out, "access_key"), _kv(out, "secret_key")


def delete_user(srv, name):
    wharfd_cmd(srv, "user", "delete", name)


def delete_key(srv, access_key):
    wharfd_cmd(srv, "key", "delete", access_key)


def disable_key(srv, access_key):
    wharfd_cmd(srv, "key", "disable", access_key)


def enable_key(srv, access_key):
    wharfd_cmd(srv, "key", "enable", access_key)


def list_users(srv):
    """[(name, user_id)] in name order."""
    out = wharfd_cmd(srv, "user", "list").stdout
    return [(line.split()[0], _kv(line, "user_id")) for line in out.splitlines() if line.strip()]


def list_keys(srv, name):
    """[(access_key, "Active"|"Inactive")] oldest first."""
    out = wharfd_cmd(srv, "key", "list", name).stdout
    return [(line.split()[0], _kv(line, "status")) for line in out.splitlines() if line.strip()]
