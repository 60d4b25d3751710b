"""Stage 1 checkpoints: one file per run, written atomically, read back without pickle.

A checkpoint is a :class:`~fedcare_core.stage1.loop.Stage1Snapshot` (what the loop carries from one
round to the next) as a numpy ``.npz`` archive: the float arrays as they are (``params`` and
``buffers`` float32, the server Adam moments float64) and everything else as UTF-8 JSON in a
``meta`` byte array, so :func:`numpy.load` reads it with ``allow_pickle=False``. JSON floats
are written with ``repr`` and read back to the same bits.

A checkpoint is written to a temporary file in the same folder, flushed to disk (``fsync``) and
renamed over the previous one (``os.replace``), then the folder is synced: a process killed at
any moment (SIGKILL included) leaves the previous checkpoint or the new one, never a mixture.

:class:`CheckpointedStage1` is a Stage 1 runner (the :class:`Stage1Runner` protocol the Flower
backends implement) that runs the in-process loop from the last checkpoint, if any, and writes
one after every round. :func:`encode_result` / :func:`decode_result` store a finished Stage 1
(``w*`` and its trace) in the same way, for the Prefect flow's Stage 1 cache.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedcare_core.config import ModelConfig, Stage1Config
from fedcare_core.data.clients import Federation
from fedcare_core.errors import FedcareError
from fedcare_core.files.atomic import write_atomic
from fedcare_core.nn.param_vectors import ParamLayout
from fedcare_core.nn.training import ProgressFn
from fedcare_core.resume.keys import stage1_fingerprint
from fedcare_core.stage1.loop import (
    RoundInfo,
    ServerState,
    Stage1Result,
    Stage1Snapshot,
    run_stage1,
)

#: The ``format`` a checkpoint's metadata names; another value is refused.
_CHECKPOINT_FORMAT = "fedcare-stage1-checkpoint/1"
#: The ``format`` of a stored Stage 1 result (:func:`encode_result`).
RESULT_FORMAT = "fedcare-stage1-result/1"
#: The arrays a checkpoint may hold (the Adam moments only with the Adam server optimiser).
_ARRAY_KEYS = ("params", "buffers", "adam_m", "adam_v")


class CheckpointError(FedcareError):
    """A checkpoint that cannot be read, or that belongs to another run."""


def _digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(key.encode())
        h.update(str(arrays[key].dtype).encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def encode_snapshot(snapshot: Stage1Snapshot, fingerprint: str) -> bytes:
    """A snapshot as the bytes of an ``.npz`` checkpoint.

    Parameters
    ----------
    snapshot
        The loop's state after a round.
    fingerprint
        :func:`~fedcare_core.resume.keys.stage1_fingerprint` of the run, checked again on load.

    Returns
    -------
    bytes
        The archive.
    """
    state = snapshot.state
    arrays = {"params": state.params, "buffers": state.buffers}
    if state.adam_m is not None and state.adam_v is not None:
        arrays |= {"adam_m": state.adam_m, "adam_v": state.adam_v}
    meta = {
        "format": _CHECKPOINT_FORMAT,
        "fingerprint": fingerprint,
        "round": snapshot.round,
        "converged": snapshot.converged,
        "server_step": state.step,
        # The accountant's state: the Gaussian rounds composed so far (one per round under DP).
        "dp_releases": state.dp_releases,
        "rounds": _rounds_to_json(snapshot.rounds),
    }
    if snapshot.notes:  # a federated backend's; the in-process loop's checkpoints have none
        meta["notes"] = list(snapshot.notes)
    return _archive(arrays, meta)


def _rounds_to_json(rounds: Sequence[RoundInfo]) -> list[dict[str, Any]]:
    return [
        {
            "round": r.round,
            "lambdas": r.lambdas,
            "d_sq_norm": r.d_sq_norm,
            "losses": r.losses,
            "participants": list(r.participants),
            "missing_objectives": list(r.missing_objectives),
            **({} if r.epsilon is None else {"epsilon": r.epsilon}),
        }
        for r in rounds
    ]


def _rounds_from_json(rounds: list[dict[str, Any]]) -> tuple[RoundInfo, ...]:
    return tuple(
        RoundInfo(
            round=int(r["round"]),
            lambdas={k: float(v) for k, v in r["lambdas"].items()},
            d_sq_norm=float(r["d_sq_norm"]),
            losses={k: float(v) for k, v in r["losses"].items()},
            participants=tuple(int(p) for p in r["participants"]),
            missing_objectives=tuple(str(s) for s in r["missing_objectives"]),
            epsilon=None if r.get("epsilon") is None else float(r["epsilon"]),
        )
        for r in rounds
    )


def _archive(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    """The ``.npz`` bytes of ``arrays`` and ``meta`` (JSON, with the arrays' digest added)."""
    meta = meta | {"digest": _digest(arrays)}
    encoded = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    payload: dict[str, Any] = arrays | {"meta": encoded}
    np.savez(buf, **payload)
    return buf.getvalue()


def _unarchive(data: bytes, fmt: str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and metadata of an :func:`_archive` (no pickle), format and digest checked."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        arrays = {k: np.array(archive[k]) for k in archive.files if k != "meta"}
        meta: dict[str, Any] = json.loads(archive["meta"].tobytes().decode())
    if meta.get("format") != fmt:
        raise ValueError(f"format {meta.get('format')!r}, expected {fmt!r}")
    if meta["digest"] != _digest(arrays):
        raise ValueError("its arrays do not match their recorded digest")
    return arrays, meta


def decode_snapshot(data: bytes, source: str) -> tuple[Stage1Snapshot, str]:
    """Read an ``.npz`` checkpoint back (no pickle); return the snapshot and its fingerprint.

    Parameters
    ----------
    data
        The archive's bytes.
    source
        The file's name, for error messages.

    Raises
    ------
    CheckpointError
        If the archive is truncated, corrupt, of another format, or its arrays fail their digest.
    """
    try:
        arrays, meta = _unarchive(data, _CHECKPOINT_FORMAT)
        if not set(arrays) <= set(_ARRAY_KEYS):
            raise ValueError(f"unexpected arrays {sorted(set(arrays) - set(_ARRAY_KEYS))}")
        rounds = _rounds_from_json(meta["rounds"])
        state = ServerState(
            arrays["params"],
            arrays["buffers"],
            arrays.get("adam_m"),
            arrays.get("adam_v"),
            int(meta["server_step"]),
            int(meta.get("dp_releases", 0)),
        )
        notes = tuple(str(n) for n in meta.get("notes", ()))
        snapshot = Stage1Snapshot(int(meta["round"]), state, rounds, bool(meta["converged"]), notes)
        return snapshot, str(meta["fingerprint"])
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"checkpoint {source} is unreadable, truncated or corrupt ({exc}); delete it to "
            "restart Stage 1 from round 1"
        ) from None


def encode_result(result: Stage1Result, key: str) -> bytes:
    """Stage 1's outcome as the bytes of an ``.npz`` archive (the Prefect flow's Stage 1 cache).

    Holds ``w*`` and its BatchNorm statistics (float32, as they are), the per-round trace
    (λ*, ‖d‖², mean training losses, participating client ids, missing objectives), the
    convergence flag, the objective names, the parameter layout and the notes: no client rows.

    Parameters
    ----------
    result
        Stage 1's result.
    key
        What the archive is recorded under (e.g. a cache key), checked again on load.

    Returns
    -------
    bytes
        The archive.
    """
    layout = result.layout
    meta = {
        "format": RESULT_FORMAT,
        "key": key,
        "converged": result.converged,
        "objectives": list(result.objectives),
        "layout": {
            "total": layout.total,
            "backbone": [layout.backbone.start, layout.backbone.stop],
            "heads": {s: [sl.start, sl.stop] for s, sl in layout.heads.items()},
            "variances": [[sl.start, sl.stop] for sl in layout.variances],
        },
        "notes": list(result.notes),
        "rounds": _rounds_to_json(result.rounds),
    }
    return _archive({"params": result.params, "buffers": result.buffers}, meta)


def decode_result(data: bytes, source: str) -> tuple[Stage1Result, str]:
    """Read an :func:`encode_result` archive back (no pickle); the result and its key.

    Parameters
    ----------
    data
        The archive's bytes.
    source
        Where it was read from, for error messages.

    Raises
    ------
    CheckpointError
        If the archive is truncated, corrupt, of another format, or its arrays fail their digest.
    """
    try:
        arrays, meta = _unarchive(data, RESULT_FORMAT)
        spans = meta["layout"]
        layout = ParamLayout(
            total=int(spans["total"]),
            backbone=slice(*(int(i) for i in spans["backbone"])),
            heads={str(s): slice(*(int(i) for i in sl)) for s, sl in spans["heads"].items()},
            variances=tuple(slice(*(int(i) for i in sl)) for sl in spans.get("variances", ())),
        )
        result = Stage1Result(
            params=arrays["params"],
            buffers=arrays["buffers"],
            rounds=list(_rounds_from_json(meta["rounds"])),
            converged=bool(meta["converged"]),
            objectives=tuple(str(s) for s in meta["objectives"]),
            layout=layout,
            notes=[str(n) for n in meta["notes"]],
        )
        return result, str(meta["key"])
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"Stage 1 result {source} is unreadable, truncated or corrupt ({exc})"
        ) from None


