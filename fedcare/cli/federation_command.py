"""``fedcare federation``: the coordinator's side of a federation.

``init`` writes the schema every party agrees on; ``start``/``stop`` run the coordinator's
SuperLink (TLS, node authentication); ``register``/``unregister`` admit a site's public key or
withdraw it (key rotation: unregister, then register the new card); ``status`` lists the sites;
``run`` runs Stage 1 over the registered sites and writes the Stage 1 document.
"""

from __future__ import annotations

import argparse
import ipaddress
import time
from pathlib import Path
from typing import Any

from fedcare.cli import federation_init
from fedcare.cli.option_checks import declare_needs, port
from fedcare.cli.options import add_tracking_uri_option, bounded
from fedcare_core.config.fields import Range
from fedcare_core.errors import ConfigError

#: The ports a coordinator may listen on.
PORTS = Range(1, 65_535)
#: What a coordinator's state folder holds once ``federation start`` made it (any of them).
_STATE_ENTRIES = ("ca.crt", "tls", "flwr-home", "superlink.db", "superlink.json", "sites.json")
#: Validity of a CA made by ``federation start`` (``--validity-days``).
_VALIDITY_DAYS = 365


def add_parser(sub: Any) -> None:
    """``fedcare federation``'s sub-commands."""
    federation = sub.add_parser("federation", help="the coordinator's side of a federation")
    fed_sub = federation.add_subparsers(dest="federation_command", required=True)
    federation_init.add_init_parser(fed_sub)
    _add_start(fed_sub)
    stop = fed_sub.add_parser("stop", help="stop the coordinator's SuperLink")
    _state_dir(stop)
    register = fed_sub.add_parser(
        "register", help="admit a site: register its public key with the coordinator"
    )
    _state_dir(register)
    which = register.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--site", type=Path, metavar="SITE_DIR_OR_CARD",
        help="the site folder, or the site-card.json the site sent",
    )  # fmt: skip
    which.add_argument("--public-key", type=Path, metavar="FILE", help="a site's node.pub")
    register.add_argument("--name", help="with --public-key: the site's name")
    register.add_argument("--objectives", help="with --public-key: the site's objectives, a,b")
    register.add_argument("--schema", type=Path, help="with --public-key: the federation schema")
    unregister = fed_sub.add_parser(
        "unregister", help="withdraw a site's key (to rotate it, register the new card after)"
    )
    _state_dir(unregister)
    unregister.add_argument("--name", required=True, help="the site's name")
    status = fed_sub.add_parser(
        "status", help="the coordinator, its registered sites and its latest run"
    )
    _state_dir(status)
    status.add_argument(
        "--watch", action="store_true",
        help="keep watching: print again at every change (a site online, a round ended) "
        "until Ctrl-C",
    )  # fmt: skip
    status.add_argument("--interval", type=float, metavar="S", help="with --watch: seconds (2)")
    declare_needs(status, "--interval", "--watch", why="it is the time between two looks")
    _add_run(fed_sub)


def _state_dir(parser: Any) -> None:
    parser.add_argument(
        "--state-dir", type=Path, required=True, metavar="STATE",
        help="the coordinator's state folder (CA, SuperLink state, registered sites, runs)",
    )  # fmt: skip


def _add_start(fed_sub: Any) -> None:
    start = fed_sub.add_parser(
        "start", help="start the coordinator's SuperLink (TLS, node authentication)"
    )
    _state_dir(start)
    start.add_argument("--port", type=port, required=True, help="the port sites connect to")
    start.add_argument(
        "--host", default="127.0.0.1",
        help="the address it listens on and its certificate names (default 127.0.0.1)",
    )  # fmt: skip
    start.add_argument("--ca-cert", type=Path, help="use this CA certificate (PEM) …")
    start.add_argument("--server-cert", type=Path, help="… this server certificate …")
    start.add_argument("--server-key", type=Path, help="… and its key, instead of making them")
    start.add_argument("--validity-days", type=int, help="validity of a CA made here (365)")


