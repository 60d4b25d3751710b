"""The re-training schedule's options are checked as Prefect checks them, before any call."""

from __future__ import annotations

import json

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
