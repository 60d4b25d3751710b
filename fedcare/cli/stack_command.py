"""``fedcare stack``: the local Prefect server, worker, deployments and MLflow server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fedcare.cli.option_checks import port

#: ``fedcare stack``'s actions.
ACTIONS = ("up", "down", "status", "env", "run", "schedule")


def add_parser(sub: Any) -> None:
    """``fedcare stack``'s options."""
    stack = sub.add_parser(
        "stack", help="the local Prefect server, worker, deployments and MLflow server"
    )
    stack.add_argument(
        "action",
        choices=ACTIONS,
        help="up: start and deploy; down: stop everything; status: report; env: print the "
        "shell exports (PREFECT_API_URL, MLFLOW_TRACKING_URI, ...) that talk to the stack; "
        "run: run a deployment and wait for it (prefect deployment run --watch, with a state "
        "poll beside it in case the watch misses the end); schedule: show or change the "
        "re-training schedule (kept across stack up)",
    )
    stack.add_argument(
        "deployment", nargs="?", help="run: flow/deployment, e.g. fedcare/full-experiment"
    )
    stack.add_argument(
        "-p",
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run: a flow parameter, as prefect deployment run -p takes it (repeatable)",
    )
    stack.add_argument("--state-dir", type=Path, help="pid files, logs, Prefect home (.stack)")
    stack.add_argument("--mlflow-dir", type=Path, help="MLflow store folder (mlflow)")
    stack.add_argument("--prefect-port", type=port, help="Prefect API/UI port (4200)")
    stack.add_argument("--mlflow-port", type=port, help="MLflow server/UI port (5000)")
    stack.add_argument(
        "--host",
        metavar="IP",
        help="IPv4 address the Prefect and MLflow servers listen on (default 127.0.0.1); "
        "neither authenticates its clients, so another address opens them to that network",
    )
    stack.add_argument(
        "--data-dir", type=Path,
        help="data folder for flow runs (default: $FEDCARE_DATA_DIR); up, and schedule "
        "--retrain-data-folder",
    )  # fmt: skip
    when = stack.add_mutually_exclusive_group()
    when.add_argument("--pause", action="store_true", help="schedule: pause re-training")
    when.add_argument("--resume", action="store_true", help="schedule: resume re-training")
    stack.add_argument(
        "--unset",
        action="store_true",
        help="env: print the unset commands instead (after stack down: the shell stops "
        "talking to the stack)",
    )
    stack.add_argument("--cron", help="schedule: when to re-train, e.g. '0 2 * * 0'")
    stack.add_argument("--timezone", help="schedule: the cron's IANA time zone (UTC)")
    over = stack.add_mutually_exclusive_group()
    over.add_argument(
        "--federation-state-dir", type=Path, metavar="STATE",
        help="schedule: re-train over the sites registered with this coordinator "
        "(backend federation; needs --federation-schema)",
    )  # fmt: skip
    over.add_argument(
        "--retrain-data-folder", action="store_true",
        help="schedule: re-train over the data folder again (prefect.yaml's parameters)",
    )  # fmt: skip
    stack.add_argument(
        "--federation-schema", type=Path, metavar="federation.json",
        help="schedule: the federation's schema (with --federation-state-dir)",
    )  # fmt: skip
    stack.add_argument(
        "--min-sites", type=int, metavar="N",
        help="schedule: sites that must be online (default: every site registered)",
    )  # fmt: skip
    stack.add_argument(
        "--rounds", type=int, metavar="T", help="schedule: Stage 1's rounds over the sites"
    )
    stack.set_defaults(action_options=_action_options(stack._actions))


def _action_options(arguments: list[argparse.Action]) -> dict[str, list[tuple[str, str]]]:
    """Action → the (attribute, spelling) of each option only it takes.

    An option belongs to one action when its help starts with that action's name and a colon
    (``"schedule: when to re-train"``): the help that documents it is the one declaration.
    """
    only: dict[str, list[tuple[str, str]]] = {}
    for argument in arguments:
        action = (argument.help or "").partition(":")[0]
        if action in ACTIONS and argument.dest != "action":
            spelling = argument.option_strings[-1] if argument.option_strings else None
            only.setdefault(action, []).append((argument.dest, spelling or argument.dest.upper()))
    return only


