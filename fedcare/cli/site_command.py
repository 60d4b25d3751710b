"""``fedcare site``: what a hospital's data team runs (prepare, join, personalise)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.cli import site_prepare
from fedcare.cli.option_checks import declare_needs

if TYPE_CHECKING:
    from fedcare.sites.site_join import Following


def add_parser(sub: Any) -> None:
    """``fedcare site``'s sub-commands."""
    site = sub.add_parser("site", help="a hospital's side of a federation")
    site_sub = site.add_subparsers(dest="site_command", required=True)
    site_prepare.add_prepare_parser(site_sub)
    join = site_sub.add_parser(
        "join", help="run the site's node in the federation until stopped (Ctrl-C)"
    )
    join.add_argument("--site", type=Path, required=True, metavar="SITE_DIR")
    join.add_argument(
        "--superlink", required=True, metavar="HOST:PORT", help="the coordinator's address"
    )
    join.add_argument(
        "--root-certificates", type=Path, required=True, metavar="CA.crt",
        help="the coordinator's CA certificate (its STATE/ca.crt)",
    )  # fmt: skip
    join.add_argument(
        "--personalise", action="store_true",
        help="follow the federation: on each new w*, run Stage 2 here and register the model "
        "in --tracking-uri as the challenger, promoted to champion unless worse on this site's "
        "validation rows by more than --promotion-margin",
    )  # fmt: skip
    join.add_argument("--tracking-uri", metavar="URI", help="with --personalise: the site's store")
    join.add_argument(
        "--promotion-margin", type=float, metavar="M",
        help="with --personalise: the validation score a challenger may lose and still be "
        "promoted (default 0: not worse)",
    )  # fmt: skip
    declare_needs(join, "--tracking-uri", "--personalise", why="the store of the models it makes")
    declare_needs(
        join, "--promotion-margin", "--personalise", why="it decides the promotion of the models "
        "--personalise registers",
    )  # fmt: skip
    site_prepare.add_personalise_parser(site_sub)
    pending = site_sub.add_parser(
        "pending", help="the runs awaiting this site's approval (policy: require_approval)"
    )
    pending.add_argument("--site", type=Path, required=True, metavar="SITE_DIR")
    approve = site_sub.add_parser(
        "approve", help="approve a pending run's terms (the coordinator may then start it)"
    )
    approve.add_argument("--site", type=Path, required=True, metavar="SITE_DIR")
    approve.add_argument("--run", required=True, metavar="NAME", help="the pending run's name")
    audit = site_sub.add_parser(
        "audit",
        help="what left this site, run by run (its audit log); with --run and --received, "
        "check the coordinator's record of a run against it, message by message",
    )
    audit.add_argument("--site", type=Path, required=True, metavar="SITE_DIR")
    audit.add_argument("--run", metavar="NAME", help="the run to check (with --received)")
    audit.add_argument(
        "--received", type=Path, metavar="received.jsonl",
        help="the coordinator's record of the run's replies (its STATE/runs/NAME/result/"
        "received.jsonl: digests only, no data)",
    )  # fmt: skip
    rotate = site_sub.add_parser(
        "rotate-key", help="make a new node key pair and site card (then re-register the card)"
    )
    rotate.add_argument("--site", type=Path, required=True, metavar="SITE_DIR")


def cmd_site(args: argparse.Namespace) -> int:
    """Run ``fedcare site <command>``."""
    if args.site_command == "prepare":
        return site_prepare.cmd_site_prepare(args)
    if args.site_command == "join":
        return _join(args)
    if args.site_command == "rotate-key":
        return _rotate(args)
    if args.site_command in ("pending", "approve"):
        return _approvals(args)
    if args.site_command == "personalise":
        return site_prepare.cmd_site_personalise(args)
    if args.site_command == "audit":
        return _audit(args)
    raise AssertionError(args.site_command)  # pragma: no cover - argparse rejects the rest


def _join(args: argparse.Namespace) -> int:
    """``fedcare site join``: the site's node until Ctrl-C."""
    from fedcare.flower.tls_checks import check_certificates, check_node_key
    from fedcare.sites.site_folder import SiteFolder
    from fedcare.sites.site_join import join_federation
    from fedcare_core.sites.policy import POLICY_FILE, read_policy

    _check_superlink(args.superlink)
    site = SiteFolder.open(args.site)  # site.json and the card checked
    read_policy(site.root / POLICY_FILE)  # a broken policy stops the join, named, before it runs
    # Flower reads these only once its node runs, and would retry a bad CA's handshake forever.
    check_certificates(args.root_certificates, "--root-certificates")
    check_node_key(site.private_key, f"--site {site.root}: the node key")

    def say(line: str) -> None:
        print(f"fedcare: {line}", file=sys.stderr, flush=True)

    join_federation(site, args.superlink, args.root_certificates, say=say, follow=_following(args))
    return 0


