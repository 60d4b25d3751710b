"""``fedcare data split-sites``: one cohort file split by patient into one CSV per hospital.

For trying a multi-site federation on one machine: each simulated hospital gets its own file
(all of a patient's encounters at one site) and ``sites.json`` lists each site's file and
objectives. The output is patient-level data: the folder is owner-only and nothing printed
names a patient.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fedcare.cli.options import bounded
from fedcare_core.config import MAX_CLIENTS, MAX_SEED
from fedcare_core.config.fields import Range
from fedcare_core.data.registry import dataset_names, get_dataset
from fedcare_core.errors import ConfigError
from fedcare_core.files.apart import check_outputs_apart


def _splittable() -> tuple[str, ...]:
    """The datasets split-sites can split (the others are refused with a clear message)."""
    return tuple(name for name in dataset_names() if get_dataset(name).site_files)


def add_parser(data_sub: Any) -> None:
    """Register ``fedcare data split-sites`` under ``fedcare data``'s subcommands."""
    split = data_sub.add_parser(
        "split-sites",
        help="split a cohort file by patient into one CSV per simulated hospital",
        description="Split a cohort file by patient into one CSV per simulated hospital "
        "(every encounter of a patient at one site), plus sites.json listing each site's file "
        "and objectives. The output folder is created owner-only (0700, files 0600).",
    )
    split.add_argument(
        "--dataset", required=True, choices=dataset_names(), help="the cohort's dataset"
    )
    split.add_argument(
        "--data",
        required=True,
        type=Path,
        metavar="D",
        help="diabetic_data.csv, a .zip holding it, or a folder holding either",
    )
    split.add_argument("--sites", required=True, type=int, metavar="N", help="how many sites (≥ 2)")
    split.add_argument("--seed", required=True, type=int, help="seed of the split and objectives")
    split.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="a new (or empty) folder for site-<i>.csv and sites.json",
    )
    split.add_argument(
        "--objectives-per-site",
        type=int,
        default=1,
        metavar="M",
        help="objectives drawn for each site (default 1)",
    )


def cmd_split_sites(args: argparse.Namespace) -> int:
    """``fedcare data split-sites``: check every option and --out, then read, split and write."""
    from fedcare_core.data.diabetes130 import DIABETES130_OBJECTIVES
    from fedcare_core.data.diabetes130.source import find_diabetes130, read_source
    from fedcare_core.data.site_split import (
        MIN_SITES,
        check_out_dir,
        decode_csv,
        draw_site_objectives,
        split_sites,
        write_sites,
    )
    from fedcare_core.files.private import keep_out_of_git

    if args.dataset not in _splittable():
        raise ConfigError(
            f"--dataset {args.dataset}: split-sites supports {', '.join(_splittable())} only"
        )
    # Bounded before the draw: 10**9 sites would be drawn objectives before the file is read.
    bounded("--sites", args.sites, Range(MIN_SITES, MAX_CLIENTS))
    bounded("--seed", args.seed, Range(0, MAX_SEED))
    names = tuple(o.name for o in DIABETES130_OBJECTIVES)
    objectives = draw_site_objectives(
        args.dataset, names, args.sites, args.objectives_per_site, args.seed
    )
    check_outputs_apart(
        {"--out": args.out}, {"--data": args.data}, new_folders=("--out",), read_folders=("--data",)
    )
    check_out_dir(args.out)
    data, name = read_source(find_diabetes130(args.data))
    sites = split_sites(decode_csv(data, name), args.sites, args.seed, name=name)
    manifest = write_sites(sites, objectives, args.out)
    keep_out_of_git(args.out, "the sites' files (patient rows)", folder=True)
    for site in sites:
        print(
            f"{site.name}: {site.patients:,} patients, {site.encounters:,} encounters "
            f"-> {args.out / site.file_name}"
        )
    print(args.out / manifest.name)
    return 0
