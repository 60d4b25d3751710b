"""What a node tells the coordinator when it fails: a short reason, never a local path.

Flower turns an exception a ClientApp raises into an error reply whose reason is the
exception's text (``<class '…'>:<'text'>``); the coordinator logs it and keeps it in the run's
notes, its documents and MLflow. :func:`guarded` wraps every handler of FedCARE's ClientApps
(plain and SecAgg+): an exception leaving a handler is logged in full where the node runs (the
site's own log) and replaced by :class:`SiteError`, whose text is the original's with every
local path taken out (:func:`redact_paths`): the node config's paths (the site's folder, its
data, where it keeps ``w*``, its audit log) in the form they were given, and any other
absolute or home-relative path. The coordinator reads a reply's error with
:func:`error_text` (the text alone, scrubbed again: a node of an older release may not).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path

from flwr.app import Context, Error, Message

from fedcare.flower.audit import AUDIT_PATH_KEY, Handler
from fedcare.flower.node_paths import DATA_PATH_KEY, SITE_PATH_KEY, STAGE1_PATH_KEY

LOGGER = logging.getLogger(__name__)

#: What a local path becomes in a reason that leaves the node.
PATH_PLACEHOLDER = "<local path>"
#: The longest reason a node sends (the rest is cut: the site's log has it whole).
MAX_REASON = 300
#: The characters of a path inside a message (a colon, a comma, a quote… end it).
_PATH_CHARS = r"[^\s'\"`,;:()\[\]{}<>]"
#: An absolute (``/…``), home-relative (``~/…``) or dot-relative (``./…``, ``../…``) path.
_ANY_PATH = re.compile(rf"(?<![\w.~-])(?:~|\.\.?)?/{_PATH_CHARS}+")
#: Flower's reason of a ClientApp that raised: ``<class 'module.X'>:<'text'>``.
_FLOWER_REASON = re.compile(r"^<class '(?:[\w.]*\.)?(\w+)'>:<'(.*)'>$", re.DOTALL)


class SiteError(RuntimeError):
    """A node's failure as the coordinator may see it (the type and text, no local path)."""


def redact_paths(text: str, local: Iterable[str] = ()) -> str:
    """``text`` with the ``local`` paths and any other path replaced by a placeholder.

    ``local`` are paths as the node was given them (relative ones included): each is replaced
    with whatever follows it up to the end of the path; a one-word relative path only where
    a ``/`` follows it (a site folder named like its site leaves the site's name alone).
    """
    forms: set[str] = set()
    for value in local:
        if value:
            path = Path(value)
            forms |= {value, str(path.absolute()), str(path.resolve())}
    for form in sorted(forms, key=len, reverse=True):
        tail = f"{_PATH_CHARS}*" if "/" in form else f"/{_PATH_CHARS}*"
        pattern = rf"(?<![\w.-]){re.escape(form)}{tail}"
        text = re.sub(pattern, PATH_PLACEHOLDER, text)
    return _ANY_PATH.sub(PATH_PLACEHOLDER, text)


def public_reason(exc: BaseException, local: Iterable[str] = ()) -> str:
    """What may leave the node of ``exc``: its type, its text without paths, cut short."""
    text = f"{type(exc).__name__}: {redact_paths(str(exc), local)}".replace("\n", " ")
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def local_paths(context: Context) -> list[str]:
    """The node config's paths (what the node was told of its own files)."""
    config = context.node_config
    keys = (DATA_PATH_KEY, SITE_PATH_KEY, STAGE1_PATH_KEY, AUDIT_PATH_KEY)
    return [str(config[key]) for key in keys if key in config]


def guarded(handler: Handler) -> Handler:
    """``handler`` whose failures leave the node as :class:`SiteError` (see the module).

    The original exception is logged here in full, with its traceback (the node's own log).
    """

    def run(msg: Message, context: Context) -> Message:
        try:
            return handler(msg, context)
        except Exception as exc:
            LOGGER.error("the ClientApp failed (the coordinator is told less)", exc_info=exc)
            raise SiteError(public_reason(exc, local_paths(context))) from None

    return run


def error_text(error: Error) -> str:
    """The text of a reply's error: Flower's wrapping taken off, any path scrubbed, cut short."""
    text = str(error.reason)
    found = _FLOWER_REASON.match(text)
    if found:  # a guarded handler's text names the original type already
        kind, text = found.groups()
        text = text if kind == SiteError.__name__ else f"{kind}: {text}"
    text = redact_paths(text).replace("\n", " ")
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"
