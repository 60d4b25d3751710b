"""A Stage 1 server's checkpoint: the file its plan names (``fedcare run --run-dir``).

Both Stage 1 servers (:class:`~fedcare.flower.strategy.FedCareStrategy` and
:class:`~fedcare.flower.secagg_strategy.SecureStage1Strategy`) write a
:class:`~fedcare_core.stage1.loop.Stage1Snapshot` after every round with the core's
:func:`~fedcare_core.resume.checkpoint.save_checkpoint` (atomic, owner-only), and at start restore
one of the same run, if the file holds one.
"""

from __future__ import annotations

from pathlib import Path

from fedcare.flower.run_plan import RunPlan
from fedcare_core.resume.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from fedcare_core.stage1.loop import ServerState, Stage1Snapshot, check_snapshot


def restore_snapshot(plan: RunPlan, initial: ServerState) -> Stage1Snapshot | None:
    """The plan's checkpoint, if its file holds one of this run (None: start afresh).

    Raises
    ------
    CheckpointError
        If the file is unreadable, belongs to another run, or cannot continue from
        ``initial`` (another model or configuration).
    """
    path, fingerprint = plan.checkpoint_path, plan.checkpoint_fingerprint
    if path is None:
        return None
    if fingerprint is None:
        raise CheckpointError(f"plan names checkpoint {path} without the run's fingerprint")
    snap = load_checkpoint(Path(path), fingerprint)
    if snap is None:
        return None
    try:
        check_snapshot(snap, initial, plan.stage1)
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path} cannot continue this run: {exc}") from None
    return snap


def save_snapshot(plan: RunPlan, snap: Stage1Snapshot) -> None:
    """Write ``snap`` to the plan's checkpoint file (when the plan names one)."""
    path, fingerprint = plan.checkpoint_path, plan.checkpoint_fingerprint
    if path is not None and fingerprint is not None:
        save_checkpoint(Path(path), snap, fingerprint)