def _add_run(fed_sub: Any) -> None:
    run = fed_sub.add_parser("run", help="run Stage 1 over the registered sites")
    _state_dir(run)
    run.add_argument("--schema", type=Path, required=True, help="the federation schema")
    run.add_argument(
        "--min-sites", type=int, required=True, metavar="N",
        help="wait for N sites; a round with fewer replies stops the run, unaggregated",
    )  # fmt: skip
    run.add_argument("--rounds", type=int, required=True, help="Stage 1 rounds T")
    run.add_argument("--seed", type=int, required=True, help="the run's seed")
    run.add_argument("--out", type=Path, required=True, help="write the Stage 1 document here")
    run.add_argument("--name", help="the run's name (default fedcare-<time>-seed<S>)")
    run.add_argument(
        "--round-timeout", type=float, default=600.0,
        help="seconds to wait for the sites' replies in a round (600)",
    )  # fmt: skip
    run.add_argument(
        "--startup-timeout", type=float, default=600.0,
        help="seconds to wait for --min-sites sites to be online (600)",
    )  # fmt: skip
    run.add_argument(
        "--min-sites-per-round", type=int, metavar="K",
        help="k of n: a round needs the replies of K sites (2 ≤ K ≤ N; default N) and, once "
        "--round-deadline has passed, closes with them (later replies are discarded and noted)",
    )  # fmt: skip
    run.add_argument(
        "--round-deadline", type=float, metavar="S",
        help="seconds after which a round closes once K sites replied (--min-sites-per-round, "
        "else N)",
    )  # fmt: skip
    run.add_argument(
        "--secagg", action="store_true",
        help="sum each round with Flower's SecAgg+: the coordinator sees only per-objective sums",
    )  # fmt: skip
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    add_tracking_uri_option(run, "to log the Stage 1 run to")


def cmd_federation(args: argparse.Namespace) -> int:
    """Run ``fedcare federation <command>``."""
    command = args.federation_command
    if command == "init":
        return federation_init.cmd_federation_init(args)
    from fedcare.sites.coordinator import Coordinator

    if args.state_dir.exists() and not args.state_dir.is_dir():
        raise ConfigError(f"--state-dir {args.state_dir}: a file, not a folder")
    if command in ("stop", "status"):  # the others check theirs after their own options
        _check_state_folder(args.state_dir)
    coordinator = Coordinator(args.state_dir)
    if command == "start":
        return _start(args, coordinator)
    if command == "stop":
        stopped = coordinator.stop()
        print(
            "coordinator stopped" if stopped else f"no coordinator was running in {args.state_dir}"
        )
        return 0
    if command in ("register", "unregister"):
        return _register(args, coordinator)
    if command == "status":
        interval = 2.0 if args.interval is None else args.interval
        return _status(coordinator, args.watch, bounded("--interval", interval, Range(0.1, 3600.0)))
    if command == "run":
        from fedcare.cli.federation_run_command import cmd_federation_run

        return cmd_federation_run(args, coordinator)
    raise AssertionError(command)  # pragma: no cover - argparse rejects the rest


def _check_state_folder(state_dir: Path) -> None:
    """Refuse a ``--state-dir`` that is not a coordinator's (a mistyped one watched for ever).

    Raises
    ------
    ConfigError
        Naming ``--state-dir``: no such folder, or one ``federation start`` did not make.
    """
    if not state_dir.exists():
        raise ConfigError(
            f"--state-dir {state_dir}: no such folder (fedcare federation start makes a "
            "coordinator's state folder)"
        )
    if not any((state_dir / entry).exists() for entry in _STATE_ENTRIES):
        raise ConfigError(
            f"--state-dir {state_dir}: not a coordinator's state folder (no "
            f"{', '.join(_STATE_ENTRIES[:2])} or superlink.json: fedcare federation start makes "
            "one)"
        )


