"""The records of a federation of named sites, beside :mod:`fedcare.flower.messages`' layout.

Handshake reply, added by a node that serves a named site
    ``"site"`` ConfigRecord: ``site-name`` (str) and ``schema-digest`` (str, the SHA-256 of the
    federation schema the site was prepared for; empty for a federation built from one cohort).
Round t, server → client: every ``train`` message also carries
    ``"assignment"`` ConfigRecord: ``client-id`` (int), the site's client id in this run (its
    position in the run's site order; it keys the site's random streams).
End of Stage 1, server → client (message type ``query.final_model``: Algorithm 1, line 30)
    ``"arrays"`` ArrayRecord: ``params`` / ``buffers`` = ``w*``.
    ``"config"`` ConfigRecord: ``protocol``, ``client-id``, ``seed``, ``schema-digest``,
    ``objectives`` (list[str], the model's heads), ``common-width``, ``rounds`` (str: the
    JSON list of the rounds' λ*, ‖d‖², losses, participants and, under differential privacy,
    ε), ``planned-rounds`` (int, T),
    ``clients`` (int, K), ``converged`` (bool) and ``run-name`` (str).
Its reply
    ``"metrics"`` MetricRecord: ``stored`` (1: the site kept ``w*`` in its folder; 0: the node
    has no folder to keep it in, e.g. a loopback run's memory handover).

Handshake, server → client, of a federation of named sites
    ``"terms"`` ConfigRecord: ``run-terms`` (str, JSON of
    :class:`~fedcare_core.sites.policy.RunTerms`: the run's name, algorithm, objectives,
    rounds, secure aggregation, DP's z and δ), what the site's policy decides on.
Handshake reply of a site that refuses the run
    ``"refusal"`` ConfigRecord: ``rule`` (str, the policy's key) and ``reason`` (str).

Nothing here is patient-level: names, digests, counts and model weights only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from flwr.app import ConfigRecord, MetricRecord, RecordDict

from fedcare.flower.messages import (
    ARRAYS,
    CONFIG,
    METRICS,
    PROTOCOL,
    PROTOCOL_VERSION,
    ProtocolError,
    final_arrays,
    final_from_arrays,
)
from fedcare_core.sites.policy import Refusal, RunTerms

SITE = "site"
_SITE_NAME = "site-name"
_SCHEMA_DIGEST = "schema-digest"
_ASSIGNMENT = "assignment"
CLIENT_ID = "client-id"
#: The action of the final broadcast: message type ``query.final_model``.
FINAL_MODEL_ACTION = "final_model"
_STORED = "stored"


@dataclass(frozen=True)
class SiteIdentity:
    """Who a node says it is: its site's name and the schema it was prepared for."""

    name: str
    schema_digest: str = ""


@dataclass(frozen=True)
class FinalModel:
    """What the coordinator broadcasts to each site at the end of Stage 1."""

    client_id: int
    seed: int
    schema_digest: str
    objectives: tuple[str, ...]
    common_width: int
    rounds: list[dict[str, Any]]
    planned_rounds: int
    clients: int
    converged: bool
    run_name: str
    params: np.ndarray
    buffers: np.ndarray


_TERMS = "terms"
_RUN_TERMS = "run-terms"
_REFUSAL = "refusal"


def add_run_terms(content: RecordDict, terms: RunTerms) -> RecordDict:
    """``content`` (a handshake) carrying the run's terms."""
    content[_TERMS] = ConfigRecord({_RUN_TERMS: terms.to_json()})
    return content


def run_terms(content: RecordDict) -> RunTerms | None:
    """The terms a handshake carries (None: a handshake without any)."""
    if _TERMS not in content.config_records:
        return None
    try:
        return RunTerms.from_json(str(content.config_records[_TERMS][_RUN_TERMS]))
    except (KeyError, ValueError, TypeError) as exc:
        raise ProtocolError(f"malformed run terms: {exc}") from None


def add_refusal(content: RecordDict, refusal: Refusal) -> RecordDict:
    """``content`` (a handshake reply) saying the site refuses the run, and why."""
    content[_REFUSAL] = ConfigRecord({"rule": refusal.rule, "reason": refusal.reason})
    return content


