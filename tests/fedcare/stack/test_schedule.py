"""The re-training schedule's options are checked as Prefect checks them, before any call."""

from __future__ import annotations

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