def _following(args: argparse.Namespace) -> Following | None:
    """``--personalise`` with its store and margin, checked (None: the site does not follow)."""
    from fedcare.cli.options import bounded
    from fedcare.sites.site_join import Following
    from fedcare_core.config.fields import Range
    from fedcare_core.errors import ConfigError

    if not args.personalise:  # --tracking-uri and --promotion-margin need it: check_parsed
        return None
    if not args.tracking_uri:
        raise ConfigError("--personalise needs --tracking-uri: the store its models go to")
    margin = 0.0 if args.promotion_margin is None else args.promotion_margin
    bounded("--promotion-margin", margin, Range(0.0, 1e6))
    from fedcare.cli import tracked

    tracked.open_store(args.tracking_uri)  # reachable now, not at the first w*
    return Following(args.tracking_uri, margin)


#: What a host in ``--superlink`` may hold: a DNS name or an IPv4 address (or ``[IPv6]``).
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\]")


def _check_superlink(address: str) -> tuple[str, int]:
    """``--superlink HOST:PORT`` as host and port, or a one-line refusal (before any process).

    Raises
    ------
    ConfigError
        Naming ``--superlink``: no port, a port outside 1..65535, or a host that is not a DNS
        name or an IP address (Flower's SuperNode would print its own error, or retry forever).
    """
    from fedcare_core.errors import ConfigError

    host, sep, port = address.rpartition(":")
    if not sep or _HOST.fullmatch(host) is None or not port.isdigit() or len(port) > 5:
        raise ConfigError(f"--superlink {address!r}: give HOST:PORT (a name or an IP address)")
    if not 1 <= int(port) <= 65_535:
        raise ConfigError(f"--superlink {address!r}: the port must lie in [1, 65535]")
    return host, int(port)


def _approvals(args: argparse.Namespace) -> int:
    """``fedcare site pending`` / ``approve``: the runs awaiting this site's operator."""
    from fedcare.flower.site_rules import approve, pending_runs
    from fedcare.sites.site_folder import SiteFolder

    site = SiteFolder.open(args.site)
    if args.site_command == "approve":
        terms = approve(site.root, args.run)
        print(f"site {site.name}: approved run {terms.run_name} (terms {terms.digest()[:12]})")
        return 0
    runs = pending_runs(site.root)
    for terms in runs:
        dp = "no DP" if terms.noise_multiplier is None else (
            f"DP z {terms.noise_multiplier:.4g}, δ {terms.delta:g}, ε {terms.epsilon('pld'):.4g}"
        )  # fmt: skip
        print(f"{terms.run_name}: {terms.algorithm}, {terms.rounds} rounds, objectives "
              f"{', '.join(terms.objectives)}, secure aggregation "
              f"{'on' if terms.secagg else 'off'}, {dp}")  # fmt: skip
    if not runs:
        print(f"site {site.name}: no run awaits approval")
    return 0


def _audit(args: argparse.Namespace) -> int:
    """``fedcare site audit``: the site's runs, or the coordinator's record of one checked.

    Exit 0 when every message the coordinator recorded is one the site sent, 1 when not.
    """
    from fedcare.flower.audit import AUDIT_FILE
    from fedcare.sites.audit_check import check_received, runs_sent
    from fedcare.sites.site_folder import SiteFolder
    from fedcare_core.errors import ConfigError

    site = SiteFolder.open(args.site)
    log = site.root / AUDIT_FILE
    if (args.run is None) != (args.received is None):
        raise ConfigError("--run and --received go together: the run to check and its record")
    if args.run is None:
        for run in runs_sent(log):
            rule = f" by its rule {run.rule}" if run.rule else ""
            print(f"{run.run_name} (Flower run {run.run_id}): {run.decision}{rule}; "
                  f"{run.messages} message(s) sent, {run.bytes:,} bytes")  # fmt: skip
        if not log.exists():
            print(f"site {site.name}: no audit log yet ({log}): it has taken part in no run")
        return 0
    check = check_received(log, site.name, args.run, args.received)
    head = f"run {check.run.run_name} (Flower run {check.run.run_id}), site {site.name}"
    print(f"{head}: the coordinator recorded {check.recorded} message(s) from this site, "
          f"{check.recorded - len(check.never_sent)} of them as this site sent them"
          + (f"; {check.errors} error repl(ies) by code" if check.errors else ""))  # fmt: skip
    for round_, kind, digest in check.never_sent:
        print(f"  NOT SENT by this site: round {round_} {kind} sha256 {digest}")
    for round_, kind, digest in check.unrecorded:
        print(f"  sent, not in the record (a late reply never pulled?): round {round_} {kind} "
              f"sha256 {digest[:16]}…")  # fmt: skip
    if check.recorded == 0:
        print(f"  the record holds no message from {site.name}: is it this run's record?")
    return 0 if check.agrees else 1


def _rotate(args: argparse.Namespace) -> int:
    """``fedcare site rotate-key``: a new key pair; the card to send the coordinator."""
    from fedcare.sites.site_folder import CARD_FILE, SiteFolder, rotate_key

    site = SiteFolder.open(args.site)
    card = rotate_key(site)
    print(f"site {card.name}: new node key in {site.private_key} (keep it secret)")
    print(
        f"send {site.root / CARD_FILE} to the coordinator, who runs `fedcare federation "
        f"unregister --name {card.name}` and `fedcare federation register --site <card>`; "
        "until then the old key is the registered one"
    )
    return 0
