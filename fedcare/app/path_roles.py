"""What each command reads and writes, for the one check that outputs never replace inputs.

The check itself is :func:`fedcare_core.files.apart.check_outputs_apart`, which every command
that reads and writes files calls before any work. This module names the paths behind options
that are not plain paths (a ``sqlite:///`` store, a dataset given as a definition file and its
folder, the data folder's default, the files a sites list names) and holds the checks of
``fedcare run`` (:func:`check_run_paths`) and of an experiment grid, ``fedcare experiment``'s
and the flows' (:func:`check_grid_paths`), whose inputs are the most varied. Nothing here reads
a row.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedcare_core.errors import ConfigError
from fedcare_core.files.apart import PathLike, check_outputs_apart

__all__ = [
    "DEFINITION_FOLDER",
    "check_flow_paths",
    "check_grid_paths",
    "check_run_paths",
    "data_folder",
    "dataset_inputs",
    "definition_file",
    "sites_inputs",
    "store_file",
]


def store_file(tracking_uri: str | None) -> Path | None:
    """The database file of a ``sqlite:///`` store (None: no URI, or another kind of store)."""
    if not tracking_uri:
        return None
    from fedcare.tracking.local_artifacts import sqlite_path

    return sqlite_path(tracking_uri)


def definition_file(dataset: str | None) -> Path | None:
    """The definition file ``--dataset FILE.yaml`` names (None: a registered dataset)."""
    if not dataset:
        return None
    from fedcare_core.data.registry import is_definition_file

    return Path(dataset) if is_definition_file(dataset) else None


#: How messages name the folder of a definition file, where its data files are also looked for.
DEFINITION_FOLDER = "--dataset's folder"


def dataset_inputs(dataset: str | None) -> dict[str, PathLike]:
    """A definition file and its folder (its data files are looked for there too); or none."""
    file = definition_file(dataset)
    return {} if file is None else {"--dataset": file, DEFINITION_FOLDER: file.parent}


def data_folder(data_dir: PathLike) -> tuple[str, PathLike]:
    """The data folder (or file) a command reads, and how a message names it.

    ``--data-dir`` when given, else ``$FEDCARE_DATA_DIR`` (where every command then looks).
    """
    if data_dir:
        return "--data-dir", data_dir
    return "$FEDCARE_DATA_DIR", os.environ.get("FEDCARE_DATA_DIR") or None


def sites_inputs(sites: PathLike, schema: PathLike, option: str = "--sites") -> dict[str, PathLike]:
    """The files a sites list names (each site's data, private columns and column map).

    ``option``: how messages name the list. A list or schema that cannot be read gives none
    here: reading the sites refuses it, with its own message, before any row is read.
    """
    if sites is None or schema is None:
        return {}
    from fedcare.sites.site_input import read_sites_list
    from fedcare_core.sites.schema import read_schema

    try:
        entries = read_sites_list(Path(sites), read_schema(Path(schema)))
    except (ConfigError, OSError, ValueError):
        return {}
    found: dict[str, PathLike] = {}
    for entry in entries:
        where = f"{option} {sites} (site {entry.name}'s"
        found[f"{where} data)"] = entry.data
        found[f"{where} private columns)"] = entry.private
        found[f"{where} column map)"] = entry.column_map
    return found


def check_run_paths(args: argparse.Namespace) -> None:
    """``fedcare run``: ``--out`` and ``--run-dir`` apart from everything the run reads.

    The run reads ``--config``, the dataset's definition file, the data folder (or
    ``$FEDCARE_DATA_DIR``), ``--sites`` with every file it names, ``--schema``, the run folder
    of ``--resume`` and the ``--tracking-uri`` store; ``--run-dir`` is a new folder the run
    fills.

    Raises
    ------
    ConfigError
        One line naming the output's option and the input's.
    """
    data_option, data = data_folder(getattr(args, "data_dir", None))
    inputs: dict[str, PathLike] = {
        "--config": getattr(args, "config", None),
        **dataset_inputs(getattr(args, "dataset", None)),
        data_option: data,
        "--sites": args.sites,
        "--schema": args.schema,
        "--resume": args.resume,
        "--tracking-uri": store_file(args.tracking_uri),
        **sites_inputs(args.sites, args.schema),
    }
    folders = [data_option, DEFINITION_FOLDER, "--resume"]
    folders += [option for option in inputs if option.startswith("--sites ")]
    check_outputs_apart(
        {"--out": args.out, "--run-dir": args.run_dir},
        inputs,
        new_folders=("--run-dir",),
        read_folders=folders,
    )


def check_grid_paths(value: Callable[[str], Any], spell: Callable[[str], str], out: Path) -> None:
    """An experiment grid's output folder apart from everything it reads.

    Parameters
    ----------
    value
        An option's value by name (:meth:`fedcare.app.grid.GridRequest.value`).
    spell
        How messages name an option, by name (a flag, or a flow's parameter).
    out
        The output folder (given or default): it must not be an input, nor a file of a
        folder the grid reads.

    Raises
    ------
    ConfigError
        One line naming the output folder's option and the input's.
    """
    data_option, data = data_folder(value("data_dir"))
    data_option = spell("data_dir") if data_option == "--data-dir" else data_option
    dataset = {
        (spell("dataset") if option == "--dataset" else option): path
        for option, path in dataset_inputs(value("dataset")).items()
    }
    inputs: dict[str, PathLike] = {
        **dataset,
        data_option: data,
        spell("sites"): value("sites"),
        spell("schema"): value("schema"),
        spell("tracking_uri"): store_file(value("tracking_uri")),
        **sites_inputs(value("sites"), value("schema"), spell("sites")),
    }
    check_outputs_apart(
        {spell("out"): out},
        inputs,
        read_folders=[data_option, DEFINITION_FOLDER, *(o for o in inputs if "(site " in o)],
    )


def check_flow_paths(outputs: dict[str, PathLike], inputs: dict[str, PathLike]) -> None:
    """The ``fedcare`` flow's output folders apart from everything it reads.

    Parameters
    ----------
    outputs
        Each output folder's parameter (``out_dir``, ``reports_dir``, ``stage1_cache_dir``) →
        its path (None: not given).
    inputs
        ``data_dir`` (None: the worker's ``$FEDCARE_DATA_DIR``), ``dataset``, ``config_file``,
        ``federation_schema``, ``federation_state_dir`` and ``tracking_uri``, as given.

    Raises
    ------
    ConfigError
        One line naming the output's parameter and the input's.
    """
    data_option, data = data_folder(inputs.get("data_dir"))
    data_option = "data_dir" if data_option == "--data-dir" else data_option
    tracking_uri = inputs.get("tracking_uri")
    read: dict[str, PathLike] = {
        **{
            ("dataset" if option == "--dataset" else option): path
            for option, path in dataset_inputs(_text(inputs.get("dataset"))).items()
        },
        data_option: data,
        "config_file": inputs.get("config_file"),
        "federation_schema": inputs.get("federation_schema"),
        "federation_state_dir": inputs.get("federation_state_dir"),
        "tracking_uri": store_file(tracking_uri if isinstance(tracking_uri, str) else None),
    }
    check_outputs_apart(outputs, read, read_folders=[data_option, DEFINITION_FOLDER])


def _text(value: PathLike) -> str | None:
    return None if value is None else str(value)
