"""Options checked too late (issue 52, 6): bounds, conflicts and options with no effect.

Every command's options must be checked before it starts a process, creates a file, folder or
store, or takes a lock: ``fedcare stack up`` with one port for both servers hung and left its
state behind; a port out of range, or ``federation start --state-dir somefile/STATE``, ended in
a traceback; ``fedcare run --tracking-uri sqlite:///x.db --clients 1`` made ``x.db`` before
refusing; ``federation status --watch`` on a mistyped state folder watched for ever (and exited
0 without ``--watch``); ``--dp-delta`` alone and ``site join --promotion-margin`` without
``--personalise`` were silently ignored. The ``opt-ok-*`` cases are valid combinations that must
still be accepted. Stack cases name ``--state-dir``/``--mlflow-dir`` in the case folder, so a
refusal that left anything behind is seen.
"""

from __future__ import annotations

from case_model import OUT_FILE, Builder, Case, Sources
from config_cases import run_argv
from site_fixtures import copy, stop_coordinator, write

#: The stack's folders, in the case folder.
_STACK = ("--state-dir", "{work}/st", "--mlflow-dir", "{work}/ml")
_STATE = "{in}/ST"
_NO_EFFECT = "a flag that only matters with another was silently ignored"


def _plain_file(rel: str = "plain") -> Builder:
    return write(rel, "a file, not a folder\n")


def _refused(
    cid: str,
    category: str,
    argv: tuple[str, ...],
    names: tuple[str, ...],
    build: Builder | None = None,
    note: str = "",
    timeout: float | None = 60,
) -> Case:
    return Case(cid, category, "refused", argv, build or (lambda i, s: None), names=names,
                note=note, timeout=timeout, teardown=stop_coordinator)  # fmt: skip


def stack_cases() -> list[Case]:
    """``fedcare stack``: ports and folders, before any folder, token, pid file or process."""
    pp, mp = "--prefect-port", "--mlflow-port"
    up = ("stack", "up", *_STACK)
    return [
        _refused("opt-stack-same-port", "options-stack", (*up, pp, "4399", mp, "4399"), (pp, mp),
                 note="hung (both servers started on one port) and left its state folder"),
        _refused("opt-stack-port-default-clash", "options-stack", (*up, pp, "5000"), (pp, mp),
                 note="MLflow's default port is 5000"),
        _refused("opt-stack-port-huge", "options-stack", (*up, pp, "70000"), (pp,),
                 note="a traceback from the socket"),
        _refused("opt-stack-port-zero", "options-stack", ("stack", "status", *_STACK, mp, "0"),
                 (mp,)),
        _refused("opt-stack-port-text", "options-stack", (*up, pp, "http"), (pp,)),
        _refused("opt-stack-state-under-file", "options-stack",
                 ("stack", "up", "--state-dir", "{in}/plain/st", "--mlflow-dir", "{work}/ml"),
                 ("--state-dir",), _plain_file()),
        _refused("opt-stack-mlflow-dir-is-file", "options-stack",
                 ("stack", "up", "--state-dir", "{work}/st", "--mlflow-dir", "{in}/plain"),
                 ("--mlflow-dir",), _plain_file()),
        _refused("opt-stack-data-dir-status", "options-stack",
                 ("stack", "status", *_STACK, "--data-dir", "{in}"), ("--data-dir",),
                 note=_NO_EFFECT),
        Case("opt-ok-stack-env-ports", "options-valid", "accepted",
             ("stack", "env", *_STACK, pp, "4398", mp, "5398"), timeout=60),
    ]  # fmt: skip


def federation_cases() -> list[Case]:
    """``fedcare federation``: a state folder that is not a coordinator's, ports, no effect."""
    sd = "--state-dir"
    status = ("federation", "status", sd)
    return [
        _refused("opt-fed-start-state-under-file", "options-federation",
                 ("federation", "start", sd, "{in}/plain/ST", "--port", "{port}"), (sd,),
                 _plain_file(), note="a NotADirectoryError traceback"),
        _refused("opt-fed-start-port-text", "options-federation",
                 ("federation", "start", sd, _STATE, "--port", "http"), ("--port",)),
        _refused("opt-fed-start-validity-given-certs", "options-federation",
                 ("federation", "start", sd, _STATE, "--port", "{port}", "--validity-days", "30",
                  "--ca-cert", "{in}/tls/ca.pem", "--server-cert", "{in}/tls/server.pem",
                  "--server-key", "{in}/tls/server.key"),
                 ("--validity-days",), copy("tls"), note=_NO_EFFECT + " (a CA's validity)"),
        _refused("opt-fed-status-missing", "options-federation", (*status, "{in}/STAET"), (sd,),
                 note="reported 'not running', exit 0"),
        _refused("opt-fed-status-watch-missing", "options-federation",
                 (*status, "{in}/STAET", "--watch"), (sd,), note="watched for ever"),
        _refused("opt-fed-status-not-coordinator", "options-federation", (*status, "{in}/empty"),
                 (sd,), write("empty/.keep", "")),
        _refused("opt-fed-stop-missing", "options-federation",
                 ("federation", "stop", sd, "{in}/STAET"), (sd,)),
        _refused("opt-fed-unregister-not-coordinator", "options-federation",
                 ("federation", "unregister", sd, "{in}/empty", "--name", "north"), (sd,),
                 write("empty/.keep", "")),
        _refused("opt-fed-status-interval-alone", "options-federation",
                 (*status, _STATE, "--interval", "5"), ("--interval",),
                 write("ST/sites.json", "{}"), note=_NO_EFFECT),
        Case("opt-ok-fed-status-coordinator", "options-valid", "accepted", (*status, _STATE),
             write("ST/sites.json", "{}"), timeout=60,
             note="a stopped coordinator's folder (its sites.json)"),
    ]  # fmt: skip


