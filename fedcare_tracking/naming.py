"""Names in MLflow that make runs comparable: run names and metric keys that carry their unit.

Run names
    ``<algorithm>-K<clients>-T<rounds>[-<variant>]-seed<k>``, e.g. ``fedcare-K10-T100-seed0``
    or ``fedcare-K10-T100-rho0.5-dirichlet-seed2``. The variant lists, in a fixed order, the
    settings that depart from the dataset's default :class:`~fedcare_core.config.ExperimentConfig`
    and matter for comparison (ρ, client split, solver, normalisation, QP scope, objectives per
    client, patient cap, …); any other departure (learning rates, batch sizes, epochs) is folded
    into one ``cfg<hash>`` token, so two runs differ in name whenever their configurations
    differ in more than the seed. The seed comes last: sorted by name, the seeds of one setting
    sit together, and the name without it is the run's *setting* (tag ``fedcare.setting``).

Metric keys
    MLflow's UI puts a metric's chart in the section named by the key up to its last ``/``
    (no ``/``: "Model metrics") and titles it with the rest; the runs table lists keys
    alphabetically. So the objective and its metric (the unit) are spelt out after a section:

    - ``test/<objective>.<metric>.<pooled|mean_over_clients|std_over_clients>`` (a run);
    - ``test_by_client/<objective>.<metric>.client<k>`` (a run, one per client);
    - ``test/<objective>.<metric>`` (a Stage 2 run: its client's test value);
    - ``test_over_seeds/<group>/<objective>.<metric>.<pooled|mean_over_clients>.<mean|std>``
      and ``test_over_seeds/<group>/seeds`` (a parent run; the group is the algorithm, or the
      setting when one parent holds several settings of an algorithm).

    ``<metric>`` is the results document's (``auroc``: higher is better; ``mae_days``: mean
    absolute error in days, lower is better). MLflow 3.17 has no metric descriptions (a
    :class:`~mlflow.entities.Metric` is key, value, timestamp, step); the unit also stays in the
    run tags ``fedcare.metric.<objective>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from fedcare_core.config import DATASETS, DataConfig, ExperimentConfig

#: Section of a run's test metrics per objective, and of a Stage 2 run's client test value.
TEST_SECTION = "test"
#: Section of a run's per-client test metrics.
CLIENT_SECTION = "test_by_client"
#: Section of a parent run's mean and std over seeds.
SEEDS_SECTION = "test_over_seeds"
#: The document's per-objective summary fields logged on a run.
RUN_FIELDS = ("pooled", "mean_over_clients", "std_over_clients")
#: The fields a parent run summarises over seeds.
SUMMARY_FIELDS = ("pooled", "mean_over_clients")
#: Statistics over seeds on a parent run (std with ddof 1, as in the experiment tables).
SUMMARY_STATS = ("mean", "std")

#: Config keys that are in the name already, or do not change the numbers.
_NAMED = frozenset(
    {"algorithm", "seed", "threads", "data.dataset", "data.clients", "stage1.rounds"}
)
#: Settings spelt out in the variant, in this order: key → token of a non-default value.
_VARIANT_TOKENS: dict[str, Callable[[Any], str]] = {
    "data.rho": lambda v: f"rho{v:g}",
    "data.client_split": str,
    "data.dirichlet_alpha": lambda v: f"alpha{v:g}",
    "data.objectives_per_client": lambda v: f"m{v}",
    "data.cover_all_objectives": lambda v: "cover" if v else "nocover",
    "data.readmission": lambda v: f"readm-{v}",
    "data.max_patients": lambda v: "nall" if v is None else f"n{v}",
    "data.max_patients_per_client": lambda v: "capall" if v is None else f"cap{v}",
    "data.features": lambda v: f"features-{v}",
    "stage1.solver": str,
    "stage1.normalise": lambda v: f"norm-{v}",
    "stage1.qp_scope": lambda v: f"qp-{v}",
    "stage1.server_optimizer": lambda v: f"server-{v}",
    "stage2.solver": lambda v: f"s2-{v}",
    "stage1.dp_epsilon": lambda v: f"dp-eps{v:g}",
    "stage1.dp_noise_multiplier": lambda v: f"dp-z{v:g}",
    "stage1.dp_clip": lambda v: f"dp-clip{v:g}",
}
#: Hex digits of the hash of the other departures.
_HASH_DIGITS = 4


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{path}."))
        else:
            out[path] = list(value) if isinstance(value, tuple) else value
    return out


def default_config(dataset: str) -> dict[str, Any]:
    """The default configuration of a dataset as a nested dict (any dataset name is accepted)."""
    data = DataConfig(dataset=dataset) if dataset in DATASETS else DataConfig()
    return asdict(ExperimentConfig(data=data))  # with ``baselines``, which to_dict may drop


def config_differences(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """Dotted key → value of every setting that departs from the dataset's defaults.

    Keys already in the run name (algorithm, seed, K, T) and ``threads`` are left out; so are
    keys the default does not have (a document of a newer configuration is still named).
    """
    default = _flat(default_config(dataset))
    return {
        key: value
        for key, value in sorted(_flat(config).items())
        if key not in _NAMED and key in default and value != default[key]
    }


def variant(config: Mapping[str, Any], dataset: str) -> str:
    """The variant tokens of a configuration, joined by ``-`` (``""`` for the defaults).

    Parameters
    ----------
    config
        The run's configuration (``ExperimentConfig.to_dict()``, as in ``results.json``).
    dataset
        Its dataset (selects the defaults).

    Returns
    -------
    str
        E.g. ``"rho0.5-dirichlet-alpha0.1"``, ``"n600-cfg3fa2"`` or ``""``.
    """
    diffs = config_differences(config, dataset)
    tokens = [fmt(diffs.pop(key)) for key, fmt in _VARIANT_TOKENS.items() if key in diffs]
    if diffs:
        blob = json.dumps(diffs, sort_keys=True, default=str).encode()
        tokens.append("cfg" + hashlib.sha256(blob).hexdigest()[:_HASH_DIGITS])
    return "-".join(tokens)


def describe_variant(config: Mapping[str, Any], dataset: str) -> str:
    """Every departure from the defaults, readable (``stage1.batch_size=32, …``; ``default``)."""
    diffs = config_differences(config, dataset)
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in diffs.items()) or "default"


def setting_name(doc: Mapping[str, Any]) -> str:
    """``<algorithm>-K<clients>-T<rounds>[-<variant>]`` of a results document."""
    config = doc.get("config", {})
    data = config.get("data", {})
    parts = [
        str(doc["algorithm"]),
        f"K{data.get('clients', '?')}",
        f"T{config.get('stage1', {}).get('rounds', '?')}",
    ]
    tokens = variant(config, str(doc["dataset"]))
    return "-".join(parts + ([tokens] if tokens else []))


def run_name(doc: Mapping[str, Any]) -> str:
    """``<setting>-seed<k>`` of a results document (see the module docstring)."""
    return f"{setting_name(doc)}-seed{doc.get('config', {}).get('seed')}"


def metric_name(objective: str, metric: object) -> str:
    """``<objective>.<metric>``, e.g. ``los.mae_days``."""
    return f"{objective}.{metric}"


def test_key(objective: str, metric: object, field: str) -> str:
    """A run's test metric: ``test/readmission.auroc.pooled``."""
    return f"{TEST_SECTION}/{metric_name(objective, metric)}.{field}"


def client_key(objective: str, metric: object, client: object) -> str:
    """A run's per-client test metric: ``test_by_client/los.mae_days.client3``."""
    return f"{CLIENT_SECTION}/{metric_name(objective, metric)}.client{client}"


def stage2_test_key(objective: str, metric: object) -> str:
    """A Stage 2 run's test metric of its client: ``test/readmission.auroc``."""
    return f"{TEST_SECTION}/{metric_name(objective, metric)}"


def summary_key(group: str | None, objective: str, metric: object, field: str, stat: str) -> str:
    """A mean or std over seeds: ``test_over_seeds/fedcare/readmission.auroc.pooled.mean``.

    Without a group (a run that is one setting already): ``test_over_seeds/<objective>…``.
    """
    section = SEEDS_SECTION if group is None else f"{SEEDS_SECTION}/{group}"
    return f"{section}/{metric_name(objective, metric)}.{field}.{stat}"


def seeds_key(group: str | None) -> str:
    """The number of seeds behind a summary: ``test_over_seeds/fedcare/seeds``."""
    return f"{SEEDS_SECTION}/seeds" if group is None else f"{SEEDS_SECTION}/{group}/seeds"
