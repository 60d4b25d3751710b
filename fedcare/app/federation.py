"""The federation service: a Stage 1 over registered sites, watched live, as one document.

``fedcare federation run`` and the ``fedcare-federation`` flow's task call this, never the
sites layer's run directly, so both open the live MLflow view, mark it failed when the run
fails, and build the Stage 1 document the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare_core.nn.training import ProgressFn
from fedcare_core.sites.schema import FederationSchema

if TYPE_CHECKING:
    from fedcare.flower.flower_options import FlowerConfig
    from fedcare.sites.coordinator import Coordinator
    from fedcare.tracking.stage1_run import LiveRounds

#: Opens the live view of a Stage 1 from its head (what is known before round 1), or None.
LiveOpener = Callable[[dict[str, Any]], "LiveRounds | None"]


@dataclass(frozen=True)
class FederatedStage1:
    """A finished Stage 1 over sites: its document, its result folder and its live view."""

    document: dict[str, Any]
    result_dir: Path
    live: LiveRounds | None


def federated_stage1(
    coordinator: Coordinator,
    schema: FederationSchema,
    *,
    min_sites: int,
    rounds: int,
    seed: int,
    flower: FlowerConfig,
    run_name: str,
    progress: ProgressFn | None = None,
    secagg: bool = False,
    open_live: LiveOpener | None = None,
) -> FederatedStage1:
    """Run Stage 1 over the coordinator's sites and return its document.

    Parameters
    ----------
    coordinator, schema, min_sites, rounds, seed, flower, run_name, progress, secagg
        As :func:`fedcare.sites.federation_run.run_federation` takes them.
    open_live
        Opens the run's live view from its head; each round is logged to it as it ends, and it
        is marked failed if the run fails (None: no live view).

    Raises
    ------
    FedcareError
        As :func:`~fedcare.sites.federation_run.run_federation` raises.
    """
    from fedcare.sites.federation_run import run_federation, stage1_document, stage1_head

    live = (
        None if open_live is None else open_live(stage1_head(schema, seed=seed, run_name=run_name))
    )
    try:
        run = run_federation(
            coordinator, schema, min_sites=min_sites, rounds=rounds, seed=seed, flower=flower,
            run_name=run_name, progress=progress, secagg=secagg, on_round=live,
        )  # fmt: skip
    except BaseException:
        if live is not None:
            live.fail()
        raise
    return FederatedStage1(stage1_document(run, schema), run.run_dir / "result", live)
