"""A model card for every client model FedCARE logs and registers (issue 31).

One self-contained HTML page per client model (figures embedded as PNG data URIs), written from
the run's result: what the model predicts and when, the federation and data it came from (counts,
sites, dates; no identifier, no row), its test metrics beside the federation's with their
clinical meaning, how its risks were calibrated and its length-of-stay intervals fitted,
calibration, ROC and precision-recall plots, subgroup results where the dataset declares
sensitive attributes, its limitations, and how it was chosen. The MLflow UI renders it among
the logged model's artifacts (``artifacts/client<k>.html``) and the run's
(``model_cards/client<k>.html``).
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import fedcare_core.data
from fedcare_core import __version__
from fedcare_core.config.preferences import Preference
from fedcare_core.data.registry import get_dataset
from fedcare_core.evaluation.clinical_rows import shown
from fedcare_core.evaluation.conformal import ConformalInterval
from fedcare_core.files.safe_yaml import load_yaml
from fedcare_core.objectives import objective_kind
from fedcare_core.predict.package import interval_columns
from fedcare_core.run.results import ExperimentResult

#: Folder of the run's model cards (one ``client<k>.html`` each).
RUN_CARDS_DIR = "model_cards"
_STYLE = (
    "body{font-family:sans-serif;max-width:60em;margin:1em auto;line-height:1.4}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .5em;"
    "text-align:right}th:first-child,td:first-child{text-align:left}h1{font-size:1.5em}"
    "h2{font-size:1.2em;border-bottom:1px solid #ddd}.note{color:#555;font-size:.9em}"
)
_BINARY_ROWS = (
    ("AUROC", "value", 3),
    ("AUPRC", "auprc", 3),
    ("Brier score", "brier", 4),
    ("Brier score of the base rate", "brier_reference", 4),
    ("calibration slope", "calibration_slope", 2),
    ("calibration intercept", "calibration_intercept", 2),
    ("ECE", "ece", 3),
    ("mean predicted risk", "mean_risk", 3),
    ("observed rate", "observed_rate", 3),
    ("threshold", "threshold", 3),
    ("sensitivity", "sensitivity", 3),
    ("specificity", "specificity", 3),
    ("PPV", "ppv", 3),
    ("NPV", "npv", 3),
    ("decision threshold (the loss's cost)", "decision_threshold", 3),
    ("sensitivity at the decision threshold", "decision_sensitivity", 3),
    ("specificity at the decision threshold", "decision_specificity", 3),
    ("net benefit at the decision threshold", "net_benefit", 3),
    ("net benefit of flagging everyone", "net_benefit_all", 3),
)


def _esc(value: object) -> str:
    return html.escape(str(value))


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    cells = "".join(f"<th>{_esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _objective_facts(definition: str | None, dataset: str) -> dict[str, Mapping[str, Any]]:
    """Each objective's entry of the dataset's definition (prediction time, label), by name.

    ``definition``: the text a package carries; None: the built-in dataset's file.
    """
    if not definition:
        builtin = Path(fedcare_core.data.__file__).parent / "definitions" / f"{dataset}.yaml"
        if not builtin.is_file():
            return {}
        definition = builtin.read_text(encoding="utf-8")
    doc = load_yaml(definition) or {}
    return {str(o.get("name")): o for o in doc.get("objectives", []) if isinstance(o, Mapping)}


def _test_predictions(result: ExperimentResult, index: int, objective: str) -> tuple[Any, Any]:
    client, predictor = result.federation.clients[index], result.predictors[index]
    test = client.test
    y = test.y[:, client.objectives.index(objective)]
    with torch.no_grad():
        p = predictor.predict_objective(
            torch.from_numpy(test.x_common), torch.from_numpy(test.x_private), objective
        )
    keep = np.isfinite(y)
    return y[keep], p[keep]


def _curves_png(y: np.ndarray, p: np.ndarray) -> str:
    """Calibration, ROC and precision-recall panels as a PNG data URI."""
    fig = Figure(figsize=(10.5, 3.3))
    cal, roc, pr = fig.subplots(1, 3)
    deciles = np.array_split(np.argsort(p, kind="stable"), min(10, len(p)))
    mean_p = [float(p[d].mean()) for d in deciles if len(d)]
    mean_y = [float(y[d].mean()) for d in deciles if len(d)]
    top = min(1.0, 1.1 * max(*mean_p, *mean_y, 0.05))
    cal.plot([0, top], [0, top], color="#999", lw=1)
    cal.plot(mean_p, mean_y, "o-")
    cal.set(title="calibration (deciles of risk)", xlabel="mean predicted risk",
            ylabel="observed rate", xlim=(0, top), ylim=(0, top))  # fmt: skip
    order = np.argsort(-p, kind="stable")
    hits = y[order] > 0.5
    tp, fp = np.cumsum(hits), np.cumsum(~hits)
    n_pos, n_neg = max(int(hits.sum()), 1), max(int((~hits).sum()), 1)
    roc.plot(np.r_[0, fp / n_neg], np.r_[0, tp / n_pos])
    roc.plot([0, 1], [0, 1], color="#999", lw=1)
    roc.set(title="ROC", xlabel="1 - specificity", ylabel="sensitivity")
    pr.plot(tp / n_pos, tp / np.arange(1, len(tp) + 1))
    pr.axhline(hits.mean() if len(hits) else 0.0, color="#999", lw=1)
    pr.set(title="precision-recall", xlabel="sensitivity", ylabel="PPV")
    fig.tight_layout()
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _metric_rows(doc: Mapping[str, Any], client_id: int) -> list[list[str]]:
    """The client's test value and the federation's pooled value of each metric.

    ``doc`` is the objective's entry of ``results.json``.
    """
    mine: Mapping[str, Any] = next((c for c in doc["clients"] if c["client"] == client_id), {})
    own = {"value": mine.get("value"), **mine.get("clinical", {})}
    pooled = {"value": doc.get("pooled"), **doc.get("clinical", {})}
    keys: Sequence[tuple[str, str, int]] = _BINARY_ROWS
    if doc["metric"] != "auroc":
        keys = [("MAE (days)", "value", 3), ("bias (days)", "bias_days", 2)]
        keys += [(f"MAE, stays of {k[9:]} d", k, 2) for k in pooled if k.startswith("mae_days_")]
        if "interval_coverage" in pooled:
            level = pooled.get("interval_level")
            nominal = "" if level is None else f" (nominal {100 * level:g} %)"
            keys += [
                (f"prediction interval coverage{nominal}", "interval_coverage", 3),
                ("prediction interval mean width (days)", "interval_width_days", 2),
            ]
    rows = [[label, shown(own.get(k), d), shown(pooled.get(k), d)] for label, k, d in keys]
    interval = (doc.get("intervals") or {}).get(doc["metric"]) or {}
    if interval.get("low") is not None and interval.get("high") is not None:
        rows[0][2] += f" [{interval['low']:.3f}, {interval['high']:.3f}]"
    return rows


def _subgroup_table(doc: Mapping[str, Any]) -> str:
    """The federation's subgroups of an objective: n, main metric (and sensitivity)."""
    rows = []
    for attribute, by_metric in (doc.get("subgroups") or {}).items():
        main = by_metric.get(doc["metric"], {})
        sens = {g["group"]: g["value"] for g in by_metric.get("sensitivity", {}).get("groups", [])}
        for g in main.get("groups", []):
            rows.append([attribute, g["group"], str(g["n"]), shown(g["value"], 3),
                         shown(sens.get(g["group"]), 3)])  # fmt: skip
    if not rows:
        return ""
    label = "AUROC" if doc["metric"] == "auroc" else "MAE (days)"
    head = ["attribute", "subgroup", "test rows", label, "sensitivity"]
    return (
        "<p><b>Subgroups</b> (the federation's pooled test rows; a gap counts subgroups of at "
        f"least 30 rows, 30 of each class for AUROC):</p>{_table(head, rows)}"
    )


