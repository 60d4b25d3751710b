"""``fedcare federation run``: Stage 1 over the registered sites, ``w*`` broadcast at the end.

:func:`run_federation` waits until ``min_sites`` of the sites registered for the schema are
online, submits the FedCARE Flower App to the coordinator's SuperLink (``flwr run --stream``)
with a plan naming the sites in client-id order (sorted by name, as
:func:`fedcare_core.sites.client.federation_of_sites` orders them), waits for the rounds
(:func:`fedcare.flower.run_watch.watch_run`) and returns Stage 1's result. The ServerApp sends
``w*`` to every site still in the run before it writes the result (Algorithm 1, line 30).

The model's heads are the objectives the registered sites pursue, in the schema's order.
No round aggregates fewer than ``min_sites`` sites (the plan's floor; ``--min-sites-per-round``
may lower it, never to one site): a site refused by its policy, awaiting approval, failing,
silent past the round timeout or offline ends the run with one line naming the sites
(:func:`stopped_by_sites`) and no Stage 1 result.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fedcare.flower.deployment import write_app
from fedcare.flower.flower_options import FlowerConfig
from fedcare.flower.membership import SiteRefused
from fedcare.flower.results import (
    read_dp_releases,
    read_error,
    read_stage1_result,
    result_ready,
    round_to_dict,
)
from fedcare.flower.round_floor import TooFewSites
from fedcare.flower.run_plan import RunPlan
from fedcare.flower.run_watch import RunWatch, watch_run
from fedcare.flower.secagg import secure_plan
from fedcare.flower.workspace import FLWR_CONNECTION, write_private
from fedcare.procs.children import ProcessSupervisor, executable, signals_blocked
from fedcare.sites.coordinator import Coordinator, CoordinatorError, RegisteredSite
from fedcare_core.nn.training import ProgressFn
from fedcare_core.privacy.mechanism import privacy_record
from fedcare_core.sites.schema import FederationSchema
from fedcare_core.stage1.loop import Stage1Result

#: How the ServerApp's traceback ends when the sites stopped the run: a site's refusal, or
#: fewer sites than the minimum in a round (the class, then its one-line sentence).
_STOPPED_BY_SITES = tuple(f"{e.__module__}.{e.__qualname__}: " for e in (SiteRefused, TooFewSites))
#: How often the coordinator asks the SuperLink which sites are online while waiting.
_SITE_POLL_S = 2.0


@dataclass(frozen=True)
class FederationRun:
    """A finished Stage 1 over sites: its plan, its result and where its files are."""

    plan: RunPlan
    stage1: Stage1Result
    sites: tuple[RegisteredSite, ...]
    run_dir: Path
    wait_s: float
    stage1_s: float
    #: The Gaussian rounds the run released (its DP accountant's state; 0 without DP).
    dp_releases: int = 0


def run_sites(
    coordinator: Coordinator, schema: FederationSchema, min_sites: int, where: str = "--min-sites"
) -> tuple[RegisteredSite, ...]:
    """The registered sites of ``schema`` in client-id order (by name).

    ``where`` names ``min_sites`` in the message (the CLI's flag, a flow's parameter).

    Raises
    ------
    CoordinatorError
        If fewer than ``min_sites`` sites are registered for this schema.
    """
    digest = schema.digest()
    sites = sorted(
        (s for s in coordinator.sites().values() if s.schema_digest == digest),
        key=lambda s: s.name,
    )
    if len(sites) < min_sites:
        others = [s.name for s in coordinator.sites().values() if s.schema_digest != digest]
        also = f" ({', '.join(others)} registered for another schema)" if others else ""
        raise CoordinatorError(
            f"{where} {min_sites}: {len(sites)} site(s) are registered for this schema"
            f"{also}; register more with `fedcare federation register`"
        )
    return tuple(sites)


def _wait_for_sites(
    coordinator: Coordinator, sites: tuple[RegisteredSite, ...], min_sites: int, timeout_s: float
) -> float:
    """Wait until ``min_sites`` of ``sites`` are online; the seconds waited.

    Raises
    ------
    CoordinatorError
        Naming the sites still offline when the time is up.
    """
    started = time.monotonic()
    while True:
        online = coordinator.online_nodes()
        offline = [s.name for s in sites if s.node_id not in online]
        if len(sites) - len(offline) >= min_sites:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise CoordinatorError(
                f"{len(sites) - len(offline)} of the {min_sites} sites needed joined within "
                f"{timeout_s:g} s; offline: {', '.join(offline)} (each runs `fedcare site join`)"
            )
        time.sleep(_SITE_POLL_S)


def federation_plan(
    schema: FederationSchema,
    sites: tuple[RegisteredSite, ...],
    *,
    min_sites: int,
    rounds: int,
    seed: int,
    flower: FlowerConfig,
    result_dir: Path,
    run_name: str,
    secagg: bool = False,
) -> RunPlan:
    """The ServerApp's plan of a Stage 1 over ``sites`` (no patient data: names and settings)."""
    config = schema.run_config(seed=seed, clients=len(sites), rounds=rounds, secagg=secagg)
    pursued = {o for s in sites for o in s.objectives}
    return RunPlan(
        objectives=tuple((o.name, o.kind) for o in schema.objectives if o.name in pursued),
        common_width=schema.common_width(),
        model=config.model,
        stage1=config.stage1,
        seed=seed,
        num_clients=min_sites,
        result_dir=str(result_dir),
        min_sites=min_sites,
        round_timeout_s=flower.round_timeout_s,
        startup_timeout_s=flower.startup_timeout_s,
        pull_interval_s=flower.pull_interval_s,
        min_per_round=flower.min_per_round,
        round_deadline_s=flower.round_deadline_s,
        sites=tuple(s.name for s in sites),
        schema_digest=schema.digest(),
        broadcast=True,
        run_name=run_name,
        algorithm=config.algorithm,  # its rounds over Flower (Algorithm.federated_rounds)
        baselines=config.baselines,
        holders=tuple(
            (o.name, tuple(k for k, s in enumerate(sites) if o.name in s.objectives))
            for o in schema.objectives
            if o.name in pursued
        ),
    )


