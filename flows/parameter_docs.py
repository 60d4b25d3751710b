"""The deployed flows' parameter descriptions, in the one form Prefect's UI shows them.

Prefect 3.7.7 builds a deployment's parameter schema with
``prefect.utilities.callables.parameter_schema(flow)``, which reads per-parameter descriptions
from the flow function's docstring with griffe's *Google* parser only
(``parameter_docstrings``: ``parse(Docstring(doc), Parser.google)``). A numpy ``Parameters``
section gives no description at all, and a grouped entry (``clients, rounds, seeds``) would not
match a parameter in any style. ``typing.Annotated[..., pydantic.Field(description=...)]`` does
not work either: Prefect wraps every parameter in its own ``Field(description=None)``, which
replaces the annotation's (``prefect._internal.pydantic.v2_schema.process_v2_params``).

So each deployed flow's parameters are described here, one entry each, and
:func:`document_parameters` appends them to the flow function's (numpy-style) docstring as the
``Args:`` section Prefect parses, after checking that every parameter has an entry.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

_DATA_DIR = (
    "Dataset folder or file (null: the worker's FEDCARE_DATA_DIR; the weekly re-training "
    "schedule passes FEDCARE_RETRAIN_DATA_DIR)."
)
_COMMON = {
    "dataset": '"diabetes130" (Diabetes 130-US hospitals), "mimic3" (MIMIC-III), or the absolute '
    "path of a dataset definition file (FILE.yaml; docs/DATASETS.md).",
    "data_dir": _DATA_DIR,
    "tracking_uri": (
        "MLflow tracking URI (null: $MLFLOW_TRACKING_URI, the stack's MLflow server, else "
        "./mlflow/mlflow.db)."
    ),
    "verify_checksum": (
        "Check the Diabetes 130 file's published SHA-256 (false to train on new exports)."
    ),
}

#: ``fedcare`` (``flows.fedcare_flow.fedcare_pipeline``, deployed as ``fedcare/full-experiment``).
FEDCARE_PARAMETERS: Mapping[str, str] = {
    **_COMMON,
    "algorithm": (
        "An installed algorithm (FedCARE's by default, a baseline, a bound, or an outside "
        "package's: `fedcare run --help` lists them), or a list of them."
    ),
    "seeds": (
        "One seed or a list; each algorithm × seed is a nested MLflow run (backend federation: "
        "one Stage 1 over the sites per seed)."
    ),
    "preset": (
        'Starting configuration: "paper" (FedCARE as the paper describes it), "recommended" '
        '(chosen on validation scores on the paper\'s partition) or "recommended-admission" '
        "(chosen on the admission-time partition; sets features admission and scaling "
        "federated); docs/RESULTS.md; null: the configuration's (paper); the other parameters "
        "win over it."
    ),
    "backend": (
        'Where the Stage 1 rounds run: "local", "flower-sim" or "flower-deployment" on the '
        'partitioned dataset, or "federation": over the real sites registered with the running '
        "coordinator of federation_state_dir (no data loaded or checked here; fedcare only; "
        "data_dir, preset, config_file, overrides and every setting but rounds and secagg must "
        "stay null: the schema decides them; dataset must be the schema's; the data-check, "
        "Stage 2, registry and cache parameters do not apply)."
    ),
    "config_file": "A JSON ExperimentConfig file the other parameters override (null: defaults).",
    "overrides": 'Further configuration sections, e.g. {"stage1": {"solver": "slsqp"}}.',
    "register_model": (
        "Register each backbone in the MLflow model registry; the champion alias moves only "
        "to a backbone that validates better."
    ),
    "parallel_stage2": (
        "Run the per-client phase (Stage 2, Local's fits) in parallel worker processes "
        "(false: in the flow's process, in client order)."
    ),
    "reports_dir": "Folder of the data-check reports (a sub-folder per flow run).",
    "out_dir": (
        "Folder for each algorithm × seed's results.json (backend federation: each seed's "
        "Stage 1 document; null: none written)."
    ),
    "cache_stage1": (
        "Persist FedCARE's Stage 1 result under a key of its configuration, data and code, so "
        "that a retried or repeated flow run loads it (a Cached task run) instead of training."
    ),
    "stage1_cache_dir": (
        "The owner-only Stage 1 cache folder (null: $PREFECT_HOME/fedcare-stage1-cache)."
    ),
    "federation_state_dir": (
        "Backend federation only, and required there: the coordinator's state folder "
        "(fedcare federation start --state-dir)."
    ),
    "federation_schema": (
        "Backend federation only, and required there: the federation.json the sites were "
        "prepared for (fedcare federation init)."
    ),
    "min_sites": (
        "Backend federation only, and required there (at least 2): how many of the sites "
        "registered for the schema must be online; Stage 1 waits for them."
    ),
}


def google_args_section(descriptions: Mapping[str, str], names: list[str]) -> str:
    """The ``Args:`` section griffe's Google parser reads, one line per name.

    Lines are not wrapped: griffe keeps a continuation line's break in the description, and
    the Prefect UI would show it mid-sentence.

    Parameters
    ----------
    descriptions
        Parameter name → one-line description.
    names
        The parameters to list, in order.

    Returns
    -------
    str
        ``Args:`` then a line ``    name: description`` per name.
    """
    return "\n".join(["Args:", *(f"    {name}: {descriptions[name]}" for name in names)])


def document_parameters(descriptions: Mapping[str, str]) -> Callable[[F], F]:
    """Decorator (under ``@flow``): append the function's parameter descriptions for Prefect.

    Parameters
    ----------
    descriptions
        Parameter name → description; every parameter of the function needs one.

    Returns
    -------
    callable
        The decorator; it returns the function itself, its docstring extended.

    Raises
    ------
    TypeError
        When decorating, if a parameter has no description.
    """

    def decorate(fn: F) -> F:
        names = list(inspect.signature(fn).parameters)
        missing = [n for n in names if not descriptions.get(n)]
        if missing:
            raise TypeError(f"{fn.__name__}: no description for parameter(s) {missing}")
        doc = inspect.cleandoc(fn.__doc__ or "")
        fn.__doc__ = f"{doc}\n\n{google_args_section(descriptions, names)}\n"
        return fn

    return decorate
