# SPDX-License-Identifier: Apache-2.0
"""Where wharf's Python side gets its settings: credentials and endpoint from the environment,
and s3:// URLs. One place, used by wharf.Client construction from the environment, by
wharf.torch (checkpoints, Hugging Face loading, DCP, datasets) and by bench/py.

Each setting is the first of its variables that is set and non-empty (the same order as the
C command-line tool's; docs/python.md writes it down):

    endpoint    WHARF_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL (gateways: a,b,...)
    access key  WHARF_ACCESS_KEY, AWS_ACCESS_KEY_ID
    secret key  WHARF_SECRET_KEY, AWS_SECRET_ACCESS_KEY
    region      WHARF_REGION, AWS_REGION, AWS_DEFAULT_REGION    (default us-east-1)
    provider    WHARF_PROVIDER                                  (default: HTTP only)
    unix socket WHARF_UNIX_SOCKET

Then, for what the environment left unset, the AWS shared files, in boto3's order: the profile
is $AWS_DEFAULT_PROFILE, $AWS_PROFILE or "default" (botocore reads them in that order); the
keys are the first pair of aws_access_key_id/aws_secret_access_key found in the credentials
file's [profile] ($AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials), then the config
file's [profile NAME] ([default] for default; $AWS_CONFIG_FILE, default ~/.aws/config); region
is the config profile's region; endpoint its services section's s3 endpoint_url, then its
endpoint_url. A profile named in the environment but found in neither file is an error.
"""
import configparser
import os
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple

from . import _lib
from .errors import ConfigError, WharfError

if TYPE_CHECKING:
    from .client import Client

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


def settings_from_env(env: Optional[Mapping[str, str]] = None
                      ) -> Tuple[Dict[str, Optional[str]], Dict[str, str]]:
    """(settings, sources): {setting: value} from the environment (env: a mapping, default
    os.environ) and {setting: the variable it came from}."""
    env = os.environ if env is None else env
    out: Dict[str, Optional[str]] = {}
    src: Dict[str, str] = {}
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


PROFILE_VARS = ("AWS_DEFAULT_PROFILE", "AWS_PROFILE")


def _aws_paths(env: Mapping[str, str], explicit: bool) -> Tuple[Optional[str], Optional[str]]:
    home = env.get("HOME") if explicit else os.path.expanduser("~")

    def path(var: str, name: str) -> Optional[str]:
        v = env.get(var)
        if v:
            return os.path.expanduser(v) if not explicit else v.replace("~", home or "~", 1)
        return os.path.join(home, ".aws", name) if home else None
    return (path("AWS_SHARED_CREDENTIALS_FILE", "credentials"), path("AWS_CONFIG_FILE", "config"))


def _read_ini(path: Optional[str]) -> Optional[configparser.RawConfigParser]:
    if not path or not os.path.isfile(path):
        return None
    cp = configparser.RawConfigParser(default_section="\0none")  # [default] is a profile
    try:
        cp.read(path, encoding="utf-8")
    except configparser.Error as e:
        raise ConfigError(_lib.WHARF_ERR_INVALID, f"{path}: not a valid AWS INI file ({e}); "
                          "fix it or point AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE "
                          "elsewhere") from None
    return cp


def _nested(value: str) -> Dict[str, str]:
    """The sub-settings of a nested value ("s3 =\n  endpoint_url = ...")."""
    out = {}
    for line in value.splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def settings_from_profile(env: Optional[Mapping[str, str]] = None
                          ) -> Tuple[Dict[str, Optional[str]], Dict[str, str]]:
    """(settings, sources) from the AWS shared credentials and config files (see the module
    doc): endpoint, access_key, secret_key and region where the profile has them."""
    explicit = env is not None
    env = os.environ if env is None else env
    profile, pvar = "default", None
    for var in PROFILE_VARS:
        if env.get(var):
            profile, pvar = env[var], var
            break
    cred_path, conf_path = _aws_paths(env, explicit)
    creds, conf = _read_ini(cred_path), _read_ini(conf_path)
    csec = profile
    fsec = "default" if profile == "default" else f"profile {profile}"
    have_c = creds is not None and creds.has_section(csec)
    have_f = conf is not None and conf.has_section(fsec)
    if pvar and not have_c and not have_f:
        raise ConfigError(_lib.WHARF_ERR_NOT_FOUND,
                          f"{pvar}={profile}: no [{csec}] in {cred_path} and no [{fsec}] in "
                          f"{conf_path}; add the profile or unset {pvar}")
    out: Dict[str, Optional[str]] = {}
    src: Dict[str, str] = {}
    for cp, sec, path in ((creds if have_c else None, csec, cred_path),
                          (conf if have_f else None, fsec, conf_path)):
        if cp is None:
            continue
        ak = cp.get(sec, "aws_access_key_id", fallback="").strip()
        sk = cp.get(sec, "aws_secret_access_key", fallback="").strip()
        if ak and sk:
            out["access_key"], out["secret_key"] = ak, sk
            src["access_key"] = src["secret_key"] = f"[{sec}] in {path}"
            break
    if conf is not None and have_f:
        where = f"[{fsec}] in {conf_path}"
        region = conf.get(fsec, "region", fallback="").strip()
        if region:
            out["region"], src["region"] = region, where
        ca = conf.get(fsec, "ca_bundle", fallback="").strip()
        if ca:
            out["ca_bundle"], src["ca_bundle"] = ca, where
        svc = conf.get(fsec, "services", fallback="").strip()
        ep = None
        if svc and conf.has_section(f"services {svc}"):
            ep = _nested(conf.get(f"services {svc}", "s3", fallback="")).get("endpoint_url")
            if ep:
                src["endpoint"] = f"[services {svc}] s3 endpoint_url in {conf_path}"
        if not ep:
            ep = conf.get(fsec, "endpoint_url", fallback="").strip()
            if ep:
                src["endpoint"] = where
        if ep:
            out["endpoint"] = ep
    return out, src


