"""Registered models named by what they predict and whom they serve, with tags and a description.

Names
    - ``fedcare-<dataset>-<algorithm>-<objectives>-client<k>``: client ``k``'s deployed model;
    - ``fedcare-<dataset>-<algorithm>-<objectives>-<site>``: a named site's own model
      (``fedcare site personalise --tracking-uri``, in the site's store);
    - ``fedcare-<dataset>-<algorithm>-<objectives>-backbone``: Stage 1's global model ``w*``.

    ``<objectives>`` are the objectives the model predicts, sorted and joined by ``+``
    (``readmission``, ``early_discharge+readmission``, ``early_discharge+los+readmission``). A
    client's objectives are drawn per seed, so client ``k`` of two seeds may predict different
    things: each gets its own registered model, every version of one registered model predicts
    the same outputs, and its ``champion`` is chosen among those versions only
    (:mod:`fedcare.tracking.client_registry`).

Registered-model tags
    ``belongs_to`` first (``client 0 · early_discharge``, ``site st-mary · readmission``,
    ``backbone · early_discharge+los+readmission``): the MLflow registry's list cuts long names
    before their last part and shows only a model's first three tags, so the tag that tells the
    models of one federation apart comes first (and sorts before ``fedcare.*``); then
    ``fedcare.objectives`` (sorted, comma-separated), ``fedcare.algorithm``, ``fedcare.dataset``,
    ``fedcare.outputs`` (the output columns, in output order), ``fedcare.model`` (``client``,
    ``site`` or ``backbone``), ``fedcare.input`` (``raw rows`` or ``encoded common features``)
    and ``fedcare.client`` or ``fedcare.site``. The description (Markdown) says the same in
    words: each output column and its objective's definition, whom the model serves, its inputs,
    and how ``champion`` is chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fedcare_core.data.clients import ClientData
from fedcare_core.errors import ConfigError
from fedcare_core.objectives import objective_kind
from fedcare_core.predict.package import interval_columns, output_column
from fedcare_core.run.results import ExperimentResult

#: Between the objectives of a name.
_OBJECTIVES_JOINER = "+"
#: Registered model names.
CLIENT_MODEL_TEMPLATE = "fedcare-{dataset}-{algorithm}-{objectives}-client{client}"
SITE_MODEL_TEMPLATE = "fedcare-{dataset}-{algorithm}-{objectives}-{site}"
BACKBONE_MODEL_TEMPLATE = "fedcare-{dataset}-{algorithm}-{objectives}-backbone"
#: Registered-model tags.
TAG_DATASET = "fedcare.dataset"
TAG_ALGORITHM = "fedcare.algorithm"
TAG_OBJECTIVES = "fedcare.objectives"
TAG_OUTPUTS = "fedcare.outputs"
TAG_MODEL = "fedcare.model"
TAG_INPUT = "fedcare.input"
TAG_CLIENT = "fedcare.client"
TAG_SITE = "fedcare.site"
#: Whose model it is and what it predicts, in a few words: the registry list's first tag.
TAG_BELONGS_TO = "belongs_to"
#: Between whose model it is and its objectives in :data:`TAG_BELONGS_TO`.
_BELONGS_SEPARATOR = " · "


def _rows(dataset: str) -> tuple[str, str]:
    """A dataset's display name and its scored rows in words (from the dataset registry)."""
    from fedcare_core.data.registry import registered

    spec = registered(dataset)
    if spec is None:
        return dataset, f"raw rows of the {dataset} dataset"
    return spec.title, spec.model_input


_CHAMPION = (
    "Every version predicts exactly these outputs; the `champion` alias marks the version with "
    "the best validation score among them, and moves only when a new version beats it."
)


def _objectives_label(objectives: Sequence[str]) -> str:
    """The objectives part of a name: sorted, joined by ``+`` (``early_discharge+readmission``).

    Raises
    ------
    ValueError
        For no objective.
    """
    if not objectives:
        raise ValueError("a model predicts at least one objective")
    return _OBJECTIVES_JOINER.join(sorted(objectives))


def client_model_name(dataset: str, algorithm: str, objectives: Sequence[str], client: int) -> str:
    """Registered model name of client ``client``'s deployed model predicting ``objectives``."""
    return CLIENT_MODEL_TEMPLATE.format(
        dataset=dataset,
        algorithm=algorithm,
        objectives=_objectives_label(objectives),
        client=client,
    )


def check_site_name(site: str) -> None:
    """Refuse a site name that would make a site's model name another model's.

    Raises
    ------
    ConfigError
        For ``backbone`` or ``client<k>``.
    """
    if site == "backbone" or (site.startswith("client") and site[6:].isdigit()):
        raise ConfigError(
            f"site name {site!r} would register its model as another model's name "
            f"(fedcare-<dataset>-<algorithm>-<objectives>-{site}); "
            "prepare the site under another --name to track it"
        )


def site_model_name(dataset: str, algorithm: str, objectives: Sequence[str], site: str) -> str:
    """Registered model name of site ``site``'s deployed model predicting ``objectives``.

    Raises
    ------
    ConfigError
        For a site name :func:`check_site_name` refuses.
    """
    check_site_name(site)
    return SITE_MODEL_TEMPLATE.format(
        dataset=dataset, algorithm=algorithm, objectives=_objectives_label(objectives), site=site
    )


def backbone_model_name(dataset: str, algorithm: str, objectives: Sequence[str]) -> str:
    """Registered model name of the backbone ``algorithm`` trained on ``dataset``."""
    return BACKBONE_MODEL_TEMPLATE.format(
        dataset=dataset, algorithm=algorithm, objectives=_objectives_label(objectives)
    )


