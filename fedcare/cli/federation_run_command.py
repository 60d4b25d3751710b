"""``fedcare federation run``: Stage 1 over the registered sites; the Stage 1 document."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from fedcare.app.federation import federated_stage1
from fedcare.app.path_roles import store_file
from fedcare.cli import tracked
from fedcare.cli.options import bounded
from fedcare.cli.output import ProgressBars, privacy_line
from fedcare.sites.coordinator_state import READ_ENTRIES
from fedcare_core.config import MAX_CLIENTS, MAX_ROUNDS, MAX_SEED
from fedcare_core.config.fields import Range
from fedcare_core.errors import ConfigError
from fedcare_core.files.apart import check_outputs_apart
from fedcare_core.files.atomic import write_json_atomic
from fedcare_core.files.output_paths import check_output_file
from fedcare_core.files.safe_names import check_name
from fedcare_core.sites.schema import read_schema

if TYPE_CHECKING:
    from fedcare.tracking.stage1_run import LiveRounds

#: The Flower options ``federation run`` takes, by the flags that set them.
_FLAGS = {
    "round_timeout_s": "--round-timeout",
    "startup_timeout_s": "--startup-timeout",
    "min_per_round": "--min-sites-per-round",
    "round_deadline_s": "--round-deadline",
}


def cmd_federation_run(args: argparse.Namespace, coordinator: Any) -> int:
    """Check everything, run Stage 1 over the sites, write (and log) the Stage 1 document."""
    from fedcare.flower.flower_options import FlowerConfig, check_quorum_for
    from fedcare_core.algorithms import get_algorithm

    check_outputs_apart(
        {"--out": args.out},
        {
            "--schema": args.schema,
            "--state-dir": args.state_dir,
            "--tracking-uri": store_file(args.tracking_uri),
        },
        read_folders={"--state-dir": READ_ENTRIES},
    )
    check_output_file(args.out)
    if args.min_sites < 2:
        raise ConfigError(f"--min-sites {args.min_sites}: a federation needs at least 2 sites")
    bounded("--min-sites", args.min_sites, Range(2, MAX_CLIENTS))
    if args.min_sites_per_round is not None and args.min_sites_per_round < 2:
        raise ConfigError(
            f"--min-sites-per-round {args.min_sites_per_round}: a round needs at least 2 sites "
            "(one site's 'aggregate' is its own update)"
        )
    bounded("--rounds", args.rounds, Range(1, MAX_ROUNDS))
    bounded("--seed", args.seed, Range(0, MAX_SEED))
    if args.name is not None:
        check_name(args.name, "--name", "run name")  # STATE/runs/<name>/
    schema = read_schema(args.schema)
    schema.run_config(seed=args.seed, clients=args.min_sites, rounds=args.rounds)  # checks T
    flower = FlowerConfig(
        round_timeout_s=args.round_timeout,
        startup_timeout_s=args.startup_timeout,
        min_per_round=args.min_sites_per_round,
        round_deadline_s=args.round_deadline,
    ).validate(_FLAGS)
    check_quorum_for(
        (flower.min_per_round, flower.round_deadline_s), args.min_sites,
        get_algorithm(schema.config.algorithm).flower_strategy, args.secagg,
        ("--min-sites-per-round", "--round-deadline"),
    )  # fmt: skip
    coordinator.require_running()
    coordinator.sites()  # the state file checked before a store is made
    tracking = tracked.open_chosen_store(args.tracking_uri)
    name = args.name or time.strftime(f"fedcare-%Y%m%dT%H%M%S-seed{args.seed}")
    if not args.quiet:
        print(f"Waiting for {args.min_sites} site(s) …", file=sys.stderr)
    bars = ProgressBars(enabled=not args.quiet)
    try:
        run = federated_stage1(
            coordinator, schema, min_sites=args.min_sites, rounds=args.rounds, seed=args.seed,
            flower=flower, run_name=name, progress=bars, secagg=args.secagg,
            open_live=lambda head: _open_live_run(tracking, head),
        )  # fmt: skip
    finally:
        bars.close()
    document, live = run.document, run.live
    write_json_atomic(args.out, document)
    for note in document["notes"]:
        print(f"fedcare: stage 1: {note}", file=sys.stderr)
    last = document["rounds"][-1] if document["rounds"] else None
    lambdas = ", ".join(f"{k} {v:.4f}" for k, v in (last["lambda"] if last else {}).items())
    took_part = sorted({site for r in document["rounds"] for site in r["participant_sites"]})
    print(
        f"Stage 1 {name}: {document['rounds_run']} round(s) over {', '.join(took_part) or '-'} "
        f"(of {len(document['sites'])} registered); final λ*: {lambdas or '-'}"
    )
    if document.get("privacy"):
        print(privacy_line(document["privacy"]))
    print(f"Stage 1 document written to {args.out}")
    if live is not None:
        from fedcare.tracking.stage1_run import log_stage1_run

        run_id = log_stage1_run(document, run.result_dir, live=live)
        print(f"MLflow run {run_id} in {tracking}", file=sys.stderr)
    return 0


def _open_live_run(tracking: str | None, head: dict[str, Any]) -> LiveRounds | None:
    """The Stage 1's live MLflow view, its run opened at the first round (None: no tracking)."""
    if tracking is None:
        return None
    from fedcare.tracking import store
    from fedcare.tracking.stage1_run import LiveRounds, open_stage1_run

    store.configure(tracking)

    def open_run() -> str:
        run_id = open_stage1_run(head)
        print(f"MLflow run {run_id} in {tracking}: rounds logged as they end", file=sys.stderr)
        return run_id

    return LiveRounds(open_run, lambda text: print(f"fedcare: {text}", file=sys.stderr))
