"""The coordinator's state files, read checked: ``STATE/sites.json`` and ``STATE/superlink.json``.

The coordinator writes both, but they live in a folder anyone with the account can edit, and
what they hold is acted on: a site's name becomes ``STATE/keys/<site>.pub``, a node id is given
to ``flwr supernode unregister``, the recorded pid is sent SIGTERM by ``federation stop``.
Every field is checked before it is used; a refusal is one line naming the file and the field
(:class:`fedcare_core.files.json_input.JsonObject`) and what to do.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare_core.config.fields import Range
from fedcare_core.errors import ConfigError
from fedcare_core.files.json_input import JsonObject

#: The registered sites.
SITES_FILE = "sites.json"
#: The running SuperLink's record.
PROCESS_FILE = "superlink.json"
#: What the coordinator's commands read in its state folder (an output elsewhere in it
#: replaces nothing).
READ_ENTRIES = (
    SITES_FILE, PROCESS_FILE, "ca.crt", "tls", "keys", "runs", "flwr-home", "superlink.db",
)  # fmt: skip
#: Flower's node ids are unsigned 64-bit integers.
_NODE_IDS = Range(0, 2**64 - 1)
#: Process ids a record may name (never 0, never init's 1: ``stop`` signals the pid's group).
_PIDS = Range(2, 2**22)
PORTS = Range(1, 65_535)
#: A record's token: the 32 hexadecimal digits :meth:`Coordinator.start` draws.
_TOKEN = re.compile(r"[0-9a-f]{32}")
#: How ``/proc/<pid>/stat`` writes a start time (clock ticks).
_TICKS = re.compile(r"[0-9]{1,20}")
#: What a state file's refusal adds.
_STATE_HINT = "the file was not written by `fedcare federation`"


@dataclass(frozen=True)
class RegisteredSite:
    """A site the coordinator admits."""

    name: str
    objectives: tuple[str, ...]
    schema_digest: str
    node_id: int


def _state_file(path: Path) -> JsonObject:
    return JsonObject.read(path, "the coordinator's state file", 16 * 2**20)


def read_sites(path: Path) -> dict[str, RegisteredSite]:
    """The registered sites by name (none when ``path`` does not exist).

    Raises
    ------
    ConfigError
        Naming the file, the site and the field at fault (a name that cannot be a file name,
        objectives that are not names, a digest that is not SHA-256, a node id out of range).
    """
    if not path.exists():
        return {}
    try:
        doc = _state_file(path)
        sites = {}
        for name, entry in doc.entries("site name"):
            sites[name] = RegisteredSite(
                name,
                entry.names("objectives"),
                entry.digest("schema_digest"),
                entry.integer("node_id", _NODE_IDS),
            )
    except ConfigError as exc:
        raise ConfigError(f"{exc}; {_STATE_HINT}") from None
    return sites


def read_process_record(path: Path, *, linux: bool | None = None) -> dict[str, Any] | None:
    """The SuperLink's record (pid, host, port, token, start time), or None if there is none.

    Parameters
    ----------
    path
        ``STATE/superlink.json``.
    linux
        Whether start times are known (``/proc``); None: look.

    Raises
    ------
    ConfigError
        Naming the file and the field: a pid of 0 or 1, a host that is not an IP address, a
        port out of range, a token or start time not as written (the start time is what tells
        the SuperLink from another process that got its pid). The message says to stop any
        SuperLink of the folder by hand and delete the file.
    """
    if not path.exists():
        return None
    if linux is None:
        linux = Path("/proc/self/stat").exists()
    try:
        doc = _state_file(path)
        doc.integer("pid", _PIDS)
        host = doc.text("host", 64)
        try:
            ipaddress.ip_address(host)
        except ValueError:
            doc.refuse("host", "be an IP address")
        doc.integer("port", PORTS)
        if _TOKEN.fullmatch(doc.text("token", 32)) is None:
            doc.refuse("token", "be 32 hexadecimal digits")
        started = doc.text("started", 20, empty=not linux)
        if started and _TICKS.fullmatch(started) is None:
            doc.refuse("started", "be the process's start time in clock ticks")
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}; {_STATE_HINT}: stop any SuperLink of this folder yourself, then delete it"
        ) from None
    return doc.raw