@dataclass(frozen=True)
class _ModelCard:
    """A registered model's name, tags and description."""

    name: str
    tags: dict[str, str]
    description: str


def _outputs(
    result: ExperimentResult, objectives: Sequence[str], *, intervals: bool = True
) -> list[tuple[str, str, str]]:
    """(output column, objective, what it is) of each output column, in output order.

    Each objective's prediction, then (``intervals``: a client's model, not the backbone) each
    length-of-stay objective's interval ends
    (:attr:`~fedcare_core.predict.package.ModelPackage.output_columns`).
    """
    fed = result.federation
    out = []
    for s in objectives:
        objective = fed.objective(s)
        column = output_column(s, objective.kind)
        what = objective_kind(objective.kind).prediction
        definition = f"{what}: {objective.description}" if objective.description else what
        out.append((column, s, definition))
    for s in objectives if intervals else ():
        if objective_kind(fed.objective(s).kind).interval:
            low, high = interval_columns(s)
            what = "end of the prediction interval fitted on the client's validation rows, in days"
            out += [(low, s, f"lower {what}"), (high, s, f"upper {what}")]
    return out


def _table(outputs: list[tuple[str, str, str]]) -> list[str]:
    lines = ["| output column | objective | what it is |", "| --- | --- | --- |"]
    return lines + [f"| `{c}` | {s} | {what} |" for c, s, what in outputs]


def _common_tags(
    whose: str,
    result: ExperimentResult,
    objectives: Sequence[str],
    outputs: list[tuple[str, str, str]],
) -> dict[str, str]:
    """The tags every registered model has, in the order the registry list shows them."""
    return {
        TAG_BELONGS_TO: f"{whose}{_BELONGS_SEPARATOR}{_objectives_label(objectives)}",
        TAG_OBJECTIVES: ",".join(sorted(objectives)),
        TAG_ALGORITHM: result.config.algorithm,
        TAG_DATASET: result.federation.dataset,
        TAG_OUTPUTS: ",".join(c for c, _, _ in outputs),
    }


def client_card(
    result: ExperimentResult, client: ClientData, site_name: str | None = None
) -> _ModelCard:
    """The registered model of one client of a run (a named site's when given).

    Parameters
    ----------
    result
        The run.
    client
        One of ``result.federation.clients``: its model predicts its objectives, in its order.
    site_name
        The run is this site's own: its model is the site's (:func:`site_model_name`).

    Returns
    -------
    ModelCard
        Name, tags and description.
    """
    fed = result.federation
    objectives = tuple(client.objectives)
    outputs = _outputs(result, objectives)
    dataset, algorithm = fed.dataset, result.config.algorithm
    label, rows = _rows(dataset)
    if site_name is None:
        name = client_model_name(dataset, algorithm, objectives, client.client_id)
        who = {TAG_MODEL: "client", TAG_CLIENT: str(client.client_id)}
        whom = f"client {client.client_id} of a FedCARE federation"
        own = "the client's"
    else:
        name = site_model_name(dataset, algorithm, objectives, site_name)
        who = {TAG_MODEL: "site", TAG_SITE: site_name}
        whom = f"the site {site_name} of a FedCARE federation"
        own = "the site's"
    lines = [
        f"Predicts {', '.join(f'`{c}`' for c, _, _ in outputs)} for {whom} on {label} "
        f"(trained by {algorithm}; the model this {who[TAG_MODEL]} deploys).",
        "",
        *_table(outputs),
        "",
        f"**Input:** {rows}, as a pandas DataFrame; the common features and {own} private ones "
        "are read (each version's signature lists the columns), label and identifier columns "
        f"are ignored. The model applies {own} own preprocessing, fitted on its training rows "
        "and saved with it; loading it needs FedCARE installed (`--env-manager local`).",
        "",
        _CHAMPION,
        "",
        f"Use: `fedcare predict --model models:/{name}@champion --data rows.csv --out scores.csv`"
        f', or `mlflow.pyfunc.load_model("models:/{name}@champion").predict(rows)`.',
    ]
    whose = f"client {client.client_id}" if site_name is None else f"site {site_name}"
    tags = _common_tags(whose, result, objectives, outputs) | who | {TAG_INPUT: "raw rows"}
    return _ModelCard(name, tags, "\n".join(lines) + "\n")


def backbone_card(result: ExperimentResult) -> _ModelCard:
    """The registered model of a run's Stage 1 backbone ``w*`` (FedCARE, FedCARE-B)."""
    fed = result.federation
    objectives = tuple(o.name for o in fed.objectives)
    outputs = _outputs(result, objectives, intervals=False)
    label, _ = _rows(fed.dataset)
    name = backbone_model_name(fed.dataset, result.config.algorithm, objectives)
    lines = [
        f"Stage 1's global model `w*` (a shared backbone and one head per objective), trained by "
        f"{result.config.algorithm} over every client of a FedCARE federation on {label}: the "
        "starting point of each client's personalised model. Predicts one column per objective, "
        "in this order:",
        "",
        *_table(outputs),
        "",
        "**Input:** a float32 tensor of the encoded common features (one row per sample; each "
        "client encodes with its own encoders), not raw rows: to score raw rows use a client's "
        "registered model (`fedcare-<dataset>-<algorithm>-<objectives>-client<k>`).",
        "",
        _CHAMPION,
    ]
    tags = _common_tags("backbone", result, objectives, outputs) | {
        TAG_MODEL: "backbone",
        TAG_INPUT: "encoded common features",
    }
    return _ModelCard(name, tags, "\n".join(lines) + "\n")
