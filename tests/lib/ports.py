# SPDX-License-Identifier: Apache-2.0
"""Free loopback ports for the servers tests start.

A port the kernel hands out for bind(port 0) comes from the ephemeral range, the same range it
hands to outgoing connections: between the probe and the server's own bind, any client socket
of any test running beside it may take it ("cannot listen on 127.0.0.1:N"). Ports are picked at
random below that range instead (where no outgoing connection lands), each checked bindable;
the server's start retries on another port if it still loses the race (wharfd.py)."""
import random
import socket

_FLOOR = 10000


def _ephemeral_floor():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host="127.0.0.1"):
    """A TCP port on host that is free now and outside the ephemeral range where there is room
    below it; else one the kernel picks."""
    top = _ephemeral_floor() - 1
    rnd = random.SystemRandom()
    for _ in range(64 if top > _FLOOR + 1000 else 0):
        port = rnd.randint(_FLOOR, top)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
