"""What crossed the federation boundary, as both ends record it: run, round, kind, size, digest.

A site's node appends a line to its own audit log (``SITE_DIR/audit.jsonl``, append-only, kept
at the site) for every message it sends, and for every run it refused; the coordinator's
ServerApp appends a line to the run's ``received.jsonl`` for every reply it received. Both
digest a message's content the same way (:func:`content_digest`: SHA-256 over every array's
bytes, dtype and shape and every config and metric value, in a fixed order), so a site can
check that what the coordinator recorded is what it sent, message by message. No line holds
data: names, numbers of bytes and digests only.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from flwr.app import Context, Message, RecordDict

from fedcare_core.files.json_lines import append_line

#: Node-config key of the site's audit log (absent: the node keeps none).
AUDIT_PATH_KEY = "audit-path"
#: The audit log's file in a site folder.
AUDIT_FILE = "audit.jsonl"
#: The coordinator's record of a run's replies, in its result folder.
RECEIVED_FILE = "received.jsonl"

Handler = Callable[[Message, Context], Message]


def content_digest(content: RecordDict) -> tuple[int, str]:
    """The content's size in bytes (arrays and encoded values) and its SHA-256 (hex)."""
    digest = hashlib.sha256()
    size = 0
    for name, arrays in sorted(content.array_records.items()):
        for key, array in sorted(arrays.items()):
            head = f"array {name}/{key} {array.dtype} {tuple(array.shape)}\n".encode()
            digest.update(head)
            digest.update(array.data)
            size += len(array.data)
    values: list[tuple[str, Mapping[str, Any]]] = [
        *(("config " + n, r) for n, r in sorted(content.config_records.items())),
        *(("metric " + n, r) for n, r in sorted(content.metric_records.items())),
    ]
    for name, record in values:
        text = json.dumps({k: record[k] for k in sorted(record)}, default=repr).encode()
        digest.update(f"{name}\n".encode())
        digest.update(text)
        size += len(text)
    return size, digest.hexdigest()


def message_line(msg: Message, **extra: Any) -> dict[str, Any]:
    """One audit line for ``msg``: its round (group), kind, size and digest.

    An error reply (the SuperLink's for a node gone, a ClientApp's failure) has no content:
    its line holds the error's code instead of a digest.
    """
    meta = msg.metadata
    line = {"time": time.time(), "round": meta.group_id, "kind": meta.message_type}
    if msg.has_error():
        return line | {"error": int(msg.error.code), **extra}
    size, digest = content_digest(msg.content)
    return line | {"bytes": size, "sha256": digest, **extra}


def audited(handler: Handler) -> Handler:
    """``handler`` recording every reply it sends in the node's audit log (if it keeps one)."""

    def run(msg: Message, context: Context) -> Message:
        reply = handler(msg, context)
        path = context.node_config.get(AUDIT_PATH_KEY)
        if path:
            append_line(Path(str(path)), message_line(reply, run_id=context.run_id))
        return reply

    return run
