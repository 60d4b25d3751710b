"""The re-training schedule's options are checked as Prefect checks them, before any call."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fedcare.cli.main import main
from fedcare.stack import schedule
from fedcare.stack.settings import StackConfig
from fedcare_core.errors import ConfigError

BASE = schedule.RetrainSchedule("0 2 * * 0", "UTC", active=True)


def test_a_new_time_keeps_what_was_not_changed():
    assert schedule.checked("30 3 * * 1", None, BASE) == schedule.RetrainSchedule(
        "30 3 * * 1", "UTC", True
    )
    assert schedule.checked(None, "Europe/London", BASE).timezone == "Europe/London"


@pytest.mark.parametrize(
    ("cron", "zone", "named"),
    [("every sunday", None, "--cron 'every sunday'"), (None, "Mars/Base", "--timezone")],
)
def test_a_bad_cron_or_zone_is_named(cron, zone, named):
    with pytest.raises(ConfigError, match=named):
        schedule.checked(cron, zone, BASE)


def test_the_saved_choice_round_trips_and_a_damaged_file_is_ignored(tmp_path):
    config = StackConfig(state=tmp_path / "stack")
    config.state_dir.mkdir()
    assert schedule.saved(config) is None
    schedule.save(config, BASE)
    assert schedule.saved(config) == BASE
    (config.state_dir / schedule.SCHEDULE_FILE).write_text('{"cron": 3')
    assert schedule.saved(config) is None


def test_changing_the_schedule_without_the_stack_says_how(tmp_path, capsys):
    from fedcare.procs.ports import free_port

    code = main(
        ["stack", "schedule", "--pause", "--state-dir", str(tmp_path / "s"),
         "--prefect-port", str(free_port())]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "fedcare stack up" in err and "Traceback" not in err


@pytest.fixture
def coordinator_state(tmp_path):
    """A coordinator's state folder (its CA) with two sites registered for a schema."""
    from fedcare_core.sites.schema import read_schema
    from tests.fedcare.cli.test_site_prepare import init_schema

    schema = init_schema(tmp_path / "federation.json")
    digest = read_schema(schema).digest()
    state = tmp_path / "STATE"
    state.mkdir()
    (state / "ca.crt").write_text("a CA\n")
    sites = {
        name: {"objectives": ["readmission"], "schema_digest": digest, "node_id": node}
        for name, node in (("north", 11), ("south", 12))
    }
    (state / "sites.json").write_text(json.dumps(sites))
    return state, schema


def test_re_training_over_sites_names_the_coordinator_schema_and_quorum(coordinator_state):
    state, schema = coordinator_state
    over = schedule.over_sites(state, schema, None, 20)
    assert over == {
        "backend": "federation", "data_dir": None, "dataset": "diabetes130",
        "federation_state_dir": str(state.resolve()), "federation_schema": str(schema.resolve()),
        "min_sites": 2, "seeds": [0], "rounds": 20,
    }  # fmt: skip
    described = schedule.RetrainSchedule("0 2 * * 0", "UTC", True, over).describe()
    assert f"over the sites of the coordinator {state.resolve()} (at least 2)" in described
    assert "re-trains over the data folder" in BASE.describe()


def test_the_choice_of_sites_round_trips_through_the_saved_file(tmp_path, coordinator_state):
    state, schema = coordinator_state
    config = StackConfig(state=tmp_path / "stack")
    config.state_dir.mkdir()
    chosen = schedule.RetrainSchedule("0 3 * * 6", "UTC", False,
                                      schedule.over_sites(state, schema, 2, None))  # fmt: skip
    schedule.save(config, chosen)
    assert schedule.saved(config) == chosen


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("no-ca", "--federation-state-dir"),
        ("bad-schema", "--federation-schema"),
        ("min-sites-3", r"--min-sites 3: 2 site\(s\) are registered with .* give 2 to 2"),
        ("min-sites-1", r"--min-sites 1: .* give 2 to 2"),
        ("one-site", r"--federation-state-dir .*: 1 site\(s\) are registered for this schema"),
        ("rounds-0", "--rounds 0"),
    ],
)
def test_a_re_training_over_sites_that_could_not_run_is_named(coordinator_state, change, named):
    state, schema = coordinator_state
    min_sites, rounds = None, None
    if change == "no-ca":
        (state / "ca.crt").unlink()
    elif change == "bad-schema":
        schema.write_text("{")
    elif change.startswith("min-sites-"):
        min_sites = int(change[-1])
    elif change == "one-site":
        sites = json.loads((state / "sites.json").read_text())
        (state / "sites.json").write_text(json.dumps({"north": sites["north"]}))
    else:
        rounds = 0
    with pytest.raises(ConfigError, match=named):
        schedule.over_sites(state, schema, min_sites, rounds)


def test_federation_options_without_the_stack_say_to_bring_it_up_first(tmp_path, capsys):
    from fedcare.procs.ports import free_port

    base = ["stack", "schedule", "--state-dir", str(tmp_path / "s"),
            "--prefect-port", str(free_port())]  # fmt: skip
    assert main([*base, "--federation-state-dir", str(tmp_path)]) == 2
    assert "needs --federation-schema" in capsys.readouterr().err  # the options first
    argv = [*base, "--federation-state-dir", str(tmp_path), "--federation-schema", "f.json"]
    assert main(argv) == 2
    assert "fedcare stack up" in capsys.readouterr().err  # then the stack


