"""The files of a site folder, read checked: the site card, ``site.json``, the received Stage 1.

A site folder is written by ``fedcare site prepare`` and by the site's node, but it is read
after anyone may have edited it, and a site card comes from another party. Every field is
checked here before it is used (names that become file or model names, digests, counts,
objectives; the ``w*`` arrays' shape, type and finiteness), and a refusal is one line naming
the file and the field (:class:`fedcare_core.files.json_input.JsonObject`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcare.flower.received_model import STAGE1_FORMAT
from fedcare.flower.tls_checks import check_node_public_key
from fedcare_core.config import MAX_CLIENTS, MAX_ROUNDS, MAX_SEED
from fedcare_core.config.fields import CLOSED_UNIT, NON_NEGATIVE, Range
from fedcare_core.files.json_input import JsonObject
from fedcare_core.stage1.loop import RoundInfo

SITE_FORMAT = "fedcare-site/1"
_CARD_FORMAT = "fedcare-site-card/1"
#: The splits whose row counts ``site.json`` records.
_SPLIT_NAMES = ("train", "val", "test")
#: Caps on what is read: a card or ``site.json`` is under a KiB, ``stage1.json`` a few KiB per
#: round.
_MAX_CARD_BYTES = 64 * 2**10
_MAX_SITE_BYTES = 1 * 2**20
_MAX_STAGE1_DOC_BYTES = 256 * 2**20


@dataclass(frozen=True)
class SiteCard:
    """What a site gives the coordinator to be registered: public facts and its public key."""

    name: str
    objectives: tuple[str, ...]
    schema_digest: str
    public_key: str

    def to_dict(self) -> dict[str, Any]:
        """The card file's content."""
        return {
            "format": _CARD_FORMAT,
            "name": self.name,
            "objectives": list(self.objectives),
            "schema_digest": self.schema_digest,
            "public_key": self.public_key,
        }

    @classmethod
    def read(cls, path: Path) -> SiteCard:
        """Read and check a card file.

        Raises
        ------
        ConfigError
            Naming the file and the field: missing, not JSON, another format, a name that
            cannot be a file name, objectives that are not a list of names, a digest that is
            not SHA-256, or a public key Flower's node authentication cannot use.
        """
        doc = JsonObject.read(path, "site card", _MAX_CARD_BYTES)
        doc.expect_format(_CARD_FORMAT)
        name = doc.name("name", "site name")
        objectives = doc.names("objectives")
        digest = doc.digest("schema_digest")
        key = doc.text("public_key", 4_096)
        public = check_node_public_key(key, f"{doc.where}: field 'public_key'")
        return cls(name, objectives, digest, public)


def read_site_info(path: Path) -> dict[str, Any]:
    """``site.json``, every field checked; the document as written.

    Raises
    ------
    ConfigError
        Naming ``site.json`` and the field at fault.
    """
    doc = JsonObject.read(path, "site file", _MAX_SITE_BYTES)
    doc.expect_format(SITE_FORMAT)
    doc.name("name", "site name")
    doc.text("dataset", 64)
    doc.names("objectives")
    doc.integer("split_seed", Range(0, MAX_SEED))
    doc.digest("schema_digest")
    rows = doc.obj("rows")
    for split in _SPLIT_NAMES:
        rows.integer(split, Range(1))
    doc.digest("source_sha256")
    doc.text("prepared_at", 64)
    return doc.raw


@dataclass(frozen=True)
class _Stage1Doc:
    """The checked fields of a site's kept Stage 1 document (``stage1/stage1.json``)."""

    client_id: int
    seed: int
    schema_digest: str
    objectives: tuple[str, ...]
    common_width: int
    rounds: list[RoundInfo]
    planned_rounds: int
    clients: int
    converged: bool
    run_name: str


def read_stage1_doc(path: Path) -> _Stage1Doc:
    """The site's kept Stage 1 document, every field checked on its own.

    What depends on the site (its schema digest, objectives and encoded width) is checked by
    the caller.

    Raises
    ------
    ConfigError
        Naming the file and the field.
    """
    doc = JsonObject.read(path, "the Stage 1 model's document", _MAX_STAGE1_DOC_BYTES)
    doc.expect_format(STAGE1_FORMAT)
    clients = doc.integer("clients", Range(2, MAX_CLIENTS))
    planned = doc.integer("planned_rounds", Range(1, MAX_ROUNDS))
    objectives = doc.names("objectives")
    rounds = [_round(r, clients, objectives) for r in doc.objects("rounds")]
    if len(rounds) > planned:
        doc.refuse("rounds", f"hold at most planned_rounds = {planned} rounds")
    return _Stage1Doc(
        client_id=doc.integer("client_id", Range(0, clients - 1)),
        seed=doc.integer("seed", Range(0, MAX_SEED)),
        schema_digest=doc.digest("schema_digest"),
        objectives=objectives,
        common_width=doc.integer("common_width", Range(1)),
        rounds=rounds,
        planned_rounds=planned,
        clients=clients,
        converged=doc.boolean("converged"),
        run_name=doc.text("run_name", 200),
    )


def _round(r: JsonObject, clients: int, objectives: tuple[str, ...]) -> RoundInfo:
    """One round of the trace (λ* a weight per objective of the model, ε only under DP)."""
    lambdas = r.numbers("lambda", CLOSED_UNIT)
    if not set(lambdas) <= set(objectives):
        r.refuse("lambda", f"name objectives of the model ({', '.join(objectives)})")
    d_sq = r.number("d_sq_norm", NON_NEGATIVE, nullable=True)
    epsilon = r.number("epsilon", NON_NEGATIVE) if "epsilon" in r.raw else None
    missing = r.names("missing_objectives", allow_empty=True)
    return RoundInfo(
        round=r.integer("round", Range(1, MAX_ROUNDS)),
        lambdas=lambdas,
        d_sq_norm=math.nan if d_sq is None else d_sq,
        losses=r.numbers("loss", Range(), finite=False),  # reported only (NaN: no update)
        participants=r.integers("participants", Range(0, clients - 1)),
        missing_objectives=missing,
        epsilon=epsilon,
    )