def _days_output(name: str, column: str, interval: ConformalInterval | None) -> str:
    """The card's output line of a length-of-stay objective: its columns and interval."""
    low, high = (f"<code>{_esc(c)}</code>" for c in interval_columns(name))
    text = f"<p>Output: {column}, predicted length of stay, with {low} "
    if interval is None or not interval.available:
        why = interval.reason if interval is not None else "no interval was fitted"
        return text + f"and {high} empty (NaN): {_esc(why)}.</p>"
    return text + (
        f"and {high}, a {100 * interval.coverage:g} % prediction interval fitted on this site's "
        f"{interval.n} validation rows by split conformal prediction (a half-width of "
        f"{interval.quantile:.3f} in log(1 + days)). Over patients like this site's, it holds "
        f"the actual length of stay at least {100 * interval.coverage:g} % of the time: on "
        "average, not for each patient; the test coverage is below.</p>"
    )


def _preference_text(preference: Preference | None) -> str:
    """The card's line on the site's clinical preference for a binary objective."""
    if preference is None:
        return (
            "<p><b>Preference:</b> plain (the prediction loss); the decision threshold is the "
            "site's base rate.</p>"
        )
    if preference.kind == "sensitivity":
        return (
            f"<p><b>Preference:</b> sensitivity — a missed positive weighs {preference.weight:g} "
            "times more than under the plain loss, so the decision threshold is lower.</p>"
        )
    return (
        f"<p><b>Preference:</b> {_esc(preference.label)} — the training loss penalises "
        f"{preference.weight:g} × the gap in {_esc(preference.metric)} between the "
        f"{_esc(preference.attribute)} subgroups.</p>"
    )


