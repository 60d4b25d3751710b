"""``fedcare federation init``: the coordinator writes the federation's schema, reading no data.

The schema (:class:`fedcare_core.sites.schema.FederationSchema`) comes from the dataset's
documented definition and the configuration alone: the configuration is built exactly as
``fedcare run`` builds it (:func:`fedcare.cli.run_options.build_config`, from ``--config`` and
the flags; those that are the sites' business, such as ``--clients``, are not options here),
ρ's feature choice is drawn with ``--seed``, and the file is written atomically.
Every site then prepares its own file against it (``fedcare site prepare --schema``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.app.path_roles import definition_file
from fedcare.cli.run_options import add_preset_option
from fedcare.cli.setting_flags import add_setting_flags, build_config
from fedcare_core.files.apart import check_outputs_apart
from fedcare_core.files.output_paths import check_output_file

if TYPE_CHECKING:
    from fedcare_core.sites.schema import FederationSchema


def add_init_parser(fed_sub: Any) -> None:
    """``fedcare federation init``'s options."""
    init = fed_sub.add_parser(
        "init",
        help="write the federation's schema (objectives, features, vocabularies, settings)",
        description="Write the schema every site prepares its data against; no data is read.",
    )
    init.add_argument(
        "--out", type=Path, required=True, metavar="federation.json", help="the schema file"
    )
    init.add_argument(
        "--config", type=Path, help="JSON file with an ExperimentConfig (as `fedcare run`)"
    )
    add_preset_option(init, federation=True)
    # What each run or site decides (clients, splits, subsampling, secure aggregation) is not
    # the schema's: those settings are not offered here.
    add_setting_flags(init, schema_only=True, required=("dataset",))


def cmd_federation_init(args: argparse.Namespace) -> int:
    """Write the schema to ``--out`` and describe it; the file is checked writable first.

    Raises
    ------
    ConfigError
        For an unwritable ``--out``, a bad config file or flag value, or an algorithm other
        than FedCARE (nothing is written).
    """
    # Imported here: ``fedcare federation --help`` must not load torch or pandas.
    from fedcare_core.files.atomic import write_json_atomic
    from fedcare_core.sites.federation_rules import check_preset_fits
    from fedcare_core.sites.schema import schema_for

    check_outputs_apart(
        {"--out": args.out},
        {"--config": args.config, "--dataset": definition_file(getattr(args, "dataset", None))},
    )
    check_output_file(args.out)
    config = build_config(args)
    if args.preset is not None:  # a preset setting what a federation refuses: named, with the fix
        check_preset_fits(args.preset, config, _given_flags(args))
    schema = schema_for(config)
    write_json_atomic(args.out, schema.to_dict())
    print(describe(schema))
    print(f"schema written to {args.out}: give it to every site (`fedcare site prepare --schema`)")
    return 0


def _given_flags(args: argparse.Namespace) -> set[str]:
    """The setting flags given on the command line (``--scaling``), by their option names."""
    return {
        "--" + name.replace("_", "-")
        for name, value in vars(args).items()
        if value is not None and name not in ("out", "config", "preset", "func", "command")
    }


def describe(schema: FederationSchema) -> str:
    """What the coordinator checks before sending the schema out: digest, objectives, features.

    Parameters
    ----------
    schema
        The schema.

    Returns
    -------
    str
        Lines naming the digest, the objectives, the common features (count and encoded width)
        and each objective's private pool size; nothing about any patient.
    """
    partition = schema.partition
    lines = [
        f"federation schema {schema.digest()}",
        f"  dataset: {schema.dataset}",
        f"  objectives: {', '.join(schema.objective_names)}",
        f"  feature set: {schema.config.data.features}",
        f"  common features: {len(partition.common)} (encoded width {schema.common_width()})",
    ]
    for name in schema.objective_names:
        lines.append(f"  private pool of {name}: {len(partition.private.get(name, ()))} features")
    return "\n".join(lines)