def run_federation(
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
    on_round: Callable[[dict[str, Any]], None] | None = None,
) -> FederationRun:
    """Stage 1 over the coordinator's registered sites (see the module's description).

    With ``secagg`` the rounds are summed by Flower's SecAgg+
    (:mod:`fedcare.flower.secagg_server`): the coordinator holds only per-objective sums.
    ``on_round`` is told each round's line of the round log as soon as the round ends (the
    live MLflow view).

    Raises
    ------
    CoordinatorError
        If the coordinator is not running, too few sites are registered or online.
    FlowerRunError
        If the run failed (the SuperLink died, no round finished in time, the ServerApp
        failed: the message says where to look). A site's refusal, and a round (or the
        start-up) with fewer sites than ``min_sites``, end it with a
        :class:`~fedcare.sites.coordinator.CoordinatorError` of one line naming the sites.
    """
    coordinator.require_running()
    sites = run_sites(coordinator, schema, min_sites)
    wait_s = _wait_for_sites(coordinator, sites, min_sites, flower.startup_timeout_s)
    run_dir = coordinator.new_run_dir(run_name)
    result_dir = run_dir / "result"
    result_dir.mkdir(mode=0o700)
    (run_dir / "logs").mkdir(mode=0o700)
    plan = federation_plan(
        schema, sites, min_sites=min_sites, rounds=rounds, seed=seed, flower=flower,
        result_dir=result_dir, run_name=run_name, secagg=secagg,
    )  # fmt: skip
    plan_path = write_private(run_dir / "plan.json", plan.to_json() + "\n")
    app = write_app(run_dir, plan_path, secure=secure_plan(plan))
    sup = ProcessSupervisor(run_dir / "logs", coordinator.env(), flower.shutdown_grace_s)
    started = time.monotonic()
    try:
        sup.start("flwr-run", [executable("flwr"), "run", str(app), FLWR_CONNECTION, "--stream"])
        first = flower.startup_timeout_s + flower.round_timeout_s + 60.0
        watch = RunWatch(
            result_dir=result_dir,
            supervisor=sup,
            superlink_alive=lambda: coordinator.running() is not None,
            superlink_log=lambda: _tail(coordinator.logs_dir / "superlink.log"),
            stall_limits=(first, 2 * flower.round_timeout_s + 60.0),
            run_timeout_s=flower.run_timeout_s,
            logs_dir=run_dir / "logs",
        )
        watch_run(watch, rounds, progress, on_round)
    finally:
        with signals_blocked():
            sup.stop_all(["flwr-run"])
    if not result_ready(result_dir):
        error = (read_error(result_dir) or "").strip().splitlines()
        stopped = stopped_by_sites(error[-1] if error else "")
        if stopped is not None:
            raise CoordinatorError(stopped)
        raise CoordinatorError(
            "Stage 1 over the sites produced no result"
            + (f":\n{error[-1]}" if error else f"; logs in {run_dir / 'logs'}")
        )
    stage1 = read_stage1_result(result_dir, plan)
    stage1_s = time.monotonic() - started
    return FederationRun(
        plan, stage1, sites, run_dir, wait_s, stage1_s, read_dp_releases(result_dir)
    )


