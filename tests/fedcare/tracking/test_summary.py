"""Summary metrics over seeds on a parent run, from documents and from the MLflow runs."""

from __future__ import annotations

import copy
import statistics
from typing import Any

import pytest

from fedcare.tracking import log_run, store, summary

SEEDS = (0, 1, 2)

pytestmark = [
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),
]


def _seed_doc(doc: dict[str, Any], seed: int, algorithm: str = "fedcare") -> dict[str, Any]:
    """The logged run's document with another seed, algorithm and shifted test metrics."""
    out = copy.deepcopy(doc)
    out["algorithm"] = algorithm
    out["config"]["algorithm"] = algorithm
    out["config"]["seed"] = seed
    for i, rep in enumerate(out["objectives"].values()):
        rep["pooled"] = 0.5 + 0.1 * seed + 0.01 * i
        rep["mean_over_clients"] = 0.4 + 0.05 * seed * seed + 0.01 * i
    return out


@pytest.fixture(scope="module")
def flow(logged: Any) -> tuple[str, list[dict[str, Any]]]:
    """A parent with three fedcare seeds and one fedavg seed, logged from documents."""
    docs = [_seed_doc(logged.doc, s) for s in SEEDS] + [_seed_doc(logged.doc, 0, "fedavg")]
    store.configure(logged.uri)  # the package's store, whatever a test before pointed MLflow at
    parent = store.start_parent_run("synthetic", run_name="summary-flow")
    for doc in docs:
        log_run.log_experiment(doc, parent_run_id=parent, models=False)
    return parent, docs


def _expected(docs: list[dict[str, Any]], algorithm: str) -> dict[str, float]:
    mine = [d for d in docs if d["algorithm"] == algorithm]
    out = {f"test_over_seeds/{algorithm}/seeds": float(len(mine))}
    for objective, rep in mine[0]["objectives"].items():
        for field in ("pooled", "mean_over_clients"):
            values = [d["objectives"][objective][field] for d in mine]
            key = f"test_over_seeds/{algorithm}/{objective}.{rep['metric']}.{field}"
            out[f"{key}.mean"] = statistics.fmean(values)
            if len(values) > 1:
                out[f"{key}.std"] = statistics.stdev(values)
    return out


def test_the_parent_gets_mean_and_std_over_seeds_per_algorithm(flow):
    parent, docs = flow
    logged_values = summary.log_parent_summary(parent)
    expected = _expected(docs, "fedcare") | _expected(docs, "fedavg")
    assert logged_values.keys() == expected.keys()
    assert logged_values == pytest.approx(expected)
    metrics = store.client().get_run(parent).data.metrics
    assert {k: metrics[k] for k in expected} == pytest.approx(expected)
    assert "test_over_seeds/fedcare/los.mae_days.pooled.std" in metrics
    assert "test_over_seeds/fedavg/los.mae_days.pooled.std" not in metrics  # one seed


def test_documents_and_mlflow_runs_give_the_same_summary(flow):
    parent, docs = flow
    from_docs = summary.summary_metrics(summary.scores_from_doc(d) for d in docs)
    from_runs = summary.summary_metrics(
        summary.scores_from_run(r) for r in summary.child_runs(parent)
    )
    assert from_docs == pytest.approx(from_runs)


def test_several_settings_of_an_algorithm_are_grouped_by_setting(logged):
    a = _seed_doc(logged.doc, 0)
    b = copy.deepcopy(a)
    b["config"]["data"]["clients"] = 5
    values = summary.summary_metrics([summary.scores_from_doc(a), summary.scores_from_doc(b)])
    groups = {k.split("/")[1] for k in values}
    assert len(groups) == 2 and all(g.startswith("fedcare-K") for g in groups)


def test_a_parent_without_finished_runs_gets_nothing(logged):
    parent = store.start_parent_run("synthetic", run_name="empty-flow")
    assert summary.log_parent_summary(parent) == {}
    assert store.client().get_run(parent).data.metrics == {}


def test_the_task_logs_the_summary(flow, logged):
    from tasks.tracking import log_parent_summary_task

    parent, docs = flow
    assert log_parent_summary_task.fn(logged.uri, parent) == len(_expected(docs, "fedcare")) + len(
        _expected(docs, "fedavg")
    )


def test_a_parent_of_one_setting_fills_its_runs_columns_with_the_mean(logged):
    """The runs table shows the parent's row under the runs' own test columns, not '-'."""
    docs = [_seed_doc(logged.doc, s) for s in SEEDS]
    parent = store.start_parent_run("synthetic", run_name="one-setting-flow")
    for doc in docs:
        log_run.log_experiment(doc, parent_run_id=parent, models=False)
    values = summary.log_parent_summary(parent)
    run = store.client().get_run(parent)
    for objective, rep in docs[0]["objectives"].items():
        for field in ("pooled", "mean_over_clients"):
            key = f"test/{objective}.{rep['metric']}.{field}"
            mean = statistics.fmean(d["objectives"][objective][field] for d in docs)
            assert values[key] == pytest.approx(mean) == run.data.metrics[key]
            assert values[f"test_over_seeds/fedcare/{objective}.{rep['metric']}.{field}.mean"] == (
                pytest.approx(mean)
            )
    setting = summary.scores_from_doc(docs[0]).setting
    assert run.data.tags["fedcare.setting"] == setting
    assert (run.data.params["data.clients"], run.data.params["stage1.rounds"]) == ("3", "3")
    assert summary.log_parent_summary(parent) == values  # a retry logs the same again


def test_a_parent_of_several_settings_gets_no_mixed_column(flow):
    parent, docs = flow
    values = summary.log_parent_summary(parent)
    assert not [k for k in values if k.startswith("test/")]
    run = store.client().get_run(parent)
    settings = sorted({summary.scores_from_doc(d).setting for d in docs})
    assert run.data.tags["fedcare.setting"] == " + ".join(settings)
    assert run.data.params["data.clients"] == "3"  # shared by every run
