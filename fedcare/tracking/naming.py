"""Names in MLflow that make runs comparable: run names and metric keys that carry their unit.

Run names
    ``seed<k> · <setting>``, e.g. ``seed0 · fedcare-K10-T100`` or
    ``seed2 · fedcare-K10-T100-rho0.5-dirichlet``: the seed first, so the runs table's narrow
    name column still shows which seed and algorithm a row is. The *setting* (tag
    ``fedcare.setting``) is ``<algorithm>-K<clients>-T<rounds>[-<variant>]``; the variant lists,
    in a fixed order, the settings that depart from the dataset's default
    :class:`~fedcare_core.config.ExperimentConfig` and matter for comparison (ρ, client split,
    solver, normalisation, QP scope, objectives per client, label options, calibration, patient
    cap, …); any other departure
    (learning rates, batch sizes, epochs) is folded into one ``cfg<hash>`` token, so two runs
    differ in name whenever their configurations differ in more than the seed.
    :func:`parse_run_name` reads a name back. A flow run's parent run is named by what it ran:
    ``flow · <setting>[ + <setting>…] · seeds <k>[-<k>|,<k>…]`` (:func:`parent_run_name`); a
    Stage 1 run over real sites ``seed<k> · <its run name>`` (:func:`stage1_run_name`).

Metric keys
    MLflow's UI puts a metric's chart in the section named by the key up to its last ``/``
    (no ``/``: "Model metrics", always shown after the named sections, which are sorted by
    name) and titles it with the rest; the runs table lists keys alphabetically. So λ* has its
    own section that sorts first, the other per-round traces follow, and the objective and its
    metric (the unit) are spelt out after the test sections:

    - ``lambda/<objective>`` (a run: λ*_s per round, step = round);
    - ``stage1/d_sq_norm``, ``stage1/loss.<objective>``, ``stage1/participants`` and, under DP,
      ``stage1/dp.epsilon`` (a run: per round);
    - ``test/<objective>.<metric>.<pooled|mean_over_clients|std_over_clients>`` (a run);
    - ``test_by_client/<objective>.<metric>.client<k>`` (a run, one per client);
    - ``test/<objective>.<metric>`` (a Stage 2 run: its client's test value);
    - ``test_over_seeds/<group>/<objective>.<metric>.<pooled|mean_over_clients>.<mean|std>``
      and ``test_over_seeds/<group>/seeds`` (a parent run; the group is the algorithm, or the
      setting when one parent holds several settings of an algorithm); a parent of one setting
      also carries ``test/<objective>.<metric>.<pooled|mean_over_clients>``: the mean over its
      seeds, so the runs table's test columns show it.

    ``<metric>`` is the results document's (``auroc``: higher is better; ``mae_days``: mean
    absolute error in days, lower is better). MLflow 3.17 has no metric descriptions (a
    :class:`~mlflow.entities.Metric` is key, value, timestamp, step); the unit also stays in the
    run tags ``fedcare.metric.<objective>``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.data.registry import dataset_names

#: Section of a run's test metrics per objective, and of a Stage 2 run's client test value.
_TEST_SECTION = "test"
#: Section of a run's per-client test metrics.
_CLIENT_SECTION = "test_by_client"
#: Section of a parent run's mean and std over seeds.
SEEDS_SECTION = "test_over_seeds"
#: Section of λ*_s per round (sorts before every other section of a run).
LAMBDA_SECTION = "lambda"
#: Section of the other per-round Stage 1 traces.
ROUNDS_SECTION = "stage1"
#: Between the parts of a run name.
_NAME_SEPARATOR = " · "
#: First part of a flow run's parent run name.
_FLOW_PREFIX = "flow"
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
    "data.readmission_exclude": lambda v: f"readm-excl-{v}",
    "data.early_discharge": lambda v: f"ed-{v}",
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
    "calibration": lambda v: f"cal-{v}",
}
#: Hex digits of the hash of the other departures.
_HASH_DIGITS = 4
#: A text value :func:`readable_variant` spells in a file name (else it goes in the hash).
_SPELT_WORD = 24
_PLAIN_WORD = re.compile(rf"[A-Za-z0-9._+-]{{1,{_SPELT_WORD}}}")
#: The longest run of spelt departures in a file name (beyond it: ``cfg<hash>`` alone).
_READABLE_MAX = 120


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{path}."))
        else:
            out[path] = list(value) if isinstance(value, tuple) else value
    return out


def _default_config(dataset: str) -> dict[str, Any]:
    """The default configuration of a dataset as a nested dict (any dataset name is accepted)."""
    data = DataConfig(dataset=dataset) if dataset in dataset_names() else DataConfig()
    return asdict(ExperimentConfig(data=data))  # with ``baselines``, which to_dict may drop


def _config_differences(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """Dotted key → value of every setting that departs from the dataset's defaults.

    Keys already in the run name (algorithm, seed, K, T) and ``threads`` are left out; so are
    keys the default does not have (a document of a newer configuration is still named).
    """
    default = _flat(_default_config(dataset))
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
    diffs = _config_differences(config, dataset)
    tokens = [fmt(diffs.pop(key)) for key, fmt in _VARIANT_TOKENS.items() if key in diffs]
    if diffs:
        blob = json.dumps(diffs, sort_keys=True, default=str).encode()
        tokens.append("cfg" + hashlib.sha256(blob).hexdigest()[:_HASH_DIGITS])
    return "-".join(tokens)


def _spelt(key: str, value: Any) -> str | None:
    """``stage2.epochs=2``: a departure as a file name can carry it, else None.

    A number, a boolean, null, a list of numbers or a plain word (letters, digits, ``._+-``,
    at most :data:`_SPELT_WORD` characters) is spelt exactly (floats by ``repr``: no two values
    share a spelling); anything else, or a word that reads as another value (``"null"``,
    ``"2"``), is left to the ``cfg<hash>`` token.
    """
    if value is None or isinstance(value, bool):
        text = json.dumps(value)
    elif isinstance(value, int | float):
        text = repr(value)
    elif (
        isinstance(value, list)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        text = "x".join(repr(v) for v in value)
    elif isinstance(value, str) and _PLAIN_WORD.fullmatch(value) and not _reads_as_json(value):
        text = value
    else:
        return None
    return f"{key}={text}"


def _reads_as_json(word: str) -> bool:
    """Whether a word would read back as a number, a boolean or null."""
    try:
        json.loads(word)
    except ValueError:
        return False
    return True


def readable_variant(config: Mapping[str, Any], dataset: str) -> str:
    """:func:`variant` with every other departure spelt out where it can be (file names).

    The named tokens come first, as in :func:`variant`; then each other departure as
    ``<key>=<value>`` (``stage2.epochs=2``, ``stage1.local_lr=0.01``; :func:`_spelt`), in key
    order; a departure that cannot be spelt (a long or unusual text, a nested value) is folded
    into one ``cfg<hash>`` token as before, and so are all of them when spelling them would
    make the name longer than :data:`_READABLE_MAX` characters. Two configurations that differ
    in more than the seed therefore never share a name.

    Parameters
    ----------
    config
        The run's configuration (``ExperimentConfig.to_dict()``).
    dataset
        Its dataset (selects the defaults).

    Returns
    -------
    str
        E.g. ``"n2000-stage2.epochs=1"`` or ``""`` for the defaults.
    """
    diffs = _config_differences(config, dataset)
    tokens = [fmt(diffs.pop(key)) for key, fmt in _VARIANT_TOKENS.items() if key in diffs]
    spelt = {key: _spelt(key, value) for key, value in diffs.items()}
    if len("-".join(t for t in spelt.values() if t)) > _READABLE_MAX:
        spelt = dict.fromkeys(spelt)  # too long to read: all in the hash
    tokens += [t for t in spelt.values() if t is not None]
    rest = {key: diffs[key] for key, token in spelt.items() if token is None}
    if rest:
        blob = json.dumps(rest, sort_keys=True, default=str).encode()
        tokens.append("cfg" + hashlib.sha256(blob).hexdigest()[:_HASH_DIGITS])
    return "-".join(tokens)


def describe_variant(config: Mapping[str, Any], dataset: str) -> str:
    """Every departure from the defaults, readable (``stage1.batch_size=32, …``; ``default``)."""
    diffs = _config_differences(config, dataset)
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


def config_setting_name(config: ExperimentConfig) -> str:
    """:func:`setting_name` of a configuration, before it runs."""
    return setting_name(
        {"algorithm": config.algorithm, "dataset": config.data.dataset, "config": config.to_dict()}
    )


def run_name(doc: Mapping[str, Any]) -> str:
    """``seed<k> · <setting>`` of a results document (see the module docstring)."""
    seed = doc.get("config", {}).get("seed")
    return f"seed{seed}{_NAME_SEPARATOR}{setting_name(doc)}"


def parse_run_name(name: str) -> tuple[int, str] | None:
    """The seed and setting of a :func:`run_name` (``None`` for any other name).

    Parameters
    ----------
    name
        A run's name, e.g. ``"seed3 · fedcare-K10-T100-rho0.5"``.

    Returns
    -------
    tuple of (int, str) or None
        ``(3, "fedcare-K10-T100-rho0.5")``.
    """
    head, sep, setting = name.partition(_NAME_SEPARATOR)
    number = head.removeprefix("seed")
    if not sep or not setting or head == number or not number.lstrip("-").isdigit():
        return None
    return int(number), setting


def seeds_label(seeds: Sequence[int]) -> str:
    """``seed 0``, ``seeds 0-9`` (consecutive) or ``seeds 0,3,5``, in increasing order."""
    ordered = sorted(set(seeds))
    if len(ordered) == 1:
        return f"seed {ordered[0]}"
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"seeds {ordered[0]}-{ordered[-1]}"
    return "seeds " + ",".join(str(s) for s in ordered)


def parent_run_name(settings: Sequence[str], seeds: Sequence[int]) -> str:
    """A flow run's parent run: ``flow · fedcare-K10-T100 + fedavg-K10-T100 · seeds 0-2``.

    Parameters
    ----------
    settings
        The settings it runs (:func:`setting_name`), in order; repeats are dropped.
    seeds
        Its seeds.
    """
    what = " + ".join(dict.fromkeys(settings)) or "nothing"
    return _NAME_SEPARATOR.join((_FLOW_PREFIX, what, seeds_label(seeds)))


def stage1_run_name(document: Mapping[str, Any]) -> str:
    """A Stage 1 document's run (``fedcare federation run``): ``seed<k> · <its run name>``.

    The document's own name (``fedcare-<time>[-<flow run>]-seed<k>``) loses its trailing
    ``-seed<k>``, which comes first instead.
    """
    seed = document["seed"]
    return f"seed{seed}{_NAME_SEPARATOR}{str(document['run_name']).removesuffix(f'-seed{seed}')}"


def lambda_key(objective: str) -> str:
    """λ*_s of a round: ``lambda/readmission``."""
    return f"{LAMBDA_SECTION}/{objective}"


def round_key(name: str) -> str:
    """Another per-round Stage 1 trace: ``stage1/d_sq_norm``, ``stage1/loss.los``."""
    return f"{ROUNDS_SECTION}/{name}"


def _metric_name(objective: str, metric: object) -> str:
    """``<objective>.<metric>``, e.g. ``los.mae_days``."""
    return f"{objective}.{metric}"


def test_key(objective: str, metric: object, field: str) -> str:
    """A run's test metric: ``test/readmission.auroc.pooled``."""
    return f"{_TEST_SECTION}/{_metric_name(objective, metric)}.{field}"


def client_key(objective: str, metric: object, client: object) -> str:
    """A run's per-client test metric: ``test_by_client/los.mae_days.client3``."""
    return f"{_CLIENT_SECTION}/{_metric_name(objective, metric)}.client{client}"


def stage2_test_key(objective: str, metric: object) -> str:
    """A Stage 2 run's test metric of its client: ``test/readmission.auroc``."""
    return f"{_TEST_SECTION}/{_metric_name(objective, metric)}"


def summary_key(group: str | None, objective: str, metric: object, field: str, stat: str) -> str:
    """A mean or std over seeds: ``test_over_seeds/fedcare/readmission.auroc.pooled.mean``.

    Without a group (a run that is one setting already): ``test_over_seeds/<objective>…``.
    """
    section = SEEDS_SECTION if group is None else f"{SEEDS_SECTION}/{group}"
    return f"{section}/{_metric_name(objective, metric)}.{field}.{stat}"


def seeds_key(group: str | None) -> str:
    """The number of seeds behind a summary: ``test_over_seeds/fedcare/seeds``."""
    return f"{SEEDS_SECTION}/seeds" if group is None else f"{SEEDS_SECTION}/{group}/seeds"