def save_checkpoint(path: Path, snapshot: Stage1Snapshot, fingerprint: str) -> None:
    """Write ``snapshot`` to ``path`` atomically (:func:`write_atomic`)."""
    write_atomic(path, encode_snapshot(snapshot, fingerprint))


def load_checkpoint(path: Path, fingerprint: str | None = None) -> Stage1Snapshot | None:
    """The snapshot in ``path``, or None when there is no checkpoint yet.

    Parameters
    ----------
    path
        The checkpoint file.
    fingerprint
        When given, the run's :func:`~fedcare_core.resume.keys.stage1_fingerprint`; a
        checkpoint of another run is refused.

    Raises
    ------
    CheckpointError
        If the file is unreadable or corrupt, or belongs to another run.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    snapshot, recorded = decode_snapshot(data, str(path))
    if fingerprint is not None and recorded != fingerprint:
        raise CheckpointError(
            f"checkpoint {path} belongs to another run (its configuration, seed or data differ)"
        )
    return snapshot


def restore_checkpoint(
    path: Path, fingerprint: str, rounds: int, say: Callable[[str], None] | None = None
) -> Stage1Snapshot | None:
    """The run's checkpoint at ``path`` (None: none yet), stale temporary files removed.

    Parameters
    ----------
    path
        The checkpoint file.
    fingerprint
        The run's :func:`~fedcare_core.resume.keys.stage1_fingerprint`; a checkpoint of another
        run is refused.
    rounds
        T, for the message.
    say
        Told, in one line, where the run starts when a checkpoint is restored.

    Raises
    ------
    CheckpointError
        If the file is unreadable or corrupt, or belongs to another run.
    """
    path = Path(path)
    # A process killed while writing leaves its temporary file (never the checkpoint).
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        stale.unlink(missing_ok=True)
    start = load_checkpoint(path, fingerprint)
    if say is not None and start is not None:
        nxt = (
            "Stage 1 done"
            if start.converged or start.round >= rounds
            else f"Stage 1 continues at round {start.round + 1} of {rounds}"
        )
        say(f"checkpoint of round {start.round} restored; {nxt}")
    return start


class CheckpointedStage1:
    """Stage 1 in process, resumed from ``path`` when it holds a checkpoint, saved every round.

    A :class:`~fedcare_core.algorithms.base.Stage1Runner`: ``run_algorithm(backend=...)`` runs
    FedCARE's rounds with it exactly as the in-process loop would, bit for bit.

    Parameters
    ----------
    path
        The checkpoint file (created after the first round).
    say
        Told, in one line, where the run starts (e.g. printed to stderr).
    """

    def __init__(self, path: Path, say: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.say = say

    def __call__(
        self,
        federation: Federation,
        model_config: ModelConfig,
        config: Stage1Config,
        seed: int,
        progress: ProgressFn | None,
        /,
    ) -> Stage1Result:
        """Run (or continue) Stage 1, writing a checkpoint after every round."""
        fingerprint = stage1_fingerprint(federation, model_config, config, seed)
        start = restore_checkpoint(self.path, fingerprint, config.rounds, self.say)

        def save(snapshot: Stage1Snapshot) -> None:
            save_checkpoint(self.path, snapshot, fingerprint)

        return run_stage1(
            federation, model_config, config, seed, progress=progress, start=start, on_round=save
        )
