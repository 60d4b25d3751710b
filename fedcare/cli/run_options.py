"""``fedcare run``'s options (the command itself is :func:`fedcare.cli.main.cmd_run`).

The configuration's flags come from the settings' declarations
(:func:`fedcare.cli.setting_flags.add_setting_flags`); the others (data, backend, output,
run folder, sites) are the command's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedcare.cli.options import add_tracking_uri_option
from fedcare.cli.setting_flags import add_setting_flags

#: ``--preset``'s choices: the names of ``fedcare_core.config.presets.PRESETS`` (spelled here so
#: that building the parser imports no numerical library; a test keeps them equal).
PRESET_NAMES = ("paper", "recommended", "recommended-admission")


#: What ``fedcare federation init`` needs beside each preset (a flag to add, "": nothing): a
#: federation of sites cannot take pooled scaling (fedcare_core.sites.federation_rules; a test
#: keeps this equal to the presets' conflicts).
FEDERATION_PRESET_FIXES = {
    "paper": "",
    "recommended": "",
    "recommended-admission": "--scaling client",
}


def add_preset_option(parser: Any, *, federation: bool = False) -> None:
    """``--preset``: the starting configuration the other flags override.

    ``federation``: the help of ``fedcare federation init``, which offers the presets a
    federation of sites takes as they are, and each other one with the flag it needs.
    """
    if federation:
        plain = [p for p, fix in FEDERATION_PRESET_FIXES.items() if not fix]
        needing = [f"{p} with {fix}" for p, fix in FEDERATION_PRESET_FIXES.items() if fix]
        text = (
            f"starting configuration: {' or '.join(plain)} (paper: the default)"
            + (f"; {', '.join(needing)} (a federation takes it only so)" if needing else "")
            + "; docs/RESULTS.md; other flags win over it"
        )
    else:
        text = (
            "starting configuration: paper (default: FedCARE as the paper describes it), "
            "recommended (chosen on validation scores on the paper's partition) or "
            "recommended-admission (chosen on the admission-time partition; sets --features "
            "admission and --scaling federated); docs/RESULTS.md; other flags win over it"
        )
    parser.add_argument("--preset", choices=PRESET_NAMES, help=text)


def add_parser(sub: Any, backends: tuple[str, ...]) -> None:
    """``fedcare run``'s options."""
    run = sub.add_parser("run", help="run an experiment end to end")
    run.add_argument("--config", type=Path, help="JSON file with an ExperimentConfig; flags win")
    run.add_argument("--data-dir", help="dataset folder or file (default: $FEDCARE_DATA_DIR)")
    add_preset_option(run)
    add_setting_flags(run)
    run.add_argument(
        "--backend",
        choices=backends,
        default="local",
        help="where the method's federated rounds run: in process, Flower's Simulation "
        "Engine, or SuperLink/SuperNode processes on loopback (default local; a method "
        "without rounds over Flower runs in process only, and says so)",
    )
    _add_flower_flags(run)
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
        "Algorithm 1's methods a checkpoint after every Stage 1 round, and results.json at the end "
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


def _add_flower_flags(parser: Any) -> None:
    """The Flower options' flags, from their declarations (:class:`FlowerConfig`)."""
    from fedcare.cli.setting_flags import add_declared_flag
    from fedcare.flower.flower_options import flagged_options

    group = parser.add_argument_group("Flower backends (transport)")
    for ref in flagged_options():
        add_declared_flag(group, ref, required=False)
    group.add_argument(
        "--stock-supernodes",
        action="store_true",
        help="flower-deployment: run Flower's stock SuperNode loop (3 s idle polls, a fresh "
        "flwr-clientapp interpreter per message) instead of the warm, poll-capped one",
    )