def _objective_section(
    result: ExperimentResult,
    index: int,
    name: str,
    facts: Mapping[str, Any],
    doc: Mapping[str, Any],
) -> str:
    objective = next(o for o in result.federation.objectives if o.name == name)
    predictor = result.predictors[index]
    parts = [f"<h2>{_esc(name)}</h2>"]
    what = objective.description or name
    when = facts.get(name, {}).get("predicted_at", "not declared")
    parts.append(f"<p><b>Label:</b> {_esc(what)}. <b>Predicted at:</b> {_esc(when)}.</p>")
    kind = objective_kind(objective.kind)
    column = f"<code>{_esc(kind.prediction_column(name))}</code>"
    if kind.risk:
        parts.append(f"<p>Output: {column}, a calibrated risk.</p>")
        parts.append(_preference_text(result.federation.clients[index].preferences.get(name)))
    elif kind.interval:
        parts.append(_days_output(name, column, predictor.intervals.get(name)))
    else:
        parts.append(f"<p>Output: {column}, the {_esc(kind.prediction)}.</p>")
    rows = _metric_rows(doc[name], result.federation.clients[index].client_id)
    parts.append(_table(["metric (test)", "this model", "federation (pooled) [95% CI]"], rows))
    calibrator = predictor.calibration.get(name)
    if calibrator is not None:
        parts.append(f"<p><b>Calibration:</b> {_esc(calibrator.update)} — "
                     f"{_esc(calibrator.reason)}.</p>")  # fmt: skip
    if kind.risk:
        y, p = _test_predictions(result, index, name)
        if len(y) and 0 < y.sum() < len(y):
            parts.append(f'<img alt="curves of {_esc(name)}" src="{_curves_png(y, p)}">')
    parts.append(_subgroup_table(doc[name]))
    return "".join(parts)


def _limitations(result: ExperimentResult, index: int, doc: Mapping[str, Any]) -> list[str]:
    client = result.federation.clients[index]
    out = [
        "Evaluated on this site's held-out patients from the same sources and period as its "
        "training rows; it has not been validated externally or prospectively.",
        "A risk is calibrated to this site's case mix; recalibrate (or retrain) when the "
        "population, coding or practice changes.",
        "Decision support only: the thresholds reported are one chosen for a target "
        "sensitivity and the one the training loss's costs imply; a clinical decision's own "
        "costs are the site's to weigh.",
    ]
    for name in client.objectives:
        mine: Mapping[str, Any] = next(
            (c for c in doc[name]["clients"] if c["client"] == client.client_id), {}
        )
        clinical = mine.get("clinical", {})
        brier, ref = clinical.get("brier"), clinical.get("brier_reference")
        if brier is not None and ref is not None and brier >= ref:
            out.append(f"{name}: its Brier score ({brier:.4f}) is no better than the base "
                       f"rate's ({ref:.4f}) on this site's test rows.")  # fmt: skip
        if mine.get("n_test", 0) < 200:
            out.append(f"{name}: only {mine.get('n_test', 0)} test rows; its metrics are "
                       "uncertain.")  # fmt: skip
    return out


def model_card_html(result: ExperimentResult, index: int, *, written: dt.date | None = None) -> str:
    """The model card of the ``index``-th client's deployed model, as one HTML page.

    Parameters
    ----------
    result
        The run's result (its predictors are the deployed models).
    index
        Position of the client in ``result.federation.clients``.
    written
        The card's date (today by default).

    Returns
    -------
    str
        Self-contained HTML: no patient value, no identifier.
    """
    fed, config = result.federation, result.config
    client = fed.clients[index]
    spec = get_dataset(config.data.dataset)
    facts = _objective_facts(client.definition or spec.definition_text, config.data.dataset)
    written = written or dt.datetime.now(dt.UTC).date()
    rounds = len(result.stage1.rounds)
    data = [
        ["dataset", str(fed.dataset)],
        ["data file SHA-256", result.data_sha256[:16] + "…"],
        ["sites in the federation", str(len(fed.clients))],
        ["this site's rows (train / validation / test)",
         f"{client.train.n} / {client.val.n} / {client.test.n}"],
        ["features", f"{len(client.common_features)} common, "
                     f"{len(client.private_features)} private to this site"],
        ["federated rounds run", str(rounds)],
        ["written", f"{written.isoformat()} by FedCARE {__version__}"],
    ]  # fmt: skip
    chosen = (
        f"Trained by <b>{_esc(config.algorithm)}</b> (seed {config.seed}): the model this site "
        "deploys under that method (its personalised model for FedCARE, the global model for "
        "global methods). The registry makes a version champion only when its mean validation "
        "score beats the current champion's; test rows never choose a model. The full "
        "configuration is the run's parameters in MLflow."
    )
    doc = result.to_dict()["objectives"]
    sections = "".join(_objective_section(result, index, s, facts, doc) for s in client.objectives)
    limits = "".join(f"<li>{_esc(x)}</li>" for x in _limitations(result, index, doc))
    title = f"Model card: {fed.dataset}, {config.algorithm}, site {client.client_id}"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_esc(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{_esc(title)}</h1>"
        "<h2>Intended use</h2><p>Risk estimates for this site's patients, for the objectives "
        "below, at the time each is predicted; to support, not replace, clinical judgement. "
        "It reads the site's own rows with the preprocessing fitted on its training rows.</p>"
        f"<h2>Training data and federation</h2>{_table(['', ''], data)}"
        f"<p class='note'>Only model updates crossed the federation; no row left a site.</p>"
        f"{sections}<h2>Limitations</h2><ul>{limits}</ul>"
        f"<h2>How it was chosen</h2><p>{chosen}</p></body></html>"
    )
