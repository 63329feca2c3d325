"""Where wharf's Python side gets its settings: credentials and endpoint from the environment,
and s3:// URLs. One place, used by wharf.Client construction from the environment, by
wharf.torch (checkpoints, Hugging Face loading, DCP, datasets) and by bench/py.

Each setting is the first of its variables that is set and non-empty (the same order as the
C command-line tool's; python/README.md writes it down):

    endpoint    WHARF_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL
    access key  WHARF_ACCESS_KEY, AWS_ACCESS_KEY_ID
    secret key  WHARF_SECRET_KEY, AWS_SECRET_ACCESS_KEY
    region      WHARF_REGION, AWS_REGION, AWS_DEFAULT_REGION    (default us-east-1)
    provider    WHARF_PROVIDER                                  (default: HTTP only)
    unix socket WHARF_UNIX_SOCKET
"""
import os

from . import _lib
from .errors import ConfigError, WharfError

ENV_ORDER = {
    "endpoint": ("WHARF_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "access_key": ("WHARF_ACCESS_KEY", "AWS_ACCESS_KEY_ID"),
    "secret_key": ("WHARF_SECRET_KEY", "AWS_SECRET_ACCESS_KEY"),
    "region": ("WHARF_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"),
    "provider": ("WHARF_PROVIDER",),
    "unix_socket": ("WHARF_UNIX_SOCKET",),
    "ca_bundle": ("WHARF_CA_BUNDLE", "AWS_CA_BUNDLE"),
}
DEFAULT_REGION = "us-east-1"


def settings_from_env(env=None):
    """(settings, sources): {setting: value} from the environment (env: a mapping, default
    os.environ) and {setting: the variable it came from}."""
    env = os.environ if env is None else env
    out, src = {}, {}
    for name, names in ENV_ORDER.items():
        out[name] = None
        for var in names:
            v = env.get(var)
            if v:
                out[name], src[name] = v, var
                break
    if out["region"] is None:
        out["region"] = DEFAULT_REGION
    return out, src


def client_from_env(env=None, **kw):
    """A wharf.Client from the environment (see the module doc); keyword arguments override
    it. Raises ConfigError naming the variables to set when no endpoint or key is found."""
    from .client import Client
    args, _ = settings_from_env(env)
    args.update(kw)
    missing = [k for k in ("endpoint", "access_key", "secret_key") if not args.get(k)]
    if missing:
        want = "; ".join(f"{k}: {' or '.join(ENV_ORDER[k])}" for k in missing)
        raise ConfigError(_lib.WHARF_ERR_INVALID,
                          f"no client given and no {', '.join(missing)} in the environment "
                          f"(set {want}), or pass client=wharf.Client(...)")
    return Client(**args)


def parse_url(url, need_key=True):
    """("bucket", "key") of "s3://bucket/key" (the key without leading or trailing slashes).
    need_key False: "s3://bucket" and "s3://bucket/" give key ""."""
    if hasattr(url, "__fspath__"):
        url = os.fspath(url)
    if not isinstance(url, str) or not url.startswith("s3://"):
        raise UrlError(_lib.WHARF_ERR_INVALID,
                       f"bad URL {url!r}: expected s3://bucket/key (an S3 URL; local paths "
                       "are not wharf objects)")
    bucket, _, key = url[5:].partition("/")
    key = key.strip("/")
    if not bucket:
        raise UrlError(_lib.WHARF_ERR_INVALID, f"bad URL {url!r}: no bucket after s3://")
    if need_key and not key:
        raise UrlError(_lib.WHARF_ERR_INVALID,
                       f"bad URL {url!r}: no key after the bucket (s3://bucket/key)")
    return bucket, key


def is_url(x):
    return isinstance(x, str) and x.startswith("s3://")


def join(prefix, name):
    return f"{prefix}/{name}" if prefix else name


class UrlError(WharfError):
    """A malformed s3:// URL."""
