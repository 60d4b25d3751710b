"""``fedcare run``'s options (the command itself is :func:`fedcare_cli.main.cmd_run`).

:data:`CONFIG_FLAGS` is the one mapping of command-line flags to configuration fields:
:func:`build_config` applies it for ``fedcare run`` and, over the flags it has, for ``fedcare
federation init``; :func:`add_training_options` adds the training flags both commands take.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fedcare_cli.options import add_tracking_uri_option, add_unseen_categories_option
from fedcare_core.algorithms import ALGORITHM_NAMES, validate_config
from fedcare_core.config import (
    CLIENT_SPLITS,
    DATASET_COHORTS,
    DATASETS,
    FEATURE_SETS,
    NORMALISATIONS,
    QP_SCOPES,
    READMISSION_DEFINITIONS,
    SERVER_OPTIMIZERS,
    SOLVERS,
    STAGE2_HEAD_INITS,
    ExperimentConfig,
    load_config_file,
)

#: Each flag that sets a configuration field (its ``argparse`` dest) → (section, key); the
#: section ``""`` is the top level.
CONFIG_FLAGS: dict[str, tuple[str, str]] = {
    "algorithm": ("", "algorithm"),
    "seed": ("", "seed"),
    "dataset": ("data", "dataset"),
    "clients": ("data", "clients"),
    "rho": ("data", "rho"),
    "split": ("data", "client_split"),
    "objectives_per_client": ("data", "objectives_per_client"),
    "readmission": ("data", "readmission"),
    "features": ("data", "features"),
    "cohort": ("data", "cohort"),
    "benchmark_split": ("data", "benchmark_split"),
    "max_patients": ("data", "max_patients"),
    "max_patients_per_client": ("data", "max_patients_per_client"),
    "unseen_categories": ("data", "unseen_categories"),
    "rounds": ("stage1", "rounds"),
    "local_steps": ("stage1", "local_steps"),
    "local_lr": ("stage1", "local_lr"),
    "global_lr": ("stage1", "global_lr"),
    "batch_size": ("stage1", "batch_size"),
    "solver": ("stage1", "solver"),
    "normalise": ("stage1", "normalise"),
    "qp_scope": ("stage1", "qp_scope"),
    "server_optimizer": ("stage1", "server_optimizer"),
    "dp_epsilon": ("stage1", "dp_epsilon"),
    "dp_delta": ("stage1", "dp_delta"),
    "dp_noise_multiplier": ("stage1", "dp_noise_multiplier"),
    "dp_clip": ("stage1", "dp_clip"),
    "dp_noise_seed": ("stage1", "dp_noise_seed"),
    "secagg": ("stage1", "secagg"),
    "stage2_epochs": ("stage2", "epochs"),
    "stage2_backbone_lr_scale": ("stage2", "backbone_lr_scale"),
    "stage2_prox": ("stage2", "prox"),
    "stage2_head_init": ("stage2", "head_init"),
}


def build_config(args: argparse.Namespace) -> ExperimentConfig:
    """Merge a config file (``args.config``, if any) with command-line flags into a config.

    Parameters
    ----------
    args
        The parsed command line: each of its :data:`CONFIG_FLAGS` that is not ``None`` sets its
        field; a flag left at ``None``, or one the command does not have (``fedcare federation
        init`` has no ``--clients``), keeps the file's (or the default) value.

    Returns
    -------
    ExperimentConfig
        The validated configuration (``--solver`` sets both stages' solver).

    Raises
    ------
    ConfigError
        For an unreadable config file or any invalid value, naming the parameter.
    """
    base = ExperimentConfig() if args.config is None else load_config_file(args.config)
    preset = getattr(args, "preset", None)
    if preset is not None:
        from fedcare_core.presets import with_preset

        base = with_preset(base, preset)
    sections: dict[str, dict[str, Any]] = {"": {}, "data": {}, "stage1": {}, "stage2": {}}
    for flag, (section, key) in CONFIG_FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None:
            sections[section][key] = value
    top = sections.pop("")
    if "solver" in sections["stage1"]:
        sections["stage2"]["solver"] = sections["stage1"]["solver"]
    return validate_config(base.with_overrides(**top, **sections))


def add_training_options(parser: Any) -> None:
    """The Stage 1 and Stage 2 flags (``--preset``, ``--rounds`` … ``--stage2-epochs``)."""
    parser.add_argument(
        "--preset",
        choices=("paper", "recommended"),
        help="starting configuration: paper (default: FedCARE as the paper describes it) or "
        "recommended (chosen on validation scores; docs/RESULTS.md); other flags win over it",
    )
    parser.add_argument("--rounds", type=int, help="Stage 1 rounds T (default 100)")
    parser.add_argument("--local-steps", type=int, help="τ (default 5)")
    parser.add_argument("--local-lr", type=float, help="η_l (default 0.001)")
    parser.add_argument("--global-lr", type=float, help="η_g (default 0.01)")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--solver", choices=SOLVERS)
    parser.add_argument("--normalise", choices=NORMALISATIONS)
    parser.add_argument("--qp-scope", choices=QP_SCOPES)
    parser.add_argument("--server-optimizer", choices=SERVER_OPTIMIZERS)
    parser.add_argument("--stage2-epochs", type=int)
    parser.add_argument(
        "--stage2-backbone-lr-scale",
        type=float,
        metavar="S",
        help="Stage 2's backbone learning rate as a share of its lr, in [0, 1] (0 freezes the "
        "backbone at w*; default 1, the paper)",
    )
    parser.add_argument(
        "--stage2-prox",
        type=float,
        metavar="MU",
        help="Stage 2 pull of the backbone toward w*: adds MU/2·‖w_b − w*_b‖² (default 0)",
    )
    parser.add_argument(
        "--stage2-head-init",
        choices=STAGE2_HEAD_INITS,
        help="Stage 2's personal heads start fresh (default, the paper) or as w*'s heads with "
        "zero private-input weights; 'global' also keeps w* when no epoch improves validation",
    )
    add_privacy_options(parser)


def add_privacy_options(parser: Any) -> None:
    """The client-level differential-privacy flags (``--dp-epsilon`` … ``--dp-noise-seed``)."""
    dp = parser.add_argument_group(
        "client-level differential privacy of the rounds (fedcare, fedcare-b, fedavg, fedprox, "
        "fmgda, fsmgda; docs/PRIVACY.md)"
    )
    dp.add_argument(
        "--dp-epsilon",
        type=float,
        help="privacy budget ε: the noise multiplier is derived so that the run's rounds "
        "spend at most this much (with --dp-noise-multiplier: refuse a run that would exceed it)",
    )
    dp.add_argument("--dp-delta", type=float, help="δ of the reported (ε, δ) (default 1e-5)")
    dp.add_argument(
        "--dp-noise-multiplier",
        type=float,
        help="noise multiplier z: Gaussian noise of standard deviation z·C on every per-"
        "objective sum, each round (ε is reported after every round)",
    )
    dp.add_argument(
        "--dp-clip",
        type=float,
        help="C: the bound on the L2 norm of everything one client sends in a round, all its "
        "objectives' updates together (default 1.0)",
    )
    dp.add_argument(
        "--dp-noise-seed",
        type=int,
        help="seed the noise (a reproducible research run; anyone with the seed can remove the "
        "noise, so never for a model you release). Default: fresh OS entropy",
    )


def add_features_option(parser: argparse.ArgumentParser) -> None:
    """``--features``: the paper's partition, or what each objective knows when predicted."""
    parser.add_argument(
        "--features",
        choices=FEATURE_SETS,
        help="feature set (default paper): 'admission' limits early discharge and LOS to what is "
        "known at admission and gives readmission the discharge-time features (Diabetes 130)",
    )


def add_cohort_option(parser: argparse.ArgumentParser) -> None:
    """``--cohort``: which MIMIC-III stays and feature window."""
    parser.add_argument(
        "--cohort",
        choices=sorted({c for cs in DATASET_COHORTS.values() for c in cs}),
        help="MIMIC-III cohort (default all-adult-24h: every adult ICU stay, first 24 h; "
        "benchmark-ihm: the MIMIC-III benchmark's in-hospital-mortality rules, first 48 h)",
    )


def add_parser(sub: Any, backends: tuple[str, ...]) -> None:
    """``fedcare run``'s options."""
    run = sub.add_parser("run", help="run an experiment end to end")
    run.add_argument("--config", type=Path, help="JSON file with an ExperimentConfig; flags win")
    run.add_argument("--dataset", choices=DATASETS)
    run.add_argument("--data-dir", help="dataset folder or file (default: $FEDCARE_DATA_DIR)")
    run.add_argument("--algorithm", choices=ALGORITHM_NAMES)
    run.add_argument("--clients", type=int, help="number of clients K (default 10)")
    run.add_argument("--seed", type=int, help="experiment seed (default 0)")
    run.add_argument("--rho", type=float, help="feature disparity ratio in (0, 1)")
    run.add_argument("--split", choices=CLIENT_SPLITS, help="client split (default iid)")
    run.add_argument("--objectives-per-client", type=int)
    run.add_argument("--readmission", choices=READMISSION_DEFINITIONS)
    add_features_option(run)
    add_cohort_option(run)
    _add_patient_options(run)
    add_unseen_categories_option(run)
    add_training_options(run)
    run.add_argument(
        "--backend",
        choices=backends,
        default="local",
        help="where Stage 1 (or FedAvg/FedProx/FMGDA/FSMGDA's rounds) runs: in process, "
        "Flower's Simulation Engine, or SuperLink/SuperNode processes on loopback "
        "(default local; PAFNet, local and centralised: local only)",
    )
    run.add_argument(
        "--secagg",
        action="store_true",
        default=None,
        help="sum each Stage 1 round with Flower's SecAgg+ (flower-sim, flower-deployment; "
        "fedcare, fedcare-b): the server only ever holds per-objective sums (docs/PRIVACY.md)",
    )
    run.add_argument(
        "--round-timeout",
        type=float,
        help="Flower backends: seconds to wait for clients' replies in a round (default 600)",
    )
    run.add_argument(
        "--startup-timeout",
        type=float,
        help="Flower backends: seconds to wait for all clients to connect (default 180)",
    )
    run.add_argument(
        "--stock-supernodes",
        action="store_true",
        help="flower-deployment: run Flower's stock SuperNode loop (3 s idle polls, a fresh "
        "flwr-clientapp interpreter per message) instead of the warm, poll-capped one",
    )
    run.add_argument(
        "--insecure",
        action="store_true",
        help="flower-deployment: plain HTTP between the Flower processes instead of TLS with a "
        "per-run certificate authority (the default)",
    )
    run.add_argument(
        "--node-auth",
        action="store_true",
        help="flower-deployment: SuperNode authentication; the SuperLink admits only nodes "
        "whose per-run public key was registered with it (needs TLS)",
    )
    run.add_argument(
        "--bind-address",
        metavar="IP",
        help="flower-deployment: the IPv4 address of this machine the SuperLink listens on "
        "and its certificate names (default 127.0.0.1; another address needs TLS)",
    )
    run.add_argument(
        "--keep-workdir",
        action="store_true",
        help="Flower backends: keep the run folder (logs, per-client data) for debugging",
    )
    run.add_argument(
        "--out",
        type=Path,
        help="write the results document here (default, without --run-dir or --resume: "
        "results/<dataset>-<setting>-seed<seed>.json, the setting as the MLflow run names it)",
    )
    add_tracking_uri_option(run, "to log the run, its models and registry versions to")
    run.add_argument("--no-verify", action="store_true", help="skip the dataset checksum")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    keep = run.add_mutually_exclusive_group()
    keep.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="keep the run's state in DIR (new or empty; owner-only): config.json, for "
        "fedcare/fedcare-b a checkpoint after every Stage 1 round, and results.json at the end "
        "(other algorithms: config and results only; --resume reruns them from the start); "
        "any --backend",
    )
    keep.add_argument(
        "--resume",
        type=Path,
        metavar="DIR",
        help="continue the run kept in DIR (by --run-dir) from its last checkpoint, to the "
        "uninterrupted run's results; takes no other option but --out, --quiet and --tracking-uri",
    )
    _add_sites_options(run)