def site_cases() -> list[Case]:
    """``fedcare site join``: the options of --personalise given without it."""
    join = ("site", "join", "--site", "{in}/north", "--superlink", "127.0.0.1:{port}",
            "--root-certificates", "{in}/tls/ca.pem")  # fmt: skip
    build = copy("sites/north", "tls")
    return [
        _refused("opt-site-join-margin-alone", "options-site",
                 (*join, "--promotion-margin", "0.1"), ("--promotion-margin",), build,
                 note=_NO_EFFECT + " (the join ran)"),
        _refused("opt-site-join-store-alone", "options-site",
                 (*join, "--tracking-uri", "sqlite:///{work}/m.db"), ("--tracking-uri",), build),
    ]  # fmt: skip


def run_cases(src: Sources) -> list[Case]:
    """``fedcare run``: settings that would be ignored, and a store made before a refusal."""
    store = "sqlite:///{work}/store/mlflow.db"

    def r(
        cid: str,
        names: tuple[str, ...],
        build: Builder | None = None,
        note: str = _NO_EFFECT,
        **flags: str | None,
    ) -> Case:
        return _refused(cid, "options-run", run_argv(src, **flags), names, build, note,
                        timeout=None)  # fmt: skip

    return [
        r("opt-run-store-clients-one", ("--clients|clients",), tracking_uri=store, clients="1",
          note="made the store before refusing"),
        r("opt-run-store-under-file", ("--tracking-uri",), _plain_file(),
          tracking_uri="sqlite:///{in}/plain/m.db", note="a traceback after the data checks"),
        r("opt-run-store-not-sqlite", ("--tracking-uri",), write("m.db", "not a database\n"),
          tracking_uri="sqlite:///{in}/m.db", note=""),
        r("opt-run-data-dir-under-file", ("--data-dir",), _plain_file(),
          data_dir="{in}/plain/data", note=""),
        r("opt-run-dp-delta-alone", ("--dp-delta",), dp_delta="1e-6"),
        r("opt-run-dp-clip-alone", ("--dp-clip",), dp_clip="2"),
        r("opt-run-dp-accountant-alone", ("--dp-accountant",), dp_accountant="rdp"),
        r("opt-run-dp-noise-seed-alone", ("--dp-noise-seed",), dp_noise_seed="3"),
        r("opt-run-fairness-weight-alone", ("--fairness-weight",), fairness_weight="2"),
        r("opt-run-sensitivity-weight-fair-only", ("--sensitivity-weight",),
          sensitivity_weight="3", preferences="readmission:fair(race)"),
        r("opt-run-stage2-with-fedavg", ("--stage2-prox",), algorithm="fedavg",
          stage2_prox="1"),
        Case("opt-ok-run-dp-delta-with-epsilon", "options-valid", "accepted",
             run_argv(src, dp_epsilon="8", dp_delta="1e-6"), outputs=(OUT_FILE,)),
        Case("opt-ok-run-store-made-after-checks", "options-valid", "accepted",
             run_argv(src, tracking_uri=store), outputs=(OUT_FILE, "{work}/store/mlflow.db"),
             note="the store is made when the finished run is logged"),
    ]  # fmt: skip


def other_cases() -> list[Case]:
    """``fedcare experiment`` and ``fedcare data``: no effect, paths under a file."""
    return [
        _refused("opt-experiment-store-no-mlflow", "options-other",
                 ("experiment", "comparison", "--tracking-uri", "sqlite:///{work}/m.db",
                  "--out", "{work}/exp"), ("--tracking-uri",), note=_NO_EFFECT),
        _refused("opt-fetch-cache-under-file", "options-other",
                 ("data", "fetch", "diabetes130", "--cache-dir", "{in}/plain/cache"),
                 ("--cache-dir",), _plain_file()),
        _refused("opt-split-out-under-file", "options-other",
                 ("data", "split-sites", "--dataset", "diabetes130", "--data", "{in}/x.csv",
                  "--sites", "3", "--seed", "0", "--out", "{in}/plain/sites"),
                 ("--out",), _plain_file()),
    ]  # fmt: skip


def option_cases(src: Sources) -> list[Case]:
    """Every ``opt-`` case."""
    return stack_cases() + federation_cases() + site_cases() + run_cases(src) + other_cases()
