"""The re-training schedule of ``fedcare/full-experiment``: shown, changed, paused, kept.

``prefect.yaml`` declares the schedule (slug ``weekly-retrain``, Sundays 02:00 UTC, active).
``prefect deploy`` re-creates a deployment's schedules from that file, so a pause made in the
Prefect UI, or a changed time, would be undone by the next ``fedcare stack up``. Here the
schedule's state is read from the server before the deployments are applied and restored after
(the UI's pause survives), and kept in ``<state>/schedule.json``, so a stack whose Prefect
database is new starts with the schedule the user last chose. ``fedcare stack schedule``
(``--pause``, ``--resume``, ``--cron``, ``--timezone``) changes it on the running server and in
that file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from fedcare.stack.settings import StackConfig
from fedcare_core.errors import ConfigError

#: The scheduled deployment and its schedule's slug (``prefect.yaml``).
DEPLOYMENT = "fedcare/full-experiment"
_SLUG = "weekly-retrain"
#: The state folder's record of the user's choice.
SCHEDULE_FILE = "schedule.json"


@dataclass(frozen=True)
class RetrainSchedule:
    """A cron schedule and whether it runs."""

    cron: str
    timezone: str
    active: bool

    def describe(self) -> str:
        """One line for the user."""
        state = "active" if self.active else "paused"
        return f"{_SLUG} of {DEPLOYMENT}: {state}, cron {self.cron!r} ({self.timezone})"


def checked(cron: str | None, timezone: str | None, base: RetrainSchedule) -> RetrainSchedule:
    """``base`` with a new cron expression and/or time zone, validated as Prefect validates.

    Raises
    ------
    ConfigError
        Naming ``--cron`` or ``--timezone`` when Prefect would refuse it.
    """
    from prefect.client.schemas.schedules import CronSchedule
    from pydantic import ValidationError

    new = replace(
        base,
        cron=base.cron if cron is None else cron,
        timezone=base.timezone if timezone is None else timezone,
    )
    if not new.timezone.strip():  # Prefect takes '' for its default zone; say which one
        raise ConfigError("--timezone '': give an IANA time zone (e.g. UTC, Europe/London)")
    try:
        CronSchedule(cron=new.cron, timezone=new.timezone)
    except ValidationError as exc:
        field = str(exc.errors()[0]["loc"][0])
        value = new.cron if field == "cron" else new.timezone
        option, kind = (
            ("--cron", "cron expression") if field == "cron" else ("--timezone", "IANA time zone")
        )
        raise ConfigError(
            f"{option} {value!r}: not a valid {kind} (e.g. --cron '0 2 * * 0' "
            "--timezone Europe/London)"
        ) from None
    return new


def saved(config: StackConfig) -> RetrainSchedule | None:
    """The schedule last chosen on this stack, or None (none recorded, or unreadable)."""
    try:
        doc: dict[str, Any] = json.loads((config.state_dir / SCHEDULE_FILE).read_text())
        return RetrainSchedule(str(doc["cron"]), str(doc["timezone"]), bool(doc["active"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(config: StackConfig, schedule: RetrainSchedule) -> None:
    """Record the schedule in the state folder."""
    (config.state_dir / SCHEDULE_FILE).write_text(json.dumps(asdict(schedule), indent=1) + "\n")


def on_server(config: StackConfig) -> RetrainSchedule | None:
    """The schedule as the running Prefect server holds it, or None if not deployed yet."""
    found = _find(config)
    return None if found is None else found[2]


def apply(config: StackConfig, schedule: RetrainSchedule) -> RetrainSchedule:
    """Set the server's schedule (and record it); the schedule now in force.

    Raises
    ------
    ConfigError
        If the deployment or its schedule is not on the server (the stack is not up).
    """
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.schedules import CronSchedule

    found = _find(config)
    if found is None:
        raise ConfigError(
            f"{DEPLOYMENT} has no {_SLUG} schedule on {config.prefect_url}; "
            "bring the stack up first (fedcare stack up)"
        )
    deployment_id, schedule_id, _ = found
    with SyncPrefectClient(config.prefect_api_url) as client:
        client.update_deployment_schedule(
            deployment_id,
            schedule_id,
            active=schedule.active,
            schedule=CronSchedule(cron=schedule.cron, timezone=schedule.timezone),
        )
    save(config, schedule)
    return schedule


def keep_across_deploy(config: StackConfig) -> RetrainSchedule | None:
    """Before ``prefect deploy``: the schedule to restore after it (server's, else saved)."""
    return on_server(config) or saved(config)


def _find(config: StackConfig) -> tuple[Any, Any, RetrainSchedule] | None:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.exceptions import ObjectNotFound

    with SyncPrefectClient(config.prefect_api_url) as client:
        try:
            deployment = client.read_deployment_by_name(DEPLOYMENT)
        except ObjectNotFound:
            return None
    for entry in deployment.schedules or []:
        if entry.slug == _SLUG:
            cron = getattr(entry.schedule, "cron", None)
            zone = getattr(entry.schedule, "timezone", None) or "UTC"
            if cron is None:
                return None
            return deployment.id, entry.id, RetrainSchedule(str(cron), str(zone), entry.active)
    return None