def check_action_options(args: argparse.Namespace) -> None:
    """Refuse an option given with an action that does not take it, naming both.

    Raises
    ------
    ConfigError
        For the first action whose options were given with another action.
    """
    from fedcare_core.errors import ConfigError

    for action, options in args.action_options.items():
        given = [name for attr, name in options if getattr(args, attr) not in (None, False, [])]
        if given and args.action != action:
            raise ConfigError(
                f"{', '.join(given)}: only fedcare stack {action} takes "
                f"{'it' if len(given) == 1 else 'them'}, not {args.action}"
            )
    if args.data_dir is not None and not (
        args.action == "up" or (args.action == "schedule" and args.retrain_data_folder)
    ):
        raise ConfigError(
            f"--data-dir has no effect with fedcare stack {args.action}: it is the flow runs' "
            "data folder, given to stack up (or to schedule --retrain-data-folder)"
        )
    if args.action == "schedule":
        if args.federation_state_dir is not None and args.federation_schema is None:
            raise ConfigError("--federation-state-dir needs --federation-schema (federation.json)")
        if args.federation_state_dir is None and (
            args.federation_schema or args.min_sites is not None or args.rounds is not None
        ):
            raise ConfigError(
                "--federation-schema, --min-sites and --rounds go with --federation-state-dir"
            )


def cmd_stack(args: argparse.Namespace) -> int:
    """``fedcare stack up|down|status|env|run|schedule``."""
    import shlex
    from dataclasses import replace

    from fedcare.stack import stack
    from fedcare.stack.settings import StackConfig

    check_action_options(args)

    config = StackConfig(state=args.state_dir, mlflow_dir=args.mlflow_dir, data_dir=args.data_dir)
    if args.prefect_port is not None:
        config = replace(config, prefect_port=args.prefect_port)
    if args.mlflow_port is not None:
        config = replace(config, mlflow_port=args.mlflow_port)
    if args.host is not None:
        config = replace(config, host=args.host)

    def say(message: str) -> None:
        print(f"fedcare stack: {message}", file=sys.stderr)

    if args.action == "run":
        from fedcare.stack.run import run_deployment

        if not args.deployment:
            say("run needs a deployment, e.g. fedcare stack run fedcare/full-experiment")
            return 2
        return run_deployment(config, args.deployment, args.param, out=sys.stdout, say=say)
    if args.action == "schedule":
        return _schedule(args, config)
    if args.action == "env":
        exports = config.client_env()
        if args.unset:  # where the stack is; the offline settings stay
            from fedcare.stack.settings import OFFLINE_ENV

            print(f"unset {' '.join(k for k in exports if k not in OFFLINE_ENV)}")
            return 0
        for key, value in exports.items():
            print(f"export {key}={shlex.quote(value)}")
        return 0
    if args.action == "down":
        stack.down(config, say=say)
        return 0
    if args.action == "up" and not config.loopback:
        say(f"warning: --host {config.host}: the servers have no authentication")
    services = stack.up(config, say=say) if args.action == "up" else stack.status(config)
    for s in services:
        state = ("running" if s.healthy else "not answering") if s.running else "stopped"
        where = f"  {s.url}" if s.url else ""
        print(f"{s.name:15} {state:14} pid {s.pid or '-':>7}{where}")
    if args.action == "up":
        print(f"Prefect UI: {config.prefect_url}   MLflow UI: {config.mlflow_url}")
    return 0 if all(s.running and s.healthy for s in services) else 1


def _schedule(args: argparse.Namespace, config: Any) -> int:
    """``fedcare stack schedule``: show or change the re-training schedule.

    ``[--pause|--resume] [--cron EXPR] [--timezone TZ]``, and what it re-trains over
    (``--federation-state-dir STATE --federation-schema F [--min-sites N] [--rounds T]``, or
    ``--retrain-data-folder``).
    """
    from dataclasses import replace

    from fedcare.procs.services import wait_http
    from fedcare.stack import schedule
    from fedcare_core.errors import ConfigError

    reachable = wait_http(f"{config.prefect_api_url}/health", 1.0)
    current = schedule.on_server(config) if reachable else None
    if current is None:
        raise ConfigError(
            f"the stack's Prefect server ({config.prefect_url}) does not hold "
            f"{schedule.DEPLOYMENT}; bring the stack up first (fedcare stack up)"
        )
    wanted = schedule.checked(args.cron, args.timezone, current)
    if args.pause or args.resume:
        wanted = replace(wanted, active=args.resume)
    if args.federation_state_dir is not None:  # with its schema: check_action_options
        over = schedule.over_sites(
            args.federation_state_dir, args.federation_schema, args.min_sites, args.rounds
        )
        wanted = replace(wanted, federation=over)
    if args.retrain_data_folder:
        wanted = replace(wanted, federation=None)
    if wanted != current:
        wanted = schedule.apply(config, wanted)  # with the data folder it re-trains over
    print(wanted.describe())
    return 0
