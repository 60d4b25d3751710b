from __future__ import annotations

import json
import re
import struct

import mlflow.models
import mlflow.pyfunc
import mlflow.pytorch
import numpy as np
import pytest
import torch

from fedcare.tracking import log_run, naming, store
from fedcare.tracking.mlflow_params import flatten_params
from fedcare_core import __version__
from fedcare_core.nn.cpu_kernels import kernel_path
from fedcare_core.objectives import predict
from fedcare_core.run.packaging import client_package
from fedcare_core.stage1.loop import load_global_model
from tests.fedcare.tracking.conftest import FLOW_RUN_ID, PATIENT_OFFSET, artifact_dir

pytestmark = [
    pytest.mark.filterwarnings("ignore:No complete tensor found:UserWarning"),
    pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning"),
]


def _children(client, run_id):
    runs = client.search_runs(
        [client.get_run(run_id).info.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
    )
    return sorted(runs, key=lambda r: int(r.data.tags.get(log_run.TAG_CLIENT, -1)))


def test_run_is_nested_in_the_dataset_experiment_with_provenance_tags(logged):
    client = store.client()
    run = client.get_run(logged.run_id)
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.name == "fedcare/synthetic"
    assert artifact_dir(exp.artifact_location) == logged.root / "mlflow" / "artifacts" / "synthetic"
    assert (logged.root / "mlflow" / "mlflow.db").is_file()
    assert run.info.status == "FINISHED"
    # tiny_config: K=3, T=3, and batch sizes and epochs off the defaults (one cfg<hash> token);
    # the seed first, so a narrow name column still shows it.
    assert re.fullmatch(r"seed0 · fedcare-K3-T3-cfg[0-9a-f]{4}", run.info.run_name)
    tags = run.data.tags
    assert tags["mlflow.parentRunId"] == logged.parent_id
    assert tags[log_run.TAG_DATASET_SHA256] == "0" * 64
    assert tags[log_run.TAG_VERSION] == __version__
    assert tags[log_run.TAG_CPU_KERNELS] == kernel_path()
    assert tags[log_run.TAG_FLOW_RUN_ID] == FLOW_RUN_ID
    assert tags["fedcare.metric.los"] == "mae_days"
    assert tags[log_run.TAG_SETTING] == run.info.run_name.removeprefix("seed0 · ")
    assert naming.parse_run_name(run.info.run_name) == (0, tags[log_run.TAG_SETTING])
    assert "stage2.epochs=2" in tags[log_run.TAG_VARIANT]


def test_params_hold_the_whole_configuration(logged):
    params = store.client().get_run(logged.run_id).data.params
    assert params == flatten_params(logged.result.config.to_dict())
    assert params["stage1.global_lr"] == "0.01"
    assert params["stage1.rounds"] == "3"
    assert params["stage2.epochs"] == "2"
    assert params["data.clients"] == "3"
    assert params["model.head_hidden"] == "[64, 32]"
    assert params["data.rho"] == "null"


def test_per_round_metrics_have_one_point_per_round(logged):
    client = store.client()
    rounds = logged.result.stage1.rounds
    assert len(rounds) == 3
    for s in logged.result.federation.objective_names:
        for key, values in (
            (f"lambda/{s}", [r.lambdas[s] for r in rounds]),
            (f"stage1/loss.{s}", [r.losses[s] for r in rounds]),
        ):
            hist = sorted(client.get_metric_history(logged.run_id, key), key=lambda m: m.step)
            assert [m.step for m in hist] == [1, 2, 3]
            assert [m.value for m in hist] == pytest.approx(values, rel=1e-12)
    d_sq = client.get_metric_history(logged.run_id, "stage1/d_sq_norm")
    d_sq = sorted(d_sq, key=lambda m: m.step)
    assert [m.value for m in d_sq] == pytest.approx([r.d_sq_norm for r in rounds], rel=1e-12)
    parts = client.get_metric_history(logged.run_id, "stage1/participants")
    assert sorted((m.step, m.value) for m in parts) == [(1, 3.0), (2, 3.0), (3, 3.0)]


def test_the_lambda_charts_come_first_in_the_ui(logged):
    """MLflow's chart view: sections by key up to its last '/', sorted; no '/' comes last."""
    keys = store.client().get_run(logged.run_id).data.metrics
    sections = sorted({k.rpartition("/")[0] for k in keys if "/" in k})
    assert sections[0] == "lambda" and sections[1] == "stage1"
    lambdas = sorted(k for k in keys if k.startswith("lambda/"))
    assert lambdas == [f"lambda/{s}" for s in sorted(logged.result.federation.objective_names)]


def test_final_metrics_match_the_result(logged):
    metrics = store.client().get_run(logged.run_id).data.metrics
    checked = 0
    for s, rep in logged.doc["objectives"].items():
        unit = rep["metric"]
        for field in ("pooled", "mean_over_clients", "std_over_clients"):
            if rep[field] is not None:
                assert metrics[f"test/{s}.{unit}.{field}"] == pytest.approx(rep[field])
                checked += 1
        for c in rep["clients"]:
            key = f"test_by_client/{s}.{unit}.client{c['client']}"
            if c["value"] is None:
                assert key not in metrics
            else:
                assert metrics[key] == pytest.approx(c["value"])
                checked += 1
    assert checked >= 3
    assert "test/los.mae_days.pooled" in metrics
    old_style = tuple(f"{s}." for s in logged.doc["objectives"])
    assert not [k for k in metrics if k.startswith(old_style)]
    assert metrics["stage1.rounds_run"] == 3
    assert metrics["timing.total_s"] > 0


def test_a_child_run_per_client_holds_its_stage2_traces(logged):
    client = store.client()
    children = _children(client, logged.run_id)
    assert [c.data.tags[log_run.TAG_CLIENT] for c in children] == ["0", "1", "2"]
    for child, s2 in zip(children, logged.result.stage2, strict=True):
        assert child.info.status == "FINISHED"
        assert child.data.tags[log_run.TAG_FLOW_RUN_ID] == FLOW_RUN_ID
        assert child.data.params["client.n_train"] == str(
            logged.result.federation.clients[s2.client_id].train.n
        )
        epochs = list(range(1, len(s2.mu_trace) + 1))
        assert epochs
        for s in s2.mu_mean:
            hist = sorted(
                client.get_metric_history(child.info.run_id, f"mu.{s}"), key=lambda m: m.step
            )
            assert [m.step for m in hist] == epochs
            assert [m.value for m in hist] == pytest.approx([mu[s] for mu in s2.mu_trace])
            assert child.data.metrics[f"mu_mean.{s}"] == pytest.approx(s2.mu_mean[s])
        for s, rep in logged.doc["objectives"].items():
            mine = [c["value"] for c in rep["clients"] if c["client"] == s2.client_id]
            key = f"test/{s}.{rep['metric']}"
            if mine and mine[0] is not None:
                assert child.data.metrics[key] == pytest.approx(mine[0])
            else:
                assert key not in child.data.metrics
        for key, trace in (("train_loss", s2.train_loss), ("val_loss", s2.val_loss)):
            hist = sorted(client.get_metric_history(child.info.run_id, key), key=lambda m: m.step)
            assert [(m.step, m.value) for m in hist] == [
                (e, pytest.approx(v)) for e, v in zip(epochs, trace, strict=True)
            ]


def test_artifacts_hold_results_json_plots_and_the_validation_report(logged):
    client = store.client()
    top = {a.path for a in client.list_artifacts(logged.run_id)}
    assert {"results.json", "plots", "validation", "model_cards"} <= top
    plots = {a.path for a in client.list_artifacts(logged.run_id, "plots")}
    assert plots == {"plots/lambda_trajectory.png", "plots/metrics.png"}
    validation = {a.path for a in client.list_artifacts(logged.run_id, "validation")}
    assert validation == {"validation/index.html", "validation/summary.json"}
    folder = artifact_dir(client.get_run(logged.run_id).info.artifact_uri)
    for png in plots:
        assert (folder / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads((folder / "results.json").read_text())
    assert doc == log_run.json_safe(logged.doc)


def test_every_client_model_carries_its_model_card(logged):
    client = store.client()
    tags = client.get_run(logged.run_id).data.tags
    run_folder = artifact_dir(client.get_run(logged.run_id).info.artifact_uri)
    cards = {a.path for a in client.list_artifacts(logged.run_id, "model_cards")}
    fed = logged.result.federation
    assert cards == {f"model_cards/client{c.client_id}.html" for c in fed.clients}
    for c in fed.clients:
        page = (run_folder / "model_cards" / f"client{c.client_id}.html").read_text()
        assert f"site {c.client_id}</h1>" in page and "<h2>Limitations</h2>" in page
        for objective in c.objectives:
            assert f"<h2>{objective}</h2>" in page
        model_id = tags[f"{log_run.TAG_CLIENT_MODEL_ID}.{c.client_id}"]
        model_folder = artifact_dir(client.get_logged_model(model_id).artifact_location)
        assert (model_folder / "artifacts" / f"client{c.client_id}.html").read_text() == page


def test_models_load_back_and_predict_like_the_in_memory_models(logged):
    client = store.client()
    fed = logged.result.federation
    kinds = {o.name: o.kind for o in fed.objectives}
    gen = torch.Generator().manual_seed(0)

    model_id = client.get_run(logged.run_id).data.tags[log_run.TAG_BACKBONE_MODEL_ID]
    uri = f"models:/{model_id}"
    info = mlflow.models.get_model_info(uri)
    assert info.signature.inputs.inputs[0].shape == (-1, fed.common_width)
    assert info.signature.outputs.inputs[0].shape == (-1, len(fed.objective_names))
    assert info.metadata["objectives"] == list(fed.objective_names)
    loaded = mlflow.pytorch.load_model(uri)
    x = torch.randn(5, fed.common_width, generator=gen)  # 5 rows: the batch size is dynamic
    memory = load_global_model(logged.result.stage1, fed.common_width, logged.result.config.model)
    with torch.no_grad():
        expected = torch.stack(
            [predict(kinds[s], memory(x, s)) for s in fed.objective_names], dim=1
        )
        assert torch.allclose(loaded(x), expected, atol=1e-5)


def test_each_client_model_scores_raw_rows_like_its_in_memory_predictor(logged):
    """The pyfunc of each client reads feature rows and predicts what the evaluation scored."""
    client = store.client()
    tags = client.get_run(logged.run_id).data.tags
    rows = logged.cohort.features.iloc[:9]
    for i, c in enumerate(logged.result.federation.clients):
        uri = f"models:/{tags[f'{log_run.TAG_CLIENT_MODEL_ID}.{c.client_id}']}"
        package = client_package(logged.result, i)
        info = mlflow.models.get_model_info(uri)
        assert info.signature.inputs.input_names() == package.input_columns
        assert info.signature.outputs.input_names() == package.output_columns
        assert info.metadata["client"] == c.client_id
        got = mlflow.pyfunc.load_model(uri).predict(rows)
        assert list(got.columns) == package.output_columns
        xc = torch.from_numpy(c.common_encoder.transform(rows))
        xu = torch.from_numpy(c.private_encoder.transform(rows))
        predictor = logged.result.predictors[i]
        with torch.no_grad():
            expected = predictor(xc, xu).numpy().astype(np.float64)
        np.testing.assert_array_equal(got.iloc[:, : len(c.objectives)].to_numpy(), expected)
        for s in package.regression_objectives:  # then each LOS prediction's interval
            low, high = predictor.interval_bounds(expected[:, c.objectives.index(s)], s)
            np.testing.assert_array_equal(got[f"{s}_days_low"].to_numpy(), low)
            np.testing.assert_array_equal(got[f"{s}_days_high"].to_numpy(), high)
    stage2 = {int(r.data.tags[log_run.TAG_CLIENT]): r for r in _children(client, logged.run_id)}
    assert all(
        stage2[k].data.tags[log_run.TAG_CLIENT_MODEL_ID]
        == tags[f"{log_run.TAG_CLIENT_MODEL_ID}.{k}"]
        for k in stage2
    )


def test_stored_input_examples_are_synthetic_zeros_and_ones(logged):
    client = store.client()
    model_id = client.get_run(logged.run_id).data.tags[log_run.TAG_BACKBONE_MODEL_ID]
    folder = artifact_dir(client.get_logged_model(model_id).artifact_location)
    example = json.loads((folder / "input_example.json").read_text())
    rows = np.asarray(example["inputs"] if isinstance(example, dict) else example)
    assert rows.shape == (2, logged.result.federation.common_width)
    assert set(np.unique(rows)) <= {0.0, 1.0}


def test_no_patient_key_appears_anywhere(logged):
    patients = np.unique(logged.patients)
    assert patients.min() >= PATIENT_OFFSET
    client = store.client()
    exp_id = client.get_run(logged.run_id).info.experiment_id
    runs = client.search_runs([exp_id])
    assert len(runs) >= 5  # flow, experiment, 3 × stage 2 (and runs other tests add)
    text = []
    folders = []
    for run in runs:
        text += [*run.data.params, *run.data.params.values(), *run.data.metrics]
        text += [*run.data.tags, *run.data.tags.values()]
        folders.append(artifact_dir(run.info.artifact_uri))
    for model in client.search_logged_models(experiment_ids=[exp_id]):
        text += [*model.params.values(), *model.tags.values()]
        folders.append(artifact_dir(model.artifact_location))
    files = [p for f in folders if f.exists() for p in f.rglob("*") if p.is_file()]
    assert any(p.name == "results.json" for p in files)
    assert sum(p.name == "MLmodel" for p in files) >= 4
    decimal = re.compile(rb"(?<![\d.])%d\d{%d}(?!\d)" % (PATIENT_OFFSET // 10**5, 5))
    binary = [struct.pack("<q", int(p)) for p in patients]
    # The detectors find a planted key, and not a float that shares its digits.
    assert decimal.search(b'{"patient": %d}' % patients[7])
    assert not decimal.search(b"0.%d" % patients[7])
    assert any(b in b"xx" + patients[7:8].astype("<i8").tobytes() for b in binary)
    assert not decimal.search("\n".join(text).encode())
    for path in files:
        data = path.read_bytes()
        assert not decimal.search(data), path
        assert not any(b in data for b in binary), path


def test_a_results_document_is_logged_without_models(logged, caplog):
    client = store.client()
    doc = json.loads(
        (artifact_dir(client.get_run(logged.run_id).info.artifact_uri) / "results.json").read_text()
    )
    run_id = log_run.log_experiment(doc, parent_run_id=logged.parent_id, run_name="from-json")
    assert "skipping" in caplog.text
    run = client.get_run(run_id)
    assert run.info.run_name == "from-json"
    assert log_run.TAG_BACKBONE_MODEL_ID not in run.data.tags
    assert run.data.params == flatten_params(logged.result.config.to_dict())
    assert len(client.get_metric_history(run_id, "stage1/d_sq_norm")) == 3
    children = _children(client, run_id)
    assert len(children) == 3
    assert all(log_run.TAG_CLIENT_MODEL_ID not in c.data.tags for c in children)


def test_a_missing_extra_artifact_fails_before_any_run_is_created(logged, tmp_path):
    client = store.client()
    exp_id = client.get_run(logged.run_id).info.experiment_id
    before = len(client.search_runs([exp_id]))
    with pytest.raises(FileNotFoundError, match="validation"):
        log_run.log_experiment(logged.doc, extra_artifacts={"validation": tmp_path / "nope"})
    assert len(client.search_runs([exp_id])) == before
