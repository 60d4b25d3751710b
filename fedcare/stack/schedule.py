"""The re-training schedule of ``fedcare/full-experiment``: shown, changed, paused, kept.

``prefect.yaml`` declares the schedule (slug ``weekly-retrain``, Sundays 02:00 UTC, active).
``prefect deploy`` re-creates a deployment's schedules from that file, so a pause made in the
Prefect UI, or a changed time, would be undone by the next ``fedcare stack up``. Here the
schedule's state is read from the server before the deployments are applied and restored after
(the UI's pause survives), and kept in ``<state>/schedule.json``, so a stack whose Prefect
database is new starts with the schedule the user last chose. ``fedcare stack schedule``
(``--pause``, ``--resume``, ``--cron``, ``--timezone``) changes it on the running server and in
that file.

What the schedule does is also said in words at the end of the deployment's description (the
Prefect UI shows it; a schedule of Prefect 3.7.7 has none): every change (``--cron``,
``--timezone``, ``--pause``/``--resume``, sites or the data folder), and every ``fedcare stack
up`` that restores the user's choice, rewrites that sentence from the schedule in force
(:func:`sentence`), and the command prints the data folder or the coordinator it re-trains over.

By default the schedule re-trains on the data folder (``prefect.yaml``'s parameters). Given a
coordinator's state folder and the federation's schema, it re-trains over real sites instead
(``backend=federation``: Stage 1 over the sites registered with that coordinator; each site
following the federation re-trains its own model when the new ``w*`` arrives); that choice
is kept across ``fedcare stack up`` like the time and the pause.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from fedcare.stack.settings import StackConfig
from fedcare_core.errors import ConfigError

#: The scheduled deployment and its schedule's slug (``prefect.yaml``).
DEPLOYMENT = "fedcare/full-experiment"
_SLUG = "weekly-retrain"
#: The state folder's record of the user's choice.
SCHEDULE_FILE = "schedule.json"
#: Where the deployment's description says what the schedule does (``prefect.yaml`` ends the
#: description with this sentence; :func:`apply` rewrites it from there on).
SENTENCE_START = f"Re-training (schedule {_SLUG}"
_WEEKDAYS = ("Sundays", "Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays")
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True)
class RetrainSchedule:
    """A cron schedule and whether it runs."""

    cron: str
    timezone: str
    active: bool
    #: The flow parameters of a re-training over real sites (None: over the data folder).
    federation: dict[str, Any] | None = None
    #: The data folder it re-trains over, as the server's schedule names it (None: not known,
    #: or over sites).
    data_dir: str | None = None

    def over(self) -> str:
        """What it re-trains over, in words: the data folder (named) or the coordinator's sites."""
        if self.federation is not None:
            return (
                f"the sites of the coordinator {self.federation['federation_state_dir']} "
                f"(at least {self.federation['min_sites']})"
            )
        return "the data folder" + (f" {self.data_dir}" if self.data_dir else "")

    def describe(self) -> str:
        """One line for the user."""
        state = "active" if self.active else "paused"
        return (
            f"{_SLUG} of {DEPLOYMENT}: {state}, cron {self.cron!r} ({self.timezone}); "
            f"re-trains over {self.over()}"
        )


def cron_words(cron: str) -> str | None:
    """A daily or weekly cron in words (``Sundays at 02:00``, ``every day at 06:30``), else None.

    Parameters
    ----------
    cron
        A five-field cron expression.
    """
    fields = cron.split()
    if len(fields) != 5 or fields[2:4] != ["*", "*"]:
        return None
    minute, hour, _, _, day = fields
    if not (minute.isdigit() and hour.isdigit() and int(minute) < 60 and int(hour) < 24):
        return None
    at = f"at {int(hour):02d}:{int(minute):02d}"
    if day == "*":
        return f"every day {at}"
    if day.isdigit() and int(day) <= 7:
        return f"{_WEEKDAYS[int(day) % 7]} {at}"
    if day.lower() in _DAY_NAMES:
        return f"{_WEEKDAYS[_DAY_NAMES.index(day.lower())]} {at}"
    return None


def sentence(schedule: RetrainSchedule) -> str:
    """What the schedule does, as the last sentence of the deployment's description.

    E.g. ``Re-training (schedule weekly-retrain): Sundays at 02:00 (UTC; cron '0 2 * * 0'),
    reads data_dir=/data/new-exports, checksum not verified.``
    """
    words = cron_words(schedule.cron)
    when = (
        f"cron {schedule.cron!r} ({schedule.timezone})"
        if words is None
        else f"{words} ({schedule.timezone}; cron {schedule.cron!r})"
    )
    if schedule.federation is not None:
        fed = schedule.federation
        what = (
            f"Stage 1 over the sites registered with the coordinator "
            f"{fed['federation_state_dir']} (at least {fed['min_sites']}; schema "
            f"{fed['federation_schema']})"
        )
    else:
        what = f"reads data_dir={schedule.data_dir or 'the data folder'}, checksum not verified"
    state = "" if schedule.active else ", paused"
    return f"{SENTENCE_START}{state}): {when}, {what}."


def described(description: str | None, schedule: RetrainSchedule) -> str:
    """``description`` with its schedule sentence (from :data:`SENTENCE_START` on) replaced."""
    head = (description or "").partition(SENTENCE_START)[0].rstrip()
    return f"{head} {sentence(schedule)}".lstrip()