@pytest.mark.parametrize(
    ("cron", "words"),
    [("0 2 * * 0", "Sundays at 02:00"), ("30 6 * * *", "every day at 06:30"),
     ("5 23 * * 7", "Sundays at 23:05"), ("0 4 * * mon", "Mondays at 04:00"),
     ("0 2 1 * *", None), ("*/15 * * * *", None), ("0 2 * * 1-5", None)],
)  # fmt: skip
def test_a_daily_or_weekly_cron_is_said_in_words(cron, words):
    assert schedule.cron_words(cron) == words


def test_the_description_sentence_follows_every_change_of_the_schedule():
    yaml = "FedCARE on Diabetes 130-US: checks. " + schedule.sentence(
        schedule.RetrainSchedule("0 2 * * 0", "UTC", True, data_dir="/data/new")
    )
    assert yaml.endswith(
        "Re-training (schedule weekly-retrain): Sundays at 02:00 (UTC; cron '0 2 * * 0'), "
        "reads data_dir=/data/new, checksum not verified."
    )
    later = schedule.RetrainSchedule("30 6 * * 1", "Europe/London", False, data_dir="/data/new")
    text = schedule.described(yaml, later)
    assert text.startswith("FedCARE on Diabetes 130-US: checks. Re-training (schedule")
    assert text.count("Re-training") == 1 and "Sundays" not in text and "02:00" not in text
    assert "weekly-retrain, paused): Mondays at 06:30 (Europe/London; cron '30 6 * * 1')" in text
    odd = schedule.described(text, replace(later, cron="0 2 1 * *", active=True))
    assert "weekly-retrain): cron '0 2 1 * *' (Europe/London), reads" in odd
    assert schedule.described(None, BASE).startswith("Re-training (schedule weekly-retrain)")


def test_the_user_is_told_the_data_folder_or_the_coordinator(coordinator_state):
    folder = schedule.RetrainSchedule("0 2 * * 0", "UTC", True, data_dir="/data/new-exports")
    assert folder.describe().endswith("re-trains over the data folder /data/new-exports")
    state, schema = coordinator_state
    sites = replace(folder, federation=schedule.over_sites(state, schema, None, 20), data_dir=None)
    said = schedule.sentence(sites)
    assert f"Stage 1 over the sites registered with the coordinator {state.resolve()}" in said
    assert f"(at least 2; schema {schema.resolve()})" in said and "data_dir" not in said


def test_the_data_folder_round_trips_through_the_saved_file(tmp_path):
    config = StackConfig(state=tmp_path / "stack")
    config.state_dir.mkdir()
    chosen = replace(BASE, data_dir="/data/new-exports")
    schedule.save(config, chosen)
    assert schedule.saved(config) == chosen


def _deploy_full_experiment(api_url: str, description: str, folder: str) -> None:
    """``fedcare/full-experiment`` and its weekly-retrain schedule, as ``prefect deploy`` has it."""
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.actions import DeploymentScheduleCreate
    from prefect.client.schemas.schedules import CronSchedule

    weekly = DeploymentScheduleCreate(
        schedule=CronSchedule(cron="0 2 * * 0", timezone="UTC"),
        active=True,
        slug="weekly-retrain",
        parameters={"data_dir": folder, "verify_checksum": False},
    )
    with SyncPrefectClient(api_url) as client:
        flow_id = client.create_flow_from_name("fedcare")
        client.create_deployment(
            flow_id, "full-experiment", description=description, schedules=[weekly],
            entrypoint="flows.fedcare_flow:fedcare_pipeline",
        )  # fmt: skip


def _description(api_url: str) -> str:
    from prefect.client.orchestration import SyncPrefectClient

    with SyncPrefectClient(api_url) as client:
        return client.read_deployment_by_name(schedule.DEPLOYMENT).description or ""


@pytest.mark.slow
def test_changing_the_schedule_rewrites_the_deployment_description(tmp_path, capsys, monkeypatch):
    from urllib.parse import urlsplit

    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    from fedcare.stack.settings import RETRAIN_DATA_ENV
    from tests.flows.test_deployment import _rendered_deployment

    folder = str(tmp_path / "new-exports")
    monkeypatch.setenv(RETRAIN_DATA_ENV, folder)  # as `fedcare stack up` renders prefect.yaml
    rendered = _rendered_deployment("full-experiment", "flows.fedcare_flow:fedcare_pipeline")
    (tmp_path / "s").mkdir()
    with prefect_test_harness(server_startup_timeout=180):
        api = str(PREFECT_API_URL.value())
        _deploy_full_experiment(api, rendered["description"], folder)
        argv = ["stack", "schedule", "--state-dir", str(tmp_path / "s"),
                "--prefect-port", str(urlsplit(api).port)]  # fmt: skip
        assert main([*argv, "--pause", "--cron", "30 6 * * 1", "--timezone", "Europe/London"]) == 0
        said = capsys.readouterr().out
        over = f"re-trains over the data folder {folder}"
        assert f"paused, cron '30 6 * * 1' (Europe/London); {over}" in said
        text = _description(api)
        assert text.startswith("FedCARE on Diabetes 130-US") and text.count("Re-training") == 1
        assert "Sundays" not in text and "02:00" not in text
        assert (
            "Re-training (schedule weekly-retrain, paused): Mondays at 06:30 (Europe/London; "
            f"cron '30 6 * * 1'), reads data_dir={folder}, checksum not verified."
        ) in text
        assert main([*argv, "--resume"]) == 0
        assert "active, cron '30 6 * * 1' (Europe/London)" in capsys.readouterr().out
        assert "(schedule weekly-retrain): Mondays at 06:30" in _description(api)
        assert main(argv) == 0  # shown, unchanged: the schedule still names the folder
        assert capsys.readouterr().out.strip().endswith(over)
        assert schedule.saved(StackConfig(state=tmp_path / "s")).data_dir == folder
