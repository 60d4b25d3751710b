"""Saved runs-table views and a description on the dataset's experiment, for comparing runs.

MLflow 3.17's runs table has no per-experiment default columns: a fresh browser shows Source,
Models and Dataset (the UI's hard-coded default; afterwards, what the user last chose, kept in
the browser). What an experiment *can* carry are saved views: an experiment tag
``mlflow.sharedViewState.<id>`` holding ``{"name", "createdAt", "updatedAt", "state"}``, with
``state`` the JSON of the view (``selectedColumns`` …). The UI lists them under the runs
table's "Views" menu and opens one from ``…/runs?viewStateShareKey=<id>`` (read from the UI
bundle, ``mlflow/server/js/build``: the saved-view envelope and the share-key loader).

Two views are kept up to date as runs are logged:

- :data:`RUNS_VIEW` ("FedCARE: test metrics"): the setting tag, K and T, and each objective's
  pooled and mean-over-clients test metric of the algorithm × seed runs;
- :data:`SEEDS_VIEW` ("FedCARE: mean over seeds"): the parent runs' mean and std over seeds of
  each algorithm's pooled test metrics.

Their columns only grow (a new objective or algorithm adds its own). The experiment's
description (``mlflow.note.content``, shown above the runs table) explains the metric names.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mlflow.tracking import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_RUN_NOTE

from fedcare.tracking import naming

#: The description tag (the same key on runs and experiments; the UI shows it above the table).
NOTE_TAG = MLFLOW_RUN_NOTE
#: Prefix of the experiment tags the MLflow UI reads saved views from.
VIEW_TAG_PREFIX = "mlflow.sharedViewState."
#: View id → display name.
RUNS_VIEW = "fedcare-test-metrics"
SEEDS_VIEW = "fedcare-mean-over-seeds"
_VIEW_NAMES = {RUNS_VIEW: "FedCARE: test metrics", SEEDS_VIEW: "FedCARE: mean over seeds"}
#: Columns every runs view starts with (the run's setting, K and T).
_BASE_COLUMNS = ("tags.`fedcare.setting`", "params.`data.clients`", "params.`stage1.rounds`")

#: The experiment's description (Markdown). A description that starts with
#: :data:`_DESCRIPTION_HEAD` is FedCARE's and kept up to date; any other is a person's, kept.
_DESCRIPTION_HEAD = "FedCARE runs."
DESCRIPTION = """\
FedCARE runs. Each flow run is a parent run named by what it ran
(`flow · <setting>[ + <setting>…] · seeds <list>`); under it one run per algorithm × seed,
named `seed<k> · <setting>`, where the setting (tag `fedcare.setting`) is
`<algorithm>-K<clients>-T<rounds>[-<variant>]` (the variant lists the settings that depart
from the defaults; `cfg<hash>` stands for any other departure, spelt out in the tag
`fedcare.variant`), and under that one `stage2-client<k>` run per client.

Charts: `lambda/<objective>` (λ* per round) first, then `stage1/…` (‖d‖², loss per
objective, participants per round). Metric keys name the objective and its metric, which is
the unit: `auroc` (higher is better) or `mae_days` (mean absolute error in days, lower is
better).

- `test/<objective>.<metric>.pooled`: over all the clients' test rows;
  `.mean_over_clients` / `.std_over_clients`: of each client's own test value;
- `test_by_client/<objective>.<metric>.client<k>`: client k's test value;
- on a parent run, `test_over_seeds/<algorithm>/<objective>.<metric>.<pooled|mean_over_clients>`
  `.mean` / `.std` (ddof 1) over its seeds, and `test_over_seeds/<algorithm>/seeds`; a parent
  of one setting also holds `test/<objective>.<metric>.<pooled|mean_over_clients>`: the mean
  over its seeds.

The "Views" menu above the runs table holds "FedCARE: test metrics" and "FedCARE: mean over
seeds", which show these columns. Each client's model is registered as
`fedcare-<dataset>-<algorithm>-<objectives>-client<k>` (the objectives it predicts, sorted,
joined by `+`); its registered-model tags and description say what it predicts and from what.
"""


def _metric_column(key: str) -> str:
    return f"metrics.`{key}`"


def runs_columns(objectives: Mapping[str, Any]) -> list[str]:
    """Columns of :data:`RUNS_VIEW` for a document's ``objectives`` section."""
    columns = list(_BASE_COLUMNS)
    for objective, rep in objectives.items():
        metric = rep.get("metric") if isinstance(rep, Mapping) else rep
        columns += [
            _metric_column(naming.test_key(objective, metric, field))
            for field in naming.SUMMARY_FIELDS
        ]
    return columns


def seeds_columns(summary_keys: Iterable[str]) -> list[str]:
    """Columns of :data:`SEEDS_VIEW`: the pooled mean and std among a parent's summary keys."""
    wanted = tuple(f".pooled.{stat}" for stat in naming.SUMMARY_STATS)
    return [_metric_column(k) for k in sorted(summary_keys) if k.endswith(wanted)]


def view_tag(view_id: str, columns: Sequence[str], existing: str | None, now_ms: int) -> str | None:
    """The tag value of a view holding ``columns`` (after the ones it has); ``None``: unchanged.

    Parameters
    ----------
    view_id
        :data:`RUNS_VIEW` or :data:`SEEDS_VIEW`.
    columns
        Columns the view must show (runs-table column keys, ``metrics.`<key>```).
    existing
        The tag's current value, if any (kept columns and creation time come from it).
    now_ms
        The update time.
    """
    created, old = now_ms, []
    if existing:
        try:
            envelope = json.loads(existing)
            created = int(envelope["createdAt"])
            old = list(json.loads(envelope["state"]).get("selectedColumns", []))
        except (ValueError, KeyError, TypeError, AttributeError):
            old = []  # not ours or damaged: rewrite it
    merged = old + [c for c in columns if c not in old]
    if existing and merged == old:
        return None
    state = json.dumps({"selectedColumns": merged})
    return json.dumps(
        {"name": _VIEW_NAMES[view_id], "createdAt": created, "updatedAt": now_ms, "state": state}
    )


def publish(mc: MlflowClient, experiment_id: str, view_id: str, columns: Sequence[str]) -> None:
    """Add ``columns`` to a saved view of the experiment; write or refresh its description.

    Parameters
    ----------
    mc
        The tracking client.
    experiment_id
        The dataset's experiment.
    view_id
        :data:`RUNS_VIEW` or :data:`SEEDS_VIEW`.
    columns
        Runs-table column keys (:func:`runs_columns`, :func:`seeds_columns`).
    """
    tags = mc.get_experiment(experiment_id).tags
    now = int(time.time() * 1000)
    value = view_tag(view_id, columns, tags.get(VIEW_TAG_PREFIX + view_id), now)
    if value is not None:
        mc.set_experiment_tag(experiment_id, VIEW_TAG_PREFIX + view_id, value)
    note = tags.get(NOTE_TAG)
    if note is None or (note.startswith(_DESCRIPTION_HEAD) and note != DESCRIPTION):
        mc.set_experiment_tag(experiment_id, NOTE_TAG, DESCRIPTION)
