"""The files of a site folder, read checked: the site card, ``site.json`` and the received ``w*``.

A site folder is written by ``fedcare site prepare`` and by the site's node, but it is read
after anyone may have edited it, and a site card comes from another party. Every field is
checked here before it is used (names that become file or model names, digests, counts,
objectives; the ``w*`` arrays' shape, type and finiteness), and a refusal is one line naming
the file and the field (:class:`fedcare_core.files.json_input.JsonObject`).
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedcare.flower.received_model import STAGE1_FORMAT
from fedcare.flower.tls_checks import check_node_public_key
from fedcare_core.config import MAX_CLIENTS, MAX_ROUNDS, MAX_SEED
from fedcare_core.config.fields import CLOSED_UNIT, NON_NEGATIVE, Range
from fedcare_core.errors import ConfigError
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
#: A ``w*`` archive's members: exactly these two float vectors.
_STAGE1_ARRAY_NAMES = ("buffers", "params")


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


def read_stage1_arrays(path: Path, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """``w*``'s two vectors, checked: exactly ``params`` and ``buffers``, 1-D, float, finite.

    Parameters
    ----------
    path
        ``stage1/stage1.npz``.
    sizes
        The length each vector must have (from the model the schema describes).

    Raises
    ------
    ConfigError
        Naming the file and the array: not an archive of plain arrays, another set of arrays,
        another shape, length or type, or a NaN or infinite value.
    """
    where = f"the Stage 1 model's arrays {path}"
    limits = {n: (8 * size + 4_096, f"the model's {size:,}") for n, size in sizes.items()}
    arrays = _stage1_archive(path, where, limits)
    for name, size in sizes.items():
        array = arrays[name]
        if array.ndim != 1 or array.dtype.kind != "f" or array.size != size:
            raise ConfigError(
                f"{where}: array {name!r} must be one vector of {size:,} floating-point numbers "
                f"(the model the schema describes), got shape {array.shape} of {array.dtype}"
            )
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        if bad:
            raise ConfigError(f"{where}: array {name!r} holds {bad:,} NaN or infinite value(s)")
        arrays[name] = array.astype(np.float32, copy=False)
    return arrays


#: The largest trees archive a site reads (before a byte is decompressed).
_MAX_TREES_BYTES = 256 * 1024 * 1024


def read_stage1_trees(
    path: Path, objectives: Sequence[str], kinds: Mapping[str, str]
) -> dict[str, np.ndarray]:
    """Fedxgb's broadcast trees, checked: uint8 bytes that unpack to ensembles of ``objectives``.

    Parameters
    ----------
    path
        ``stage1/stage1.npz``.
    objectives
        The objectives the broadcast names (every ensemble must be one of them).
    kinds
        Objective → kind (the schema's).

    Raises
    ------
    ConfigError
        Naming the file and the array: not an archive of plain arrays, another set or type of
        arrays, too large, or bytes that are not the trees of the run's objectives.
    """
    from fedcare_core.algorithms.fedxgb.bundle import unpack_bytes

    where = f"the Stage 1 trees {path}"
    arrays = _stage1_archive(
        path, where, {"params": (_MAX_TREES_BYTES, f"{_MAX_TREES_BYTES:,} bytes")}
    )
    params = arrays["params"]
    if params.ndim != 1 or params.dtype != np.uint8 or arrays["buffers"].size != 0:
        raise ConfigError(
            f"{where}: array 'params' must be the trees' bytes (1-D uint8) and 'buffers' empty, "
            f"got {params.dtype} of shape {params.shape} and {arrays['buffers'].size} buffer(s)"
        )
    from xgboost.core import XGBoostError

    try:
        trees = unpack_bytes(params, kinds)
        for ensemble in trees.ensembles.values():
            ensemble.booster()  # XGBoost reads every tree: a malformed one is refused here
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, XGBoostError) as exc:
        detail = " ".join(str(exc).split("Stack trace")[0].split())[:160]  # XGBoost's: no trace
        raise ConfigError(f"{where}: array 'params' is not a trees bundle ({detail})") from None
    stray = sorted(set(trees.ensembles) - set(objectives))
    if stray:
        raise ConfigError(f"{where}: trees of objectives the broadcast does not name: {stray}")
    return {"params": params, "buffers": arrays["buffers"].astype(np.float32)}


def _stage1_archive(
    path: Path, where: str, largest: Mapping[str, tuple[int, str]]
) -> dict[str, np.ndarray]:
    """The archive's ``params`` and ``buffers``, refused before decompressing if too large.

    ``largest``: by array name, the most bytes its member may hold and how a refusal says it.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: info.file_size for info in archive.infolist()}
        if sorted(members) != [f"{n}.npy" for n in _STAGE1_ARRAY_NAMES]:
            raise ConfigError(
                f"{where}: must hold the arrays {' and '.join(_STAGE1_ARRAY_NAMES)}, got "
                f"{', '.join(sorted(members)) or 'none'}"
            )
        for name, (limit, what) in largest.items():
            if members[f"{name}.npy"] > limit:  # before a byte is decompressed
                raise ConfigError(f"{where}: array {name!r} is larger than {what}")
        with np.load(path, allow_pickle=False) as npz:
            return {name: np.asarray(npz[name]) for name in _STAGE1_ARRAY_NAMES}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        if isinstance(exc, ConfigError):
            raise
        detail = " ".join(str(exc).split())[:160]
        raise ConfigError(f"{where}: not an archive of plain NumPy arrays ({detail})") from None