def _add_patient_options(run: Any) -> None:
    """Which patients a run keeps: a published test split, a subsample, a cap per client."""
    run.add_argument(
        "--benchmark-split",
        metavar="DIR",
        help="with --cohort benchmark-ihm: the benchmark's in-hospital-mortality folder "
        "(train/listfile.csv, test/listfile.csv); its test patients are every client's test set",
    )
    run.add_argument("--max-patients", type=int, help="subsample the cohort (quick trials)")
    run.add_argument(
        "--max-patients-per-client",
        type=int,
        metavar="N",
        help="keep at most N patients of each client, drawn at random (small hospitals)",
    )


def _add_sites_options(run: Any) -> None:
    """``--sites`` and ``--schema``: a federation of sites from their own files."""
    sites = run.add_argument_group(
        "sites",
        "a federation of sites from their own files (as `fedcare site prepare` prepares each "
        "one), in process or on --backend; the schema gives the configuration: only --seed, "
        "--rounds and the output and backend options may be added",
    )
    sites.add_argument(
        "--sites",
        type=Path,
        metavar="SITES.json",
        help='a JSON list of {"data": FILE, "objectives": [...], "name": NAME} (as '
        "`fedcare data split-sites` writes); needs --schema",
    )
    sites.add_argument(
        "--schema",
        type=Path,
        metavar="federation.json",
        help="the federation's schema (`fedcare federation init`)",
    )
