"""A site's node deciding on a run: its policy, then its operator's approval.

The policy (:mod:`fedcare_core.sites.policy`) is read from the site folder at every decision,
so an operator's edit applies to the next run. With ``require_approval`` a run whose terms were
not approved is refused and kept as pending (``SITE_DIR/approvals/pending/<digest>.json``):
``fedcare site pending`` lists them and ``fedcare site approve --run NAME`` approves its terms
(``SITE_DIR/approvals/approved.jsonl``, append-only). An approval binds the terms (algorithm,
objectives, rounds, secure aggregation, DP), not the name: the coordinator may start the same
run again under another name; any change of terms needs a new approval.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fedcare_core.errors import ConfigError
from fedcare_core.files.json_lines import append_line
from fedcare_core.sites.policy import POLICY_FILE, Refusal, RunTerms, check_terms, read_policy

_APPROVALS = "approvals"
_PENDING = "pending"
_APPROVED = "approved.jsonl"
#: The rule a run awaiting its approval is refused by (the coordinator asks again).
APPROVAL_RULE = "require_approval"
#: The rule a site refuses every run by while its policy file cannot be read: the coordinator
#: learns only that; the file and the key at fault stay at the site (:class:`Decision`).
UNREADABLE_POLICY_RULE = "policy_unreadable"


def decide(site_root: Path, terms: RunTerms) -> Refusal | None:
    """Whether the site takes part in a run of ``terms``: None, or the rule it breaks.

    Raises
    ------
    ConfigError
        The site's policy file is unreadable or invalid (named file and key).
    """
    policy = read_policy(site_root / POLICY_FILE)
    if policy is None:
        return None
    refusal = check_terms(policy, terms)
    if refusal is not None or not policy.require_approval:
        return refusal
    if terms.digest() in _approved_digests(site_root):
        return None
    _keep_pending(site_root, terms)
    return Refusal(
        APPROVAL_RULE,
        f"its operator has not approved run {terms.run_name!r} yet "
        f"(`fedcare site approve --site SITE_DIR --run {terms.run_name}`)",
    )


@dataclass(frozen=True)
class Decision:
    """A site's decision on a run, and what only the site may know of it.

    Parameters
    ----------
    refusal
        None: the site takes part; else the rule it refuses by and a short reason (what the
        coordinator is told).
    detail
        Why, in full, for the site's own log (its policy file's path and key): never sent.
    """

    refusal: Refusal | None
    detail: str | None = None


def site_decision(site_root: Path, terms: RunTerms) -> Decision:
    """:func:`decide`, an unreadable policy a refusal (:data:`UNREADABLE_POLICY_RULE`).

    The refusal's reason names no file; the :class:`ConfigError`'s text (file and key) is the
    decision's ``detail``, kept at the site.
    """
    try:
        return Decision(decide(site_root, terms))
    except ConfigError as exc:
        reason = "its policy file cannot be read; its operator sees why in the site's audit log"
        return Decision(Refusal(UNREADABLE_POLICY_RULE, reason), detail=str(exc))


def pending_runs(site_root: Path) -> list[RunTerms]:
    """The runs awaiting the operator's approval, oldest first."""
    folder = site_root / _APPROVALS / _PENDING
    if not folder.is_dir():
        return []
    paths = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
    out = []
    for path in paths:
        try:
            out.append(RunTerms.from_json(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            raise ConfigError(
                f"pending run {path}: not a run's terms (delete it; the coordinator's next "
                "attempt writes it again)"
            ) from None
    return out


def approve(site_root: Path, run_name: str) -> RunTerms:
    """Approve the terms of pending run ``run_name``; its terms.

    Raises
    ------
    ConfigError
        No pending run of that name (naming the pending ones).
    """
    pending = {t.run_name: t for t in pending_runs(site_root)}
    terms = pending.get(run_name)
    if terms is None:
        names = ", ".join(sorted(pending)) or "none"
        raise ConfigError(f"--run {run_name!r}: no such pending run (pending: {names})")
    line = {"approved_at": time.time(), "digest": terms.digest(), "terms": asdict(terms)}
    append_line(site_root / _APPROVALS / _APPROVED, line)
    (site_root / _APPROVALS / _PENDING / f"{terms.digest()}.json").unlink(missing_ok=True)
    return terms


def _approved_digests(site_root: Path) -> set[str]:
    path = site_root / _APPROVALS / _APPROVED
    if not path.exists():
        return set()
    out = set()
    for line in path.read_text().splitlines():
        try:
            out.add(str(json.loads(line)["digest"]))
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line of a crash: the approval is simply not there
    return out


def _keep_pending(site_root: Path, terms: RunTerms) -> None:
    folder = site_root / _APPROVALS / _PENDING
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{terms.digest()}.json"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(terms.to_json() + "\n")
    os.replace(tmp, path)
