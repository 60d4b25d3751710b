"""``fedcare run`` applies the loader's checks and the Great Expectations suites, like the flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedcare.cli.main import EXIT_ERROR, main
from tests.fedcare_core.data.diabetes130.helpers import fixture_lines, set_field, write_csv

RUN = ["run", "--dataset", "diabetes130", "--no-verify", "--clients", "3", "--rounds", "1"]
QUICK = ["--stage2-epochs", "1", "--quiet"]


def run(csv: Path, out: Path, *extra: str) -> int:
    return main([*RUN, "--data-dir", str(csv), *QUICK, "--out", str(out), *extra])


def test_what_only_the_suites_refuse_stops_the_cli_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A category written with a leading blank: the loader reads the value stripped, the suite
    # (generated from the definition) wants the file's value as the vocabulary writes it. The
    # CLI refuses it like the flow, naming the source, the table and the column.
    lines = fixture_lines()
    csv = write_csv(tmp_path / "diabetic_data.csv", set_field(lines, 6, "insulin", " Steady"))
    out = tmp_path / "out.json"
    assert run(csv, out) == EXIT_ERROR and not out.exists()
    err = capsys.readouterr().err
    assert str(csv) in err and "diabetes130_raw" in err and "'insulin'" in err
    assert "expect_column_values_to_be_in_set" in err and "1 of 40 values unexpected" in err
    assert len(err.strip().splitlines()) == 1 and "Steady" not in err
    assert "report /tmp" not in err  # the temporary report is gone


def test_an_identifier_written_as_a_decimal_is_refused_naming_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The definition's identifiers.pattern is the form the suite checks too: the loader,
    # first, names the row.
    lines = fixture_lines()
    encounter = lines[6].split(",")[0]
    csv = write_csv(
        tmp_path / "diabetic_data.csv", set_field(lines, 6, "encounter_id", f"{encounter}.0")
    )
    out = tmp_path / "out.json"
    assert run(csv, out) == EXIT_ERROR and not out.exists()
    err = capsys.readouterr().err
    assert "column 'encounter_id'; row 6: encounter_id must be a positive whole number" in err
    assert len(err.strip().splitlines()) == 1 and encounter not in err


def test_unseen_categories_refused_by_default_and_encoded_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = set_field(fixture_lines(), 6, "race", "Martian")
    csv = write_csv(tmp_path / "diabetic_data.csv", lines)
    out = tmp_path / "out.json"
    assert run(csv, out) == EXIT_ERROR and not out.exists()
    err = capsys.readouterr().err
    assert "column 'race'; row 6" in err and "--unseen-categories other" in err
    assert "Martian" not in err
    assert run(csv, out, "--unseen-categories", "other") == 0 and out.exists()
    assert '"unseen_categories": "other"' in out.read_text()


def test_a_tracked_run_too_small_to_score_is_logged_and_left_unregistered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fixture's few rows leave every validation split with one class: no validation AUROC
    # ranks the backbone against a champion, so it stays logged with its run, unregistered
    # (a client whose own score is defined, e.g. by its LOS error, is still registered).
    from mlflow.tracking import MlflowClient

    csv = write_csv(tmp_path / "diabetic_data.csv", fixture_lines())
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert run(csv, tmp_path / "out.json", "--tracking-uri", uri) == 0, capsys.readouterr().err
    client = MlflowClient(uri, registry_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name.startswith("fedcare/")]
    assert client.search_runs([experiment.experiment_id])
    names = [m.name for m in client.search_registered_models()]
    assert not [n for n in names if n.endswith("-backbone")]


def test_data_check_profiles_the_labels_a_runs_label_options_define(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    csv = write_csv(tmp_path / "diabetic_data.csv", fixture_lines())
    check = ["data", "check", "--dataset", "diabetes130", "--data-dir", str(csv), "--no-verify"]

    def labelled(*options: str) -> dict[str, int]:
        profile = tmp_path / "profile.json"
        assert main([*check, *options, "--json", str(profile)]) == 0
        doc = json.loads(profile.read_text())
        return {o["name"]: o["labelled"] for o in doc["objectives"]}

    default = labelled()
    home = labelled("--early-discharge", "home")
    assert home["early_discharge"] < default["early_discharge"]  # other dispositions unlabelled
    assert home["readmission"] == default["readmission"]
    with pytest.raises(SystemExit):
        main([*check, "--early-discharge", "sometimes"])
    assert "--early-discharge" in capsys.readouterr().err