def refusal_of(content: RecordDict) -> Refusal | None:
    """The refusal a handshake reply carries (None: the site takes part)."""
    if _REFUSAL not in content.config_records:
        return None
    record = content.config_records[_REFUSAL]
    return Refusal(str(record.get("rule", "?")), str(record.get("reason", "")))


def add_site_identity(content: RecordDict, identity: SiteIdentity | None) -> RecordDict:
    """``content`` (a handshake reply) with the site's identity added (None: unchanged)."""
    if identity is not None:
        content[SITE] = ConfigRecord(
            {_SITE_NAME: identity.name, _SCHEMA_DIGEST: identity.schema_digest}
        )
    return content


def site_identity(content: RecordDict) -> SiteIdentity | None:
    """The identity a handshake reply carries, or None for a node without one."""
    if SITE not in content.config_records:
        return None
    record = content.config_records[SITE]
    try:
        return SiteIdentity(str(record[_SITE_NAME]), str(record[_SCHEMA_DIGEST]))
    except KeyError as exc:
        raise ProtocolError(f"site identity lacks {exc}") from None


def with_assignment(content: RecordDict, client_id: int) -> RecordDict:
    """A copy of ``content`` (its records shared, not copied) telling the node its client id."""
    out = RecordDict(dict(content.items()))
    out[_ASSIGNMENT] = ConfigRecord({CLIENT_ID: int(client_id)})
    return out


def assigned_client_id(content: RecordDict) -> int | None:
    """The client id a ``train`` or final message assigns, or None when it assigns none."""
    if _ASSIGNMENT not in content.config_records:
        return None
    return int(cast(int, content.config_records[_ASSIGNMENT][CLIENT_ID]))


def encode_final_model(final: FinalModel) -> RecordDict:
    """Content of the ``query.final_model`` message to one site."""
    config = ConfigRecord(
        {
            PROTOCOL: PROTOCOL_VERSION,
            CLIENT_ID: int(final.client_id),
            "seed": int(final.seed),
            _SCHEMA_DIGEST: final.schema_digest,
            "objectives": list(final.objectives),
            "common-width": int(final.common_width),
            "rounds": json.dumps(final.rounds),
            "planned-rounds": int(final.planned_rounds),
            "clients": int(final.clients),
            "converged": bool(final.converged),
            "run-name": final.run_name,
        }
    )
    return RecordDict({ARRAYS: final_arrays(final.params, final.buffers), CONFIG: config})


def decode_final_model(content: RecordDict) -> FinalModel:
    """Inverse of :func:`encode_final_model`."""
    try:
        config = content.config_records[CONFIG]
        if config[PROTOCOL] != PROTOCOL_VERSION:
            raise ProtocolError(f"protocol version {config[PROTOCOL]!r}")
        params, buffers = final_from_arrays(content.array_records[ARRAYS])
        return FinalModel(
            client_id=int(cast(int, config[CLIENT_ID])),
            seed=int(cast(int, config["seed"])),
            schema_digest=str(config[_SCHEMA_DIGEST]),
            objectives=tuple(cast(list[str], config["objectives"])),
            common_width=int(cast(int, config["common-width"])),
            rounds=list(json.loads(cast(str, config["rounds"]))),
            planned_rounds=int(cast(int, config["planned-rounds"])),
            clients=int(cast(int, config["clients"])),
            converged=bool(config["converged"]),
            run_name=str(config["run-name"]),
            params=params,
            buffers=buffers,
        )
    except KeyError as exc:
        raise ProtocolError(f"final model message lacks {exc}") from None


def encode_stored(stored: bool) -> RecordDict:
    """The reply to the final model: whether the site kept it."""
    return RecordDict({METRICS: MetricRecord({_STORED: int(stored)})})


def decode_stored(content: RecordDict) -> bool:
    """Inverse of :func:`encode_stored`."""
    try:
        return bool(content.metric_records[METRICS][_STORED])
    except KeyError as exc:
        raise ProtocolError(f"final model reply lacks {exc}") from None