def _start(args: argparse.Namespace, coordinator: Any) -> int:
    from fedcare.flower.tls import TlsFiles
    from fedcare.sites.coordinator import MAX_VALIDITY_DAYS

    try:
        ipaddress.ip_address(args.host)
    except ValueError:
        raise ConfigError(f"--host {args.host!r}: give an IP address") from None
    bounded("--port", args.port, PORTS)
    days = _VALIDITY_DAYS if args.validity_days is None else args.validity_days
    bounded("--validity-days", days, Range(1, MAX_VALIDITY_DAYS))
    given_files = (args.ca_cert, args.server_cert, args.server_key)
    given = None
    if any(f is not None for f in given_files):
        if not all(f is not None for f in given_files):
            raise ConfigError("--ca-cert, --server-cert and --server-key go together (PEM files)")
        if args.validity_days is not None:
            raise ConfigError(
                "--validity-days has no effect with --ca-cert: it is the validity of a CA made "
                "here, and the given certificates keep their own dates"
            )
        given = TlsFiles(*given_files)  # each checked (PEM, dates, key, issuer) before use
    coordinator.start(args.host, args.port, given=given, validity_days=days)
    print(f"coordinator listening on {args.host}:{args.port} (TLS, node authentication)")
    print(f"give the sites {coordinator.ca_cert} (their --root-certificates)")
    return 0


def _register(args: argparse.Namespace, coordinator: Any) -> int:
    if args.federation_command == "unregister":
        from fedcare_core.files.safe_names import check_name

        check_name(args.name, "--name", "site name")
        _check_state_folder(args.state_dir)
        coordinator.unregister(args.name)
        print(f"site {args.name!r} unregistered: its key no longer admits it")
        return 0
    card = _card(args)
    _check_state_folder(args.state_dir)
    site = coordinator.register(card)
    objectives = ", ".join(site.objectives)
    print(f"site {site.name!r} registered (node {site.node_id}; objectives {objectives})")
    return 0


def _card(args: argparse.Namespace) -> Any:
    from fedcare.sites.site_folder import CARD_FILE, SiteCard
    from fedcare_core.sites.schema import read_schema

    if args.site is not None:
        if any(v is not None for v in (args.name, args.objectives, args.schema)):
            raise ConfigError("--name, --objectives and --schema go with --public-key only")
        path = args.site / CARD_FILE if args.site.is_dir() else args.site
        return SiteCard.read(path)
    if args.name is None or args.objectives is None or args.schema is None:
        raise ConfigError("--public-key needs --name, --objectives and --schema")
    from fedcare.flower.tls_checks import check_node_public_key, read_key_file
    from fedcare_core.config.preferences import split_objectives
    from fedcare_core.files.safe_names import check_name

    name = check_name(args.name, "--name", "site name")
    schema = read_schema(args.schema)
    objectives, _ = schema.check_site_objectives(split_objectives(args.objectives))
    data = read_key_file(args.public_key, "--public-key")
    where = f"--public-key {args.public_key}"
    key = check_node_public_key(data.decode("utf-8", errors="replace"), where)
    return SiteCard(name, objectives, schema.digest(), key)


def _status(coordinator: Any, watch: bool, interval: float) -> int:
    """Print the coordinator, its sites and its latest run (``watch``: at each change)."""
    shown: list[str] = []
    while True:
        lines = _status_lines(coordinator)
        if lines != shown:
            if watch:
                print(time.strftime("-- %H:%M:%S"))
            print("\n".join(lines), flush=True)
            shown = lines
        if not watch:
            return 0
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return 0


def _status_lines(coordinator: Any) -> list[str]:
    from fedcare.sites.run_status import latest_run

    record = coordinator.running()
    sites = coordinator.sites()
    online: set[int] = set()
    if record is None:
        lines = [f"coordinator of {coordinator.root}: not running"]
    else:
        lines = [f"coordinator of {coordinator.root}: running on {record['host']}:{record['port']}"]
        online = coordinator.online_nodes()
    for site in sorted(sites.values(), key=lambda s: s.name):
        state = "online" if site.node_id in online else "offline"
        lines.append(
            f"  {site.name}: {state}; objectives {', '.join(site.objectives)}; "
            f"schema {site.schema_digest[:12]}"
        )
    if not sites:
        lines.append("  no site registered")
    run = latest_run(coordinator.runs_dir)
    lines += ["no run yet"] if run is None else run.lines()
    return lines
