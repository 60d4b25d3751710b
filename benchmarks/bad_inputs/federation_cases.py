"""The coordinator's commands: ``fedcare federation`` init, start, stop, status, (un)register, run.

Hostile inputs of issue 28 (point 3): names from site cards and flags that would leave the state
folder, cards and state files of the wrong types, certificates and keys that are not PEM,
numbers that pass a sign check and overflow later. The register cases run against a live
coordinator (its state in ``{in}/ST``, stopped by the case's teardown) so a name that escapes
would really be written; the SuperLink's own database and log are ``volatile``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from case_model import Builder, Case, Sources
from site_fixtures import (
    SUPERLINK_VOLATILE,
    copy,
    edit_json,
    start_coordinator,
    steps,
    stop_coordinator,
    write,
)

STATE = "{in}/ST"
DIGEST = "0" * 64
OUT = "{work}/out/f.json"


def _init(cid: str, names: tuple[str, ...], *flags: str, expect: str = "refused") -> Case:
    argv = ("federation", "init", "--dataset", "diabetes130", "--out", OUT, *flags)
    outputs = (OUT,) if expect == "accepted" else ()
    category = "federation-init" + ("-valid" if expect == "accepted" else "")
    return Case(cid, category, expect, argv, names=names, outputs=outputs)


def init_cases() -> list[Case]:
    """``federation init``: DP numbers that overflowed later, seeds and rounds out of range."""
    nm, cl = "dp_noise_multiplier|--dp-noise-multiplier", "dp_clip|--dp-clip"
    return [
        _init("fed-init-dp-noise-huge", (nm,), "--dp-noise-multiplier", "1e300"),
        _init("fed-init-dp-noise-tiny", (nm,), "--dp-noise-multiplier", "1e-300"),
        _init("fed-init-dp-clip-huge", (cl,), "--dp-noise-multiplier", "1", "--dp-clip", "1e300"),
        _init("fed-init-dp-clip-tiny", (cl,), "--dp-noise-multiplier", "1", "--dp-clip", "1e-320"),
        _init("fed-init-seed-huge", ("seed|--seed",), "--seed", str(2**40)),
        _init("fed-init-rounds-huge", ("rounds|--rounds",), "--rounds", str(10**9)),
        _init("fed-init-algorithm", ("fedcare|algorithm",), "--algorithm", "fedavg"),
        _init(
            "fed-ok-init-dp-bounds",
            (),
            "--dp-noise-multiplier",
            "0.001",
            "--dp-clip",
            "1e6",
            expect="accepted",
        ),
    ]


def _start(cid: str, names: tuple[str, ...], *flags: str, build: Builder | None = None) -> Case:
    argv = ("federation", "start", "--state-dir", STATE, "--port", "{port}", *flags)
    return Case(
        cid, "federation-start", "refused", argv, build or (lambda i, s: None), names=names,
        teardown=stop_coordinator, timeout=120,
    )  # fmt: skip


def _given(ca: str, cert: str, key: str) -> tuple[str, ...]:
    return ("--ca-cert", f"{{in}}/{ca}", "--server-cert", f"{{in}}/{cert}", "--server-key",
            f"{{in}}/{key}")  # fmt: skip


def start_cases() -> list[Case]:
    """``federation start``: bounds, certificates Flower could not use, a state file."""
    tls = copy("tls", "other-tls", "expired-ca.pem")
    garbage = steps(tls, write("garbage.pem", "not a certificate\n"))
    vd, ca, sc, sk = "--validity-days", "--ca-cert", "--server-cert", "--server-key"
    kept = steps(tls, write("ST/tls/server.key", "garbage\n"), write("ST/tls/ca.pem", "x\n"))
    return [
        _start("fed-start-validity-huge", (vd,), vd, str(10**9)),
        _start("fed-start-validity-zero", (vd,), vd, "0"),
        _start("fed-start-port-zero", ("--port",), "--port", "0"),
        _start("fed-start-port-huge", ("--port",), "--port", "70000"),
        _start("fed-start-host-name", ("--host",), "--host", "coordinator.example.org"),
        _start("fed-start-ca-not-pem", (ca, "garbage.pem"),
               *_given("garbage.pem", "tls/server.pem", "tls/server.key"), build=garbage),
        _start("fed-start-key-not-pem", (sk,),
               *_given("tls/ca.pem", "tls/server.pem", "garbage.pem"), build=garbage),
        _start("fed-start-key-of-another", (sk,),
               *_given("tls/ca.pem", "tls/server.pem", "other-tls/server.key"), build=tls),
        _start("fed-start-cert-other-ca", (sc,),
               *_given("other-tls/ca.pem", "tls/server.pem", "tls/server.key"), build=tls),
        _start("fed-start-ca-expired", (ca, "expired"),
               *_given("expired-ca.pem", "tls/server.pem", "tls/server.key"), build=tls),
        _start("fed-start-ca-missing", (ca, "no such file"),
               *_given("nowhere.pem", "tls/server.pem", "tls/server.key"), build=tls),
        _start("fed-start-only-ca", ("--ca-cert",), ca, "{in}/tls/ca.pem", build=tls),
        _start("fed-start-state-is-file", ("--state-dir",), build=write("ST", "a file\n")),
        _start("fed-start-kept-tls-garbage", ("certificate|server.key|ca.pem",), build=kept),
        Case("fed-ok-start", "federation-start-valid", "accepted",
             ("federation", "start", "--state-dir", STATE, "--port", "{port}"),
             teardown=stop_coordinator, timeout=120),
        Case("fed-ok-start-given", "federation-start-valid", "accepted",
             ("federation", "start", "--state-dir", STATE, "--port", "{port}",
              *_given("tls/ca.pem", "tls/server.pem", "tls/server.key")),
             tls, teardown=stop_coordinator, timeout=120),
    ]  # fmt: skip


def _record(**changes: Any) -> str:
    record = {"pid": 1, "host": "127.0.0.1", "port": 9092, "token": "0" * 32, "started": ""}
    return json.dumps(record | changes)


def _sites(**entry: Any) -> str:
    good = {"objectives": ["los"], "schema_digest": DIGEST, "node_id": 3}
    name = entry.pop("name", "north")
    return json.dumps({name: good | entry})


def _state(cid: str, command: str, names: tuple[str, ...], build: Builder, *extra: str) -> Case:
    argv = ("federation", command, "--state-dir", STATE, *extra)
    return Case(cid, "federation-state", "refused", argv, build, names=names)


def state_cases() -> list[Case]:
    """``stop``/``status``/``unregister`` on a state folder edited by hand."""
    rec, sit = "ST/superlink.json", "ST/sites.json"
    return [
        _state("fed-stop-pid-one", "stop", ("superlink.json", "pid"), write(rec, _record())),
        _state("fed-stop-pid-text", "stop", ("superlink.json", "pid"),
               write(rec, _record(pid="x"))),
        _state("fed-stop-record-list", "stop", ("superlink.json",), write(rec, "[1]")),
        _state("fed-stop-record-garbage", "stop", ("superlink.json",), write(rec, "{")),
        _state("fed-stop-no-start-time", "stop", ("superlink.json", "started"),
               write(rec, _record(pid=2))),
        _state("fed-status-sites-garbage", "status", ("sites.json",), write(sit, "zz")),
        _state("fed-status-site-escape", "status", ("sites.json", "../../x"),
               write(sit, _sites(name="../../x"))),
        _state("fed-status-node-id-text", "status", ("sites.json", "node_id"),
               write(sit, _sites(node_id="x"))),
        _state("fed-status-objectives-text", "status", ("sites.json", "objectives"),
               write(sit, _sites(objectives="los"))),
        _state("fed-unregister-escape", "unregister", ("--name",), lambda i, s: None,
               "--name", "../../x"),
        _state("fed-unregister-empty", "unregister", ("--name",), lambda i, s: None, "--name", ""),
        # A folder no coordinator made (issue 52, 6: a mistyped one was watched for ever).
        _state("fed-status-empty", "status", ("--state-dir",), write("ST/.keep", "")),
        _state("fed-stop-none", "stop", ("--state-dir",), write("ST/.keep", "")),
        Case("fed-ok-status-stopped", "federation-state-valid", "accepted",
             ("federation", "status", "--state-dir", STATE), write("ST/sites.json", "{}")),
        Case("fed-ok-stop-stopped", "federation-state-valid", "accepted",
             ("federation", "stop", "--state-dir", STATE), write("ST/sites.json", "{}")),
    ]  # fmt: skip


def _card(change: Any) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        doc = json.loads((inp / "north" / "site-card.json").read_text())
        change(doc)
        (inp / "card.json").write_text(json.dumps(doc))

    return build


def _register(cid: str, names: tuple[str, ...], build: Builder, *which: str) -> Case:
    argv = ("federation", "register", "--state-dir", STATE, *which)
    return Case(
        cid, "federation-register", "refused", argv,
        steps(copy("sites/north", "fed.json", "rsa-node.pub"), start_coordinator, build),
        names=names, teardown=stop_coordinator, volatile=SUPERLINK_VOLATILE, timeout=120,
    )  # fmt: skip


def register_cases() -> list[Case]:
    """``register`` with hostile cards and keys, against a live coordinator."""
    card = ("--site", "{in}/card.json")
    key = ("--public-key", "{in}/key.pub", "--objectives", "los", "--schema", "{in}/fed.json")
    nm = ("card.json", "name")
    return [
        _register("fed-reg-name-escape", nm, _card(lambda d: d.update(name="../../x")), *card),
        _register("fed-reg-name-absolute", nm, _card(lambda d: d.update(name="/tmp/x")), *card),
        _register("fed-reg-name-empty", nm, _card(lambda d: d.update(name="")), *card),
        _register("fed-reg-name-newline", nm, _card(lambda d: d.update(name="a\nb")), *card),
        _register("fed-reg-name-nul", nm, _card(lambda d: d.update(name="a\x00b")), *card),
        _register("fed-reg-name-long", nm, _card(lambda d: d.update(name="n" * 5000)), *card),
        _register("fed-reg-objectives-text", ("card.json", "objectives"),
                  _card(lambda d: d.update(objectives="los")), *card),
        _register("fed-reg-objectives-empty", ("card.json", "objectives"),
                  _card(lambda d: d.update(objectives=[])), *card),
        _register("fed-reg-digest-number", ("card.json", "schema_digest"),
                  _card(lambda d: d.update(schema_digest=12)), *card),
        _register("fed-reg-key-garbage", ("card.json", "public_key"),
                  _card(lambda d: d.update(public_key="hello")), *card),
        _register("fed-reg-card-list", ("card.json",), write("card.json", "[]"), *card),
        _register("fed-reg-card-missing", ("card.json",), lambda i, s: None, *card),
        _register("fed-reg-public-key-garbage", ("--public-key",), write("key.pub", "garbage\n"),
                  *key, "--name", "north"),
        _register("fed-reg-public-key-rsa", ("--public-key",),
                  lambda i, s: (i / "key.pub").write_bytes((i / "rsa-node.pub").read_bytes()),
                  *key, "--name", "north"),
        _register("fed-reg-public-key-bad-name", ("--name",),
                  lambda i, s: (i / "key.pub").write_bytes(
                      (i / "north" / "keys" / "node.pub").read_bytes()),
                  *key, "--name", "../x"),
        Case("fed-ok-register", "federation-register-valid", "accepted",
             ("federation", "register", "--state-dir", STATE, "--site", "{in}/north"),
             steps(copy("sites/north"), start_coordinator), teardown=stop_coordinator,
             timeout=120),
    ]  # fmt: skip


def run_cases() -> list[Case]:
    """``federation run``: options refused before it waits for any site."""

    def fr(cid: str, names: tuple[str, ...], *extra: str, build: Builder | None = None) -> Case:
        argv = (
            "federation",
            "run",
            "--state-dir",
            STATE,
            "--schema",
            "{in}/fed.json",
            "--min-sites",
            "2",
            "--rounds",
            "1",
            "--seed",
            "0",
            "--out",
            OUT,
            *extra,
        )
        return Case(cid, "federation-run", "refused", argv, build or copy("fed.json"),
                    names=names, timeout=120)  # fmt: skip

    bad_schema = steps(copy("fed.json"), edit_json("fed.json", lambda d: d["features"].update(
        common="age")))  # fmt: skip
    return [
        fr("fed-run-min-sites-huge", ("--min-sites",), "--min-sites", str(10**9)),
        fr("fed-run-rounds-zero", ("--rounds",), "--rounds", "0"),
        fr("fed-run-rounds-huge", ("--rounds",), "--rounds", str(10**9)),
        fr("fed-run-seed-negative", ("--seed",), "--seed", "-1"),
        fr("fed-run-name-escape", ("--name",), "--name", "../../escaped"),
        fr("fed-run-name-newline", ("--name",), "--name", "a\nb"),
        fr("fed-run-round-timeout-huge", ("--round-timeout",), "--round-timeout", "1e300"),
        fr("fed-run-startup-timeout-inf", ("--startup-timeout",), "--startup-timeout", "inf"),
        fr("fed-run-round-timeout-zero", ("--round-timeout",), "--round-timeout", "0"),
        fr("fed-run-schema-garbage", ("fed.json",), build=write("fed.json", "{not json")),
        fr("fed-run-schema-type", ("fed.json", "features.common"), build=bad_schema),
    ]


def federation_cases(src: Sources) -> list[Case]:
    """Every ``fedcare federation`` case."""
    return init_cases() + start_cases() + state_cases() + register_cases() + run_cases()
