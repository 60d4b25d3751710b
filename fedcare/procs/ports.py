"""Loopback ports: a free one, and whether one answers."""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOOPBACK = "127.0.0.1"
#: Where Linux says its ephemeral ports are (the local ports of outgoing connections).
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: How many ports below the ephemeral range are drawn from.
_SPAN = 12000
#: Draws before falling back to a port the kernel picks.
_TRIES = 64


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now.

    Drawn below the kernel's ephemeral range where it can be read: a port the kernel hands out
    for this check is also the next outgoing connection's, and a busy machine (a federation's
    clients, an MLflow or Prefect client) can take it before the caller's server binds it.
    Falls back to a port the kernel picks.
    """
    low = _ephemeral_low()
    if low is not None and low - _SPAN >= 1024:
        draw = random.SystemRandom()
        for _ in range(_TRIES):
            port = draw.randrange(low - _SPAN, low)
            if _bindable(host, port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int | None:
    """The first ephemeral port (None: not readable here)."""
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


def port_open(port: int, host: str = LOOPBACK) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0