def over_sites(
    state_dir: Path, schema_path: Path, min_sites: int | None, rounds: int | None
) -> dict[str, Any]:
    """The flow parameters of a re-training over the sites of a coordinator, checked now.

    Parameters
    ----------
    state_dir
        The coordinator's state folder (``fedcare federation start --state-dir``).
    schema_path
        The federation's ``federation.json``.
    min_sites
        How many registered sites must be online (None: all registered for the schema).
    rounds
        Stage 1's rounds (None: the deployment's).

    Raises
    ------
    ConfigError
        Naming the option: no coordinator's state there, an unreadable schema, too few sites
        registered for it, or rounds its configuration refuses.
    """
    from fedcare.sites.coordinator import Coordinator
    from fedcare.sites.federation_run import run_sites
    from fedcare_core.sites.schema import read_schema

    state_dir, schema_path = state_dir.resolve(), schema_path.resolve()
    coordinator = Coordinator(state_dir)
    if not coordinator.ca_cert.is_file():
        raise ConfigError(
            f"--federation-state-dir {state_dir}: not a coordinator's state folder "
            "(no ca.crt; `fedcare federation start --state-dir` makes one)"
        )
    try:
        schema = read_schema(schema_path)
    except ConfigError as exc:
        why = str(exc).removeprefix("federation schema ")  # "PATH: why"
        raise ConfigError(f"--federation-schema {why}") from None
    registered = len(run_sites(coordinator, schema, 0))
    if registered < 2:
        raise ConfigError(
            f"--federation-state-dir {state_dir}: {registered} site(s) are registered for this "
            "schema; a federation needs 2 (`fedcare federation register`)"
        )
    wanted = registered if min_sites is None else min_sites
    if not 2 <= wanted <= registered:
        raise ConfigError(
            f"--min-sites {wanted}: {registered} site(s) are registered with {state_dir} for "
            f"this schema; give 2 to {registered}"
        )
    try:
        schema.run_config(seed=0, clients=wanted, rounds=rounds)
    except ConfigError as exc:
        where = "--federation-schema's configuration" if rounds is None else f"--rounds {rounds}"
        raise ConfigError(f"{where}: {exc}") from None
    parameters: dict[str, Any] = {
        "backend": "federation", "data_dir": None, "dataset": schema.dataset,
        "federation_state_dir": str(state_dir), "federation_schema": str(schema_path),
        "min_sites": wanted, "seeds": [0],
    }  # fmt: skip
    return parameters | ({} if rounds is None else {"rounds": rounds})


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
        federation = doc.get("federation")
        data_dir = doc.get("data_dir")
        return RetrainSchedule(
            str(doc["cron"]), str(doc["timezone"]), bool(doc["active"]),
            dict(federation) if isinstance(federation, dict) else None,
            str(data_dir) if data_dir else None,
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(config: StackConfig, schedule: RetrainSchedule) -> None:
    """Record the schedule in the state folder."""
    (config.state_dir / SCHEDULE_FILE).write_text(json.dumps(asdict(schedule), indent=1) + "\n")


def on_server(config: StackConfig) -> RetrainSchedule | None:
    """The schedule as the running Prefect server holds it, or None if not deployed yet."""
    found = _find(config)
    return None if found is None else found.schedule


def apply(config: StackConfig, schedule: RetrainSchedule) -> RetrainSchedule:
    """Set the server's schedule and the deployment's description (and record it).

    Returns
    -------
    RetrainSchedule
        The schedule now in force, with the data folder it re-trains over.

    Raises
    ------
    ConfigError
        If the deployment or its schedule is not on the server (the stack is not up).
    """
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.actions import DeploymentUpdate
    from prefect.client.schemas.schedules import CronSchedule

    found = _find(config)
    if found is None:
        raise ConfigError(
            f"{DEPLOYMENT} has no {_SLUG} schedule on {config.prefect_url}; "
            "bring the stack up first (fedcare stack up)"
        )
    current = found.schedule
    # Always sent: Prefect 3.7.7 empties a schedule's parameters when an update omits them, and
    # the schedule would then re-train on the deployment's default data folder.
    parameters = schedule.federation
    data_dir = None
    if parameters is None:
        data_dir = current.data_dir or _retrain_data_dir(config)  # else back from the sites
        parameters = {"data_dir": data_dir, "verify_checksum": False}
    in_force = replace(schedule, data_dir=data_dir)
    with SyncPrefectClient(config.prefect_api_url) as client:
        client.update_deployment_schedule(
            found.deployment_id,
            found.schedule_id,
            active=schedule.active,
            schedule=CronSchedule(cron=schedule.cron, timezone=schedule.timezone),
            parameters=parameters,
        )
        text = described(found.description, in_force)
        client.update_deployment(found.deployment_id, DeploymentUpdate(description=text))
    save(config, in_force)
    return in_force


def keep_across_deploy(config: StackConfig) -> RetrainSchedule | None:
    """Before ``prefect deploy``: the schedule to restore after it (server's, else saved)."""
    return on_server(config) or saved(config)


@dataclass(frozen=True)
class _Deployed:
    """The schedule on the server: its deployment, its id, what it does, the description."""

    deployment_id: Any
    schedule_id: Any
    schedule: RetrainSchedule
    description: str | None


def _find(config: StackConfig) -> _Deployed | None:
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
            parameters = dict(entry.parameters or {})
            federation = parameters if parameters.get("backend") == "federation" else None
            data_dir = None if federation is not None else parameters.get("data_dir")
            found = RetrainSchedule(
                str(cron), str(zone), entry.active, federation, str(data_dir) if data_dir else None
            )
            return _Deployed(deployment.id, entry.id, found, deployment.description)
    return None


def _retrain_data_dir(config: StackConfig) -> str:
    """The data folder the schedule re-trains on (prefect.yaml's, as ``stack up`` renders it)."""
    from fedcare.stack.settings import RETRAIN_DATA_ENV

    return config.service_env("")[RETRAIN_DATA_ENV]