def stopped_by_sites(last_line: str) -> str | None:
    """The sentence of a run the sites stopped, from its traceback's last line (else None).

    A site's policy refused the run (:class:`~fedcare.flower.membership.SiteRefused`), or a
    round, or the start-up, had fewer sites than the minimum
    (:class:`~fedcare.flower.round_floor.TooFewSites`): one line naming the sites.
    """
    for prefix in _STOPPED_BY_SITES:
        if last_line.startswith(prefix):
            return last_line.removeprefix(prefix)
    return None


def _tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def stage1_head(schema: FederationSchema, *, seed: int, run_name: str) -> dict[str, Any]:
    """What a Stage 1 document says before its first round (names its MLflow run)."""
    return {
        "run_name": run_name,
        "dataset": schema.dataset,
        "algorithm": schema.config.algorithm,
        "schema_digest": schema.digest(),
        "seed": seed,
    }


#: The ``format`` of a Stage 1 document.
STAGE1_FORMAT = "fedcare-stage1/1"


def stage1_document(run: FederationRun, schema: FederationSchema) -> dict[str, Any]:
    """The Stage 1 document: λ* and ‖d‖² per round, participants by site, settings, notes.

    Under differential privacy each round carries its ε, and a ``privacy`` section the
    mechanism, the accountant and the (ε, δ) spent
    (:func:`fedcare_core.privacy.mechanism.privacy_record`).
    """
    plan, stage1 = run.plan, run.stage1
    names = plan.sites
    digest = hashlib.sha256(stage1.params.tobytes() + stage1.buffers.tobytes()).hexdigest()
    dp = plan.stage1.privacy()
    sites = len(plan.client_ids) if plan.stage1.secagg else None  # SecAgg: the sites' noise
    contributors = [len(r.participants) for r in stage1.rounds if r.epsilon is not None]
    privacy = {}
    if dp is not None:
        record = privacy_record(dp, run.dp_releases, noise_sites=sites, contributors=contributors)
        privacy = {"privacy": record}
    return {
        "format": STAGE1_FORMAT,
        "run_name": plan.run_name,
        "dataset": schema.dataset,
        "algorithm": schema.config.algorithm,
        "schema_digest": plan.schema_digest,
        "seed": plan.seed,
        "config": {"model": asdict(plan.model), "stage1": asdict(plan.stage1)},
        "objectives": list(plan.objective_names),
        "sites": [
            {"name": s.name, "client_id": k, "objectives": list(s.objectives)}
            for k, s in enumerate(run.sites)
        ],
        "rounds": [
            round_to_dict(r) | {"participant_sites": [names[c] for c in r.participants]}
            for r in stage1.rounds
        ],
        "rounds_run": len(stage1.rounds),
        "converged": stage1.converged,
        "notes": list(stage1.notes),
        "w_star_sha256": digest,
        "secure_aggregation": plan.stage1.secagg,
        "participation": {
            "min_sites_per_round": plan.min_per_round,
            "round_deadline_s": plan.round_deadline_s,
            "round_timeout_s": plan.round_timeout_s,
        },
        "timing": {"wait_for_sites_s": run.wait_s, "stage1_s": run.stage1_s},
        **privacy,
    }
