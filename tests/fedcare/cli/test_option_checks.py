"""Every command's options checked before it starts a process or creates anything.

Each refusal is one line naming the option, exit 2, and leaves the working folder as it was:
ports out of range or shared by two servers, paths under a file, folders that are files,
options that have no effect without another, a state folder that is not a coordinator's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from fedcare.cli.main import main
from fedcare.cli.option_checks import check_parsed, declare_needs, port
from tests.fedcare.cli.refusals import refused


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder holding one plain file, ``somefile``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    (tmp_path / "somefile").write_text("not a folder\n")
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (["stack", "up", "--state-dir", "ST", "--prefect-port", "4300", "--mlflow-port", "4300"],
         ("--prefect-port and --mlflow-port are both 4300",)),
        (["stack", "up", "--state-dir", "ST", "--prefect-port", "5000"],  # MLflow's default
         ("--prefect-port and --mlflow-port are both 5000",)),
        (["stack", "status", "--state-dir", "ST", "--prefect-port", "70000"],
         ("--prefect-port must lie in [1, 65,535], got 70,000",)),
        (["stack", "env", "--state-dir", "ST", "--mlflow-port", "0"],
         ("--mlflow-port must lie in [1, 65,535], got 0",)),
        (["federation", "start", "--state-dir", "ST", "--port", "-1"],
         ("--port must lie in [1, 65,535], got -1",)),
    ],
)  # fmt: skip
def test_ports_out_of_range_or_shared_are_refused_before_anything_starts(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], parts: tuple[str, ...]
) -> None:
    refused(capsys, work, argv, *parts)
    assert not (work / "ST").exists()


def test_a_port_that_is_not_a_number_is_refused_by_the_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["stack", "status", "--mlflow-port", "http"])
    assert exc.value.code == 2
    assert "argument --mlflow-port: expected a port number, got 'http'" in capsys.readouterr().err
    with pytest.raises(argparse.ArgumentTypeError):
        port("4.5")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["federation", "start", "--state-dir", "somefile/STATE", "--port", "9092"], "--state-dir"),
        (["stack", "up", "--state-dir", "somefile/stack"], "--state-dir"),
        (["stack", "up", "--mlflow-dir", "somefile/mlflow"], "--mlflow-dir"),
        (["run", "--data-dir", "somefile/data", "--rounds", "2"], "--data-dir"),
        (["run", "--out", "somefile/deeper/results.json"], "--out"),
        (["run", "--run-dir", "somefile/run"], "--run-dir"),
        (["data", "fetch", "diabetes130", "--cache-dir", "somefile/cache"], "--cache-dir"),
        (["site", "pending", "--site", "somefile/site"], "--site"),
    ],
)
def test_a_path_under_a_file_is_refused_naming_its_option(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    refused(capsys, work, argv, f"{flag} somefile/", "somefile is a file, not a folder")


@pytest.mark.parametrize(
    "argv",
    [
        ["stack", "status", "--state-dir", "somefile"],
        ["data", "fetch", "diabetes130", "--cache-dir", "somefile"],
    ],
)
def test_a_folder_option_naming_a_file_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    refused(capsys, work, argv, "somefile: a file, not a folder")


@pytest.mark.parametrize(
    ("argv", "part"),
    [
        (["federation", "status", "--state-dir", "ST", "--interval", "5"],
         "--interval has no effect without --watch"),
        (["site", "join", "--site", "s", "--superlink", "127.0.0.1:9", "--root-certificates",
          "ca.pem", "--promotion-margin", "0.1"],
         "--promotion-margin has no effect without --personalise"),
        (["experiment", "comparison", "--tracking-uri", "sqlite:///x.db"],
         "--tracking-uri has no effect without --mlflow"),
        (["stack", "status", "--data-dir", "data"],
         "--data-dir has no effect with fedcare stack status"),
        (["stack", "schedule", "--pause", "--data-dir", "data"],
         "--data-dir has no effect with fedcare stack schedule"),
    ],
)  # fmt: skip
def test_an_option_without_the_one_it_needs_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str], argv: list[str], part: str
) -> None:
    refused(capsys, work, argv, part)


def test_validity_days_with_given_certificates_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["federation", "start", "--state-dir", "ST", "--port", "9092", "--validity-days", "30"]
    given = ["--ca-cert", "ca.pem", "--server-cert", "s.pem", "--server-key", "s.key"]
    refused(capsys, work, [*argv, *given], "--validity-days has no effect with --ca-cert")


@pytest.mark.parametrize("command", ["status", "stop"])
def test_a_state_folder_that_is_not_a_coordinators_is_refused(
    work: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # A mistyped folder was watched for ever (and reported "not running", exit 0).
    argv = ["federation", command, "--state-dir"]
    refused(capsys, work, [*argv, "STAET"], "--state-dir STAET: no such folder")
    if command == "status":
        refused(capsys, work, [*argv, "STAET", "--watch"], "--state-dir STAET: no such folder")
    (work / "empty").mkdir()
    refused(capsys, work, [*argv, "empty"], "--state-dir empty: not a coordinator's")
    unregister = ["federation", "unregister", "--state-dir", "empty", "--name", "north"]
    refused(capsys, work, unregister, "--state-dir empty: not a coordinator's")


def test_a_coordinators_folder_is_accepted(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = work / "ST"
    state.mkdir()
    (state / "sites.json").write_text(json.dumps({}))  # what a stopped coordinator leaves
    assert main(["federation", "status", "--state-dir", str(state)]) == 0
    assert "not running" in capsys.readouterr().out
    assert main(["federation", "stop", "--state-dir", str(state)]) == 0


def test_options_with_what_they_need_are_accepted(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["stack", "env", "--prefect-port", "4300", "--mlflow-port", "5300"]) == 0
    out = capsys.readouterr().out
    assert "127.0.0.1:4300/api" in out and "127.0.0.1:5300" in out
    argv = ["stack", "status", "--state-dir", str(work / "new"), "--prefect-port", "4300"]
    assert main(argv) == 1  # nothing runs there: reported, not refused
    assert not (work / "new").exists()  # status looks, it makes nothing


@pytest.mark.parametrize(
    ("extra", "part"),
    [
        (["--dp-delta", "1e-6"], "stage1.dp_delta (--dp-delta) has no effect without"),
        (["--dp-clip", "2"], "stage1.dp_clip (--dp-clip) has no effect without"),
        (["--dp-accountant", "rdp"], "stage1.dp_accountant (--dp-accountant) has no effect"),
        (["--set", "stage1.dp_noise_seed=3"], "stage1.dp_noise_seed (--dp-noise-seed) has no"),
        (["--fairness-weight", "2"], "fairness_weight (--fairness-weight) has no effect without"),
        (["--sensitivity-weight", "3", "--preferences", "readmission:fair(race)"],
         "sensitivity_weight (--sensitivity-weight) has no effect without a sensitivity"),
        (["--algorithm", "fedavg", "--stage2-prox", "1"],
         "--stage2-prox: algorithm 'fedavg' has no Stage 2"),
        (["--algorithm", "fedcare-b", "--set", "stage2.lr=0.01"],
         "--set stage2.lr: algorithm 'fedcare-b' has no Stage 2"),
    ],
)  # fmt: skip
def test_run_settings_that_would_be_ignored_are_refused_before_the_data_is_read(
    work: Path, capsys: pytest.CaptureFixture[str], extra: list[str], part: str
) -> None:
    argv = ["run", "--data-dir", "nowhere", "--rounds", "2", "--out", "out/r.json", *extra]
    refused(capsys, work, argv, part)


@pytest.mark.parametrize(
    "extra",
    [
        ["--dp-delta", "1e-6", "--dp-epsilon", "3"],
        ["--dp-clip", "2", "--dp-noise-multiplier", "1.5", "--dp-accountant", "rdp"],
        ["--fairness-weight", "2", "--preferences", "readmission:fair(race)"],
        ["--sensitivity-weight", "3", "--preferences", "*:sensitivity"],
        ["--algorithm", "fedcare", "--stage2-prox", "1"],
        ["--algorithm", "fedavg", "--preset", "recommended"],  # the preset's Stage 2: not given
    ],
)
def test_run_settings_with_what_they_need_pass_to_the_data(
    work: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    argv = ["run", "--data-dir", "nowhere", "--rounds", "2", "--out", "out/r.json", *extra]
    assert main(argv) == 2
    assert "nowhere" in capsys.readouterr().err  # refused for its data: every option passed


def test_run_refused_by_its_options_creates_no_store(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The store was made before --clients 1 was refused.
    argv = ["run", "--tracking-uri", "sqlite:///x.db", "--out", "r.json", "--clients", "1"]
    refused(capsys, work, argv, "data.clients must lie in [2, 1000], got 1")
    argv = [
        "run",
        "--tracking-uri",
        "sqlite:///st/x.db",
        "--data-dir",
        "nowhere",
        "--out",
        "r.json",
    ]
    assert main(argv) == 2  # refused for its data, after the store's check
    assert not (work / "st").exists() and not (work / "x.db").exists()


def test_declare_needs_names_only_the_parsers_options() -> None:
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--a")
    parser.add_argument("--b", action="store_true")
    with pytest.raises(ValueError, match="no option --c"):
        declare_needs(parser, "--a", "--c", why="")
    declare_needs(parser, "--a", "--b", why="b reads it")
    check_parsed(parser, parser.parse_args(["--a", "1", "--b"]))
    check_parsed(parser, parser.parse_args([]))
    from fedcare_core.errors import ConfigError

    with pytest.raises(ConfigError, match="--a has no effect without --b: b reads it"):
        check_parsed(parser, parser.parse_args(["--a", "1"]))
