"""The ``fedcare`` command: end-to-end runs on real data and clean failures on bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare.tracking.naming import setting_name

FIXTURE = Path(__file__).resolve().parents[2] / "fedcare_core" / "data" / "fixtures"
QUICK = [
    "--clients",
    "3",
    "--rounds",
    "2",
    "--max-patients",
    "1500",
    "--stage2-epochs",
    "2",
    "--quiet",
]


def _diabetes_csv(data_dir: Path, tmp_path: Path) -> Path:
    import zipfile

    with zipfile.ZipFile(data_dir / "diabetes130" / "dataset_diabetes.zip") as zf:
        target = tmp_path / "diabetic_data.csv"
        target.write_bytes(zf.read("dataset_diabetes/diabetic_data.csv"))
    return target


@pytest.mark.realdata
def test_run_diabetes_writes_results_and_table(data_dir, tmp_path, capsys):
    out = tmp_path / "res" / "results.json"
    code = main(
        [
            "run",
            "--dataset",
            "diabetes130",
            "--data-dir",
            str(data_dir),
            "--seed",
            "0",
            "--out",
            str(out),
            *QUICK,
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["dataset"] == "diabetes130" and doc["algorithm"] == "fedcare"
    assert set(doc["objectives"]) == {"early_discharge", "readmission", "los"}
    assert len(doc["rounds"]) == 2 and doc["timing"]["total_s"] > 0
    printed = capsys.readouterr().out
    assert "early_discharge" in printed and "MAE (days)" in printed
    # No identifiers anywhere in the results document.
    text = out.read_text()
    assert "encounter_id" not in text and "patient_nbr" not in text


@pytest.mark.realdata
def test_run_with_admission_features_shows_each_objective_only_what_it_may_know(data_dir, tmp_path):
    from fedcare_core.data.diabetes130 import DIABETES130_ADMISSION_PARTITION as ADMISSION

    out = tmp_path / "admission.json"
    args = ["run", "--data-dir", str(data_dir), "--features", "admission", "--out", str(out)]
    assert main([*args, *QUICK]) == 0
    doc = json.loads(out.read_text())
    assert doc["config"]["data"]["features"] == "admission"
    assert doc["data"]["common_features"] == list(ADMISSION.common)
    for client in doc["clients"]:
        (objective,) = client["objectives"]
        assert client["private_features"] == list(ADMISSION.private[objective])
    seen = {c["objectives"][0]: set(c["private_features"]) for c in doc["clients"]}
    assert "discharge_disposition_id" in seen["readmission"]
    assert "num_medications" not in seen["los"] | seen["early_discharge"]
    for objective in ("early_discharge", "readmission", "los"):
        assert doc["objectives"][objective]["pooled"] is not None


@pytest.mark.realdata
def test_run_mimic_demo_reports_every_objective(data_dir, tmp_path):
    out = tmp_path / "mimic.json"
    code = main(
        [
            "run",
            "--dataset",
            "mimic3",
            "--data-dir",
            str(data_dir / "mimic3-demo"),
            "--clients",
            "3",
            "--rounds",
            "5",
            "--stage2-epochs",
            "3",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    doc = json.loads(out.read_text())
    assert set(doc["objectives"]) == {"mortality", "readmission", "los"}
    for rep in doc["objectives"].values():
        assert rep["pooled"] is not None or rep["reason"]


@pytest.mark.realdata
def test_run_mimic_demo_benchmark_cohort_with_its_published_test_set(data_dir, tmp_path):
    import pandas as pd

    demo = data_dir / "mimic3-demo"
    subjects = sorted(pd.read_csv(demo / "ICUSTAYS.csv")["SUBJECT_ID"].unique())
    for part, chosen in (("train", subjects[10:]), ("test", subjects[:10])):
        (tmp_path / "ihm" / part).mkdir(parents=True)
        rows = "".join(f"{s}_episode1_timeseries.csv,0\n" for s in chosen)
        (tmp_path / "ihm" / part / "listfile.csv").write_text("stay,y_true\n" + rows)
    out = tmp_path / "ihm.json"
    run = ["run", "--dataset", "mimic3", "--data-dir", str(demo), "--cohort", "benchmark-ihm"]
    run += ["--clients", "3", "--rounds", "3", "--stage2-epochs", "2", "--quiet"]
    assert main([*run, "--benchmark-split", str(tmp_path / "ihm"), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["config"]["data"]["cohort"] == "benchmark-ihm"
    every_stay = sum(c["n_train"] + c["n_val"] + c["n_test"] for c in doc["clients"])
    assert 0 < every_stay <= 57
    # The test split is the listed test subjects' benchmark stays, whatever the seed.
    notes = " ".join(doc["data"]["notes"])
    n_test = int(notes.split("benchmark split: ")[1].split(" train and ")[1].split()[0])
    assert sum(c["n_test"] for c in doc["clients"]) == n_test > 0


def _bad_run(data_path: Path, tmp_path: Path, capsys, *extra: str) -> str:
    out = tmp_path / "out" / "results.json"
    code = main(
        [
            "run",
            "--dataset",
            "diabetes130",
            "--data-dir",
            str(data_path),
            "--out",
            str(out),
            *QUICK,
            *extra,
        ]
    )
    assert code == 2
    assert not out.exists() and not (tmp_path / "out").exists()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.realdata
def test_wrong_checksum_is_refused(data_dir, tmp_path, capsys):
    csv = _diabetes_csv(data_dir, tmp_path)
    csv.write_text(csv.read_text().replace("Caucasian", "Caucasion", 1))
    err = _bad_run(csv, tmp_path, capsys)
    assert "diabetic_data.csv" in err and "SHA-256" in err and "--no-verify" in err


@pytest.mark.realdata
def test_renamed_column_names_file_and_column(data_dir, tmp_path, capsys):
    csv = _diabetes_csv(data_dir, tmp_path)
    text = csv.read_text()
    csv.write_text(text.replace("num_medications", "n_medications", 1))
    err = _bad_run(csv, tmp_path, capsys, "--no-verify")
    assert "diabetic_data.csv" in err and "num_medications" in err


@pytest.mark.realdata
def test_non_numeric_value_names_rows(data_dir, tmp_path, capsys):
    csv = _diabetes_csv(data_dir, tmp_path)
    lines = csv.read_text().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    col = header.index("num_lab_procedures")
    for row in (5, 9):
        fields = lines[row].split(",")
        fields[col] = "many"
        lines[row] = ",".join(fields)
    csv.write_text("".join(lines))
    err = _bad_run(csv, tmp_path, capsys, "--no-verify")
    assert "num_lab_procedures" in err and "rows 5, 9" in err


def test_empty_file_is_refused(tmp_path, capsys):
    csv = tmp_path / "diabetic_data.csv"
    csv.write_text("")
    err = _bad_run(csv, tmp_path, capsys, "--no-verify")
    assert "diabetic_data.csv" in err and "empty" in err


def test_truncated_file_is_refused(tmp_path, capsys):
    src = (FIXTURE / "diabetic_data_tiny.csv").read_text()
    csv = tmp_path / "diabetic_data.csv"
    csv.write_text(src[: int(len(src) * 0.6)])
    err = _bad_run(csv, tmp_path, capsys, "--no-verify")
    assert "diabetic_data.csv" in err and "truncated" in err


def test_objective_without_positive_label_is_refused(tmp_path, capsys):
    # The tiny fixture has too few readmissions for many clients: the run must stop cleanly.
    csv = tmp_path / "diabetic_data.csv"
    shutil.copy(FIXTURE / "diabetic_data_tiny.csv", csv)
    out = tmp_path / "out" / "results.json"
    code = main(
        [
            "run",
            "--dataset",
            "diabetes130",
            "--data-dir",
            str(csv),
            "--no-verify",
            "--clients",
            "8",
            "--rounds",
            "1",
            "--quiet",
            "--out",
            str(out),
        ]
    )
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "diabetic_data.csv" in err and "label" in err


def test_unknown_option_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "fedcare.cli", "run", "--solver", "qp"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_quiet_silences_flowers_info_lines_for_the_run_only(data_dir, tmp_path, monkeypatch):
    # flower-sim's ServerApp runs in this process and logs each round at INFO on "flwr".
    import logging

    import fedcare_core.run.pipeline as runner
    from fedcare_core.errors import FedcareError

    seen = []

    def record_level(*args, **kwargs):
        seen.append(logging.getLogger("flwr").level)
        raise FedcareError("stopped by the test")

    import flwr.common.logger  # noqa: F401  (Flower sets its logger's level on import)

    monkeypatch.setattr(runner, "run_algorithm", record_level)
    before = logging.getLogger("flwr").level
    assert before < logging.WARNING
    for extra in (["--quiet"], []):
        argv = ["run", "--data-dir", str(data_dir), *QUICK[:-1], *extra]
        assert main([*argv, "--out", str(tmp_path / "r.json")]) != 0
        assert logging.getLogger("flwr").level == before
    assert seen == [logging.WARNING, before]


def test_the_simulation_log_filter_drops_flowers_run_simulation_notice():
    import logging

    from fedcare.flower.simulation import _no_records_after_a_signal

    def record(msg, *args):
        return logging.LogRecord("flwr", logging.WARNING, __file__, 1, msg, args, None)

    notice = "DEPRECATED FEATURE: %s"
    assert not _no_records_after_a_signal(record(notice, "The `run_simulation` function is ..."))
    assert _no_records_after_a_signal(record("[ROUND 1/2]"))


@pytest.mark.realdata
def test_run_saves_results_by_default_and_logs_to_the_environments_store(
    data_dir, tmp_path, monkeypatch, capsys
):
    # No --out: results/<setting>.json in the working folder; MLFLOW_TRACKING_URI set: the run
    # is logged there, as --tracking-uri's help says.
    import mlflow

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path}/store/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    args = ["run", "--dataset", "diabetes130", "--data-dir", str(data_dir), "--seed", "1"]
    assert main([*args, *QUICK]) == 0
    # The setting as the MLflow run names it, variant included (QUICK's smaller cohort and
    # Stage 2 budget), so a run with other settings does not overwrite this one's file; the
    # Stage 2 budget spelt out where the run name has an opaque cfg<hash>.
    (out,) = (tmp_path / "results").iterdir()
    assert out.name == "diabetes130-fedcare-K3-T2-n1500-stage2.epochs=2-seed1.json"
    document = json.loads(out.read_text())
    assert document["config"]["seed"] == 1
    assert "cfg" in setting_name(document) and "cfg" not in out.name
    assert f"results written to {out.relative_to(tmp_path)}" in capsys.readouterr().out
    runs = mlflow.MlflowClient(uri).search_runs(
        [mlflow.MlflowClient(uri).get_experiment_by_name("fedcare/diabetes130").experiment_id]
    )
    assert runs and all(r.info.status == "FINISHED" for r in runs)


def test_an_unreachable_store_in_the_environment_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9/")
    code = main(["run", "--dataset", "diabetes130", "--data-dir", str(tmp_path), *QUICK])
    assert code == 2
    err = capsys.readouterr().err
    assert "MLFLOW_TRACKING_URI http://127.0.0.1:9/: cannot open the MLflow store" in err
    assert not (tmp_path / "results").exists()


def test_a_quick_exit_command_run_as_the_program_ends_at_once_with_its_status(
    monkeypatch, tmp_path
):
    # fedcare predict skips the interpreter's teardown (exit_now) when run as the program, on
    # success and on a refusal alike; called with argv (tests, tools) it returns its status.
    import fedcare.cli.main as cli

    ended: list[int] = []

    def end(status: int) -> None:
        ended.append(status)
        raise SystemExit(status)

    monkeypatch.setattr(cli, "exit_now", end)
    argv = ["predict", "--model", str(tmp_path), "--data", str(tmp_path / "none.csv")]
    argv += ["--out", str(tmp_path / "o.csv")]
    monkeypatch.setattr(sys, "argv", ["fedcare", *argv])
    with pytest.raises(SystemExit):
        cli.main()
    assert ended == [2]
    assert cli.main(argv) == 2 and ended == [2]
    monkeypatch.setattr(sys, "argv", ["fedcare", "data", "fetch", "diabetes130", "--url", "x:"])
    assert cli.main() == 2 and ended == [2]  # any other command returns as before
