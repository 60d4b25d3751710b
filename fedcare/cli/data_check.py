"""``fedcare data check`` and ``fedcare data schema``: a dataset definition against a file.

``check`` reads the definition (a built-in dataset's name or a definition file), loads the data
through the loader's checks and the raw table's Great Expectations suite (the same path every
run takes) and prints the profile the definition implies (:mod:`fedcare_core.data.profile`);
``--json FILE`` also writes it. ``schema`` prints the published JSON Schema of a definition
file. Nothing else is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fedcare.cli.setting_flags import add_declared_flag
from fedcare_core.config.limits import UNSEEN_CATEGORY_POLICIES


def add_parsers(data_sub: Any) -> None:
    """Register ``fedcare data check`` and ``fedcare data schema``."""
    check = data_sub.add_parser(
        "check",
        help="check a dataset definition against its file and print the profile it implies",
        description="Read a dataset definition (a built-in dataset or FILE.yaml), load its "
        "file(s) through every check a run makes, and print what FedCARE would train on: rows, "
        "patients, each objective's labels, each feature's availability, role in the "
        "partition, gaps and values (counts and quartiles only, never a row).",
    )
    check.add_argument(
        "--dataset", required=True, metavar="NAME|FILE.yaml", help="the dataset or definition"
    )
    check.add_argument(
        "--data-dir",
        metavar="D",
        help="the folder (or file) holding its data (default $FEDCARE_DATA_DIR, else beside "
        "the definition)",
    )
    check.add_argument("--features", default="paper", help="the feature set (default paper)")
    check.add_argument(
        "--unseen-categories",
        choices=UNSEEN_CATEGORY_POLICIES,
        default="refuse",
        help="a category outside its vocabulary: refuse (default) or encode as 'other'",
    )
    check.add_argument("--no-verify", action="store_true", help="skip a declared SHA-256")
    check.add_argument(
        "--private",
        type=Path,
        metavar="FILE.yaml",
        help="a site's own private columns (as `fedcare site prepare --private` takes them)",
    )
    check.add_argument(
        "--map",
        type=Path,
        metavar="FILE.yaml",
        help="a site's column map (as `fedcare site prepare --map` takes it)",
    )
    labels = check.add_argument_group("label options (the labels profiled, as a run defines them)")
    for ref in label_settings():
        add_declared_flag(labels, ref, required=False)
    check.add_argument("--json", type=Path, metavar="FILE", help="also write the profile here")
    data_sub.add_parser(
        "schema",
        help="print the JSON Schema of a dataset definition file",
        description="Print the published JSON Schema (draft 2020-12) a dataset definition "
        "file follows.",
    )


def cmd_check(args: argparse.Namespace) -> int:
    """Check the definition (with a site's own declarations) and its data; print the profile."""
    from fedcare.app.path_roles import DEFINITION_FOLDER, data_folder, dataset_inputs
    from fedcare.sites.site_input import definition_file
    from fedcare_core.config import DataConfig
    from fedcare_core.errors import ConfigError
    from fedcare_core.files.apart import check_outputs_apart

    DataConfig(
        dataset=args.dataset,
        features=args.features,
        unseen_categories=args.unseen_categories,
        **_label_options(args),
    ).validate()
    data_option, data = data_folder(args.data_dir)
    check_outputs_apart(
        {"--json": args.json},
        {**dataset_inputs(args.dataset), data_option: data, "--private": args.private,
         "--map": args.map},
        read_folders=(data_option, DEFINITION_FOLDER),
    )  # fmt: skip
    if args.json is not None and args.json.exists() and args.json.is_dir():
        raise ConfigError(f"--json {args.json}: a folder; give a file to write")
    with definition_file(_site_text(args)) as site:
        return _check(args, site or args.dataset)


def _site_text(args: argparse.Namespace) -> str | None:
    """The site's definition: the dataset's with ``--private`` and ``--map`` (every objective)."""
    from fedcare.sites.site_input import site_definition_text
    from fedcare_core.data.registry import get_dataset

    if args.private is None and args.map is None:
        return None
    spec = get_dataset(args.dataset)
    objectives = [o.name for o in spec.load_source().definition(args.features).objectives]
    return site_definition_text(
        spec.definition_text, args.dataset, objectives, args.private, args.map
    )


def _check(args: argparse.Namespace, dataset: str) -> int:
    from data_checks.source_checks import checked_dataset
    from fedcare.sites.export_columns import column_map_hint
    from fedcare_core.config import DataConfig
    from fedcare_core.data.loading import dataset_definition
    from fedcare_core.data.profile import profile_cohort
    from fedcare_core.data.registry import get_dataset
    from fedcare_core.errors import MissingColumnsError
    from fedcare_core.files.atomic import write_json_atomic

    data = DataConfig(
        dataset=dataset,
        features=args.features,
        unseen_categories=args.unseen_categories,
        **_label_options(args),
    )
    try:
        loaded = checked_dataset(data, args.data_dir, verify_checksum=not args.no_verify)
    except MissingColumnsError as exc:  # the columns, and how to map the file's own names
        built_in = not get_dataset(args.dataset).definition_text
        raise column_map_hint(
            exc, dataset=args.dataset, built_in=built_in, column_map=args.map
        ) from None
    definition = dataset_definition(dataset, args.features)
    times = _times(get_dataset(dataset).load_source())
    profile = profile_cohort(loaded.cohort, definition, loaded.source, times)
    print(profile.text())
    if args.json is not None:
        write_json_atomic(args.json, profile.to_dict())
        print(f"\nprofile written to {args.json}")
    return 0


def label_settings() -> list[Any]:
    """The declared settings that define the labels (readmission, exclusions, early discharge)."""
    from fedcare_core.config import flagged_settings

    wanted = ("readmission", "readmission_exclude", "early_discharge")
    return [ref for ref in flagged_settings().values() if (ref.section, ref.name) in
            {("data", name) for name in wanted}]  # fmt: skip


def _label_options(args: argparse.Namespace) -> dict[str, Any]:
    """The label options given on the command line (the others keep their defaults)."""
    return {
        ref.name: getattr(args, str(ref.dest))
        for ref in label_settings()
        if getattr(args, str(ref.dest), None) is not None
    }


def _times(source: Any) -> dict[str, str]:
    declaration = getattr(source, "declaration", None)
    if declaration is None:
        return {}
    return {c.name: str(c.known_at) for c in declaration.features}


def cmd_schema(_: argparse.Namespace) -> int:
    """Print the definition file's JSON Schema."""
    from fedcare_core.data.declared import definition_schema

    sys.stdout.write(json.dumps(definition_schema(), indent=2) + "\n")
    return 0
