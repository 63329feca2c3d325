# SPDX-License-Identifier: Apache-2.0
"""The `wharf` logger (logging.getLogger("wharf")): what the Python side sees of libwharf.

libwharf's public ABI has no log callback: its own lines go to stderr, at the level of
$WHARF_LOG_LEVEL (error, warn, info, debug, trace; default warn), read when the first client
is made. What reaches Python goes through this logger, in `key value` style:

    DEBUG    every transfer: op, bucket/key, bytes, transport, provider, requests, retries,
             wall_s; every error raised from a libwharf status (the error is raised too)
    INFO     a client made (endpoint, provider asked for and got, region); a transfer that
             needed retries; a GPU buffer staged through host memory, and why
    WARNING  a transfer that fell back from RDMA to HTTP, and the server's reason

Like any library logger it has a NullHandler: nothing prints unless the application
configures logging (logging.basicConfig(level=logging.INFO), or a handler on "wharf").
"""
import logging
from typing import Any

logger = logging.getLogger("wharf")
logger.addHandler(logging.NullHandler())


def log_client(c: Any, asked: Any) -> None:
    if logger.isEnabledFor(logging.INFO):
        logger.info("client endpoint %s provider %s asked %s region %s", c.endpoint,
                    c.provider, asked or "none", c.config.get("region"))


def log_report(op: str, bucket: str, key: str, rep: Any) -> None:
    if rep.fell_back:
        logger.warning("%s %s/%s fell back to %s reason \"%s\"", op, bucket, key, rep.transport,
                       rep.reason)
    elif rep.staged:
        logger.info("%s %s/%s staged through host memory reason \"%s\"", op, bucket, key,
                    rep.reason)
    if rep.retries:
        logger.info("%s %s/%s retries %d", op, bucket, key, rep.retries)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s %s/%s bytes %d transport %s provider %s memory %s requests %d "
                     "retries %d wall_s %.6f", op, bucket, key, rep.bytes, rep.transport,
                     rep.provider or "-", rep.memory, rep.requests, rep.retries, rep.wall_s)