def resolve_settings(env: Optional[Mapping[str, str]] = None
                     ) -> Tuple[Dict[str, Optional[str]], Dict[str, str]]:
    """(settings, sources): the environment first, then the AWS profile for what it left unset
    (keys as a pair: both from one place). sources says where each setting came from."""
    out, src = settings_from_env(env)
    if out["region"] == DEFAULT_REGION and "region" not in src:
        out["region"] = None
    prof, psrc = settings_from_profile(env)
    if not (out["access_key"] and out["secret_key"]) and "access_key" in prof:
        for k in ("access_key", "secret_key"):
            out[k], src[k] = prof[k], psrc[k]
    for k in ("endpoint", "region", "ca_bundle"):
        if not out.get(k) and prof.get(k):
            out[k], src[k] = prof[k], psrc[k]
    if not out["region"]:
        out["region"] = DEFAULT_REGION
    return out, src


def missing_error(args: Mapping[str, Any]) -> Optional[ConfigError]:
    missing = [k for k in ("endpoint", "access_key", "secret_key") if not args.get(k)]
    if not missing:
        return None
    want = "; ".join(f"{k}: {' or '.join(ENV_ORDER[k])}" for k in missing)
    return ConfigError(_lib.WHARF_ERR_INVALID,
                       f"no client given and no {', '.join(missing)} in the environment "
                       f"(set {want}) or in the AWS profile (AWS_PROFILE, ~/.aws/credentials, "
                       f"~/.aws/config), or pass client=wharf.Client(...)")


def client_from_env(env: Optional[Mapping[str, str]] = None, **kw: Any) -> "Client":
    """A wharf.Client from the environment, then the AWS profile (see the module doc);
    keyword arguments override them. Raises ConfigError naming the variables to set when no
    endpoint or key is found."""
    from .client import Client
    if env is None and not any(kw.get(k) for k in ("endpoint", "provider", "unix_socket")):
        # Client() resolves the same settings from os.environ and, where none names a provider
        # or a socket, takes ofi+shm when the server's Unix socket is reachable from this host
        return Client(**kw)
    got, _ = resolve_settings(env)
    args: Dict[str, Any] = dict(got)
    args.update(kw)
    err = missing_error(args)
    if err:
        raise err
    return Client(**args)


def parse_url(url: Any, need_key: bool = True) -> Tuple[str, str]:
    """("bucket", "key") of "s3://bucket/key" or "wharf://bucket/key" (fsspec's scheme; the
    key without leading or trailing slashes). need_key False: "s3://bucket" and
    "s3://bucket/" give key ""."""
    if hasattr(url, "__fspath__"):
        url = os.fspath(url)
    if not is_url(url):
        raise UrlError(_lib.WHARF_ERR_INVALID,
                       f"bad URL {url!r}: expected s3://bucket/key or wharf://bucket/key (an "
                       "S3 URL; local paths are not wharf objects)")
    bucket, _, key = url.split("://", 1)[1].partition("/")
    key = key.strip("/")
    if not bucket:
        raise UrlError(_lib.WHARF_ERR_INVALID, f"bad URL {url!r}: no bucket after s3://")
    if need_key and not key:
        raise UrlError(_lib.WHARF_ERR_INVALID,
                       f"bad URL {url!r}: no key after the bucket (s3://bucket/key)")
    return bucket, key


def is_url(x: Any) -> bool:
    return isinstance(x, str) and x.startswith(("s3://", "wharf://"))


def join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


class UrlError(WharfError):
    """A malformed s3:// URL."""
    _status = _lib.WHARF_ERR_INVALID
