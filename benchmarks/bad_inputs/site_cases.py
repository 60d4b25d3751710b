"""A hospital's commands: ``fedcare site prepare/join/personalise/rotate-key``.

Each case copies a site folder the harness prepared from the real file (``site_fixtures``) and
edits it as an adversary would: ``site.json``, the card, the node key, the received ``w*``
(``stage1/stage1.json`` and ``stage1.npz``), the schema. ``site join`` starts real processes:
a join that is not refused at once hangs until the case's timeout, then is stopped with Ctrl-C
(its own teardown) and the runner ends anything still naming the case's folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from case_model import Builder, Case, Sources
from site_fixtures import copy, edit_arrays, edit_json, steps, write

SITE = "{in}/north"
W_DOC, W_NPZ = "north/stage1/stage1.json", "north/stage1/stage1.npz"
RESULT = "{work}/out/result.json"


def prepare_cases() -> list[Case]:
    """``site prepare``: names that become the folder's name, seeds, schemas of the wrong types."""

    def sp(cid: str, names: tuple[str, ...], *extra: str, build: Builder | None = None) -> Case:
        argv = (
            "site",
            "prepare",
            "--schema",
            "{in}/fed.json",
            "--data",
            "{in}/hosp/site-0.csv",
            "--objectives",
            "readmission",
            "--out",
            "{work}/out/site",
            *extra,
        )
        return Case(cid, "site-prepare", "refused", argv, build or copy("fed.json", "hosp"),
                    names=names)  # fmt: skip

    schema = copy("fed.json", "hosp")
    typed = steps(schema, edit_json("fed.json", lambda d: d["features"].update(common="age")))
    vocab = steps(schema, edit_json("fed.json", lambda d: d.update(objectives={"name": "los"})))
    return [
        sp("s-prep-name-escape", ("--name",), "--name", "../x"),
        sp("s-prep-name-empty", ("--name",), "--name", ""),
        sp("s-prep-name-newline", ("--name",), "--name", "a\nb"),
        sp("s-prep-name-long", ("--name",), "--name", "n" * 300),
        sp("s-prep-seed-negative", ("--seed",), "--seed", "-1"),
        sp("s-prep-seed-huge", ("--seed",), "--seed", str(2**40)),
        sp("s-prep-objective-unknown", ("--objectives",), "--objectives", "mortality"),
        sp("s-prep-schema-type", ("fed.json", "features.common"), build=typed),
        sp("s-prep-schema-objectives", ("fed.json", "objectives"), build=vocab),
        Case("s-ok-prepare", "site-prepare-valid", "accepted",
             ("site", "prepare", "--schema", "{in}/fed.json", "--data", "{in}/hosp/site-0.csv",
              "--objectives", "readmission", "--out", "{work}/out/site", "--name", "st-marys_2"),
             schema, outputs=("{work}/out/site/site-card.json",)),
    ]  # fmt: skip


def join_cases() -> list[Case]:
    """``site join``: what Flower would retry for ever, or print its stack frames about."""

    def sj(
        cid: str,
        names: tuple[str, ...],
        build: Builder,
        ca: str = "{in}/tls/ca.pem",
        superlink: str = "127.0.0.1:{port}",
    ) -> Case:
        argv = ("site", "join", "--site", SITE, "--superlink", superlink, "--root-certificates", ca)
        return Case(cid, "site-join", "refused", argv, steps(copy("sites/north", "tls"), build),
                    names=names, timeout=60,
                    note="a join that is not refused waits for ever: it times out")  # fmt: skip

    nothing: Builder = lambda i, s: None  # noqa: E731
    rsa = copy("rsa-node.key")
    return [
        sj("s-join-ca-not-pem", ("--root-certificates",), write("ca.crt", "garbage\n"),
           ca="{in}/ca.crt"),
        sj("s-join-ca-empty", ("--root-certificates",), write("ca.crt", ""), ca="{in}/ca.crt"),
        sj("s-join-ca-folder", ("--root-certificates",), nothing, ca="{in}/tls"),
        sj("s-join-ca-expired", ("--root-certificates", "expired"), copy("expired-ca.pem"),
           ca="{in}/expired-ca.pem"),
        sj("s-join-ca-a-key", ("--root-certificates",), nothing, ca="{in}/tls/server.key"),
        sj("s-join-node-key-garbage", ("node.key",), write("north/keys/node.key", "garbage\n")),
        sj("s-join-node-key-rsa", ("node.key",),
           steps(rsa, lambda i, s: (i / "north/keys/node.key").write_bytes(
               (i / "rsa-node.key").read_bytes()))),
        sj("s-join-name-escape", ("site.json", "name"),
           edit_json("north/site.json", lambda d: d.update(name="../../x"))),
        sj("s-join-card-other-name", ("site-card.json", "name"),
           edit_json("north/site-card.json", lambda d: d.update(name="south"))),
        sj("s-join-port-zero", ("--superlink",), nothing, superlink="127.0.0.1:0"),
        sj("s-join-port-huge", ("--superlink",), nothing, superlink="127.0.0.1:99999"),
        sj("s-join-no-port", ("--superlink",), nothing, superlink="127.0.0.1"),
        sj("s-join-url", ("--superlink",), nothing, superlink="https://127.0.0.1:9092"),
        sj("s-join-keys-a-file", ("keys",),
           steps(lambda i, s: [p.unlink() for p in (i / "north/keys").iterdir()],
                 lambda i, s: (i / "north/keys").rmdir(), write("north/keys", "x\n"))),
    ]  # fmt: skip


def _arrays(change: Any) -> Builder:
    return edit_arrays(W_NPZ, change)


def _doc(change: Any) -> Builder:
    return edit_json(W_DOC, change)


def personalise_cases() -> list[Case]:
    """``site personalise``: an edited ``w*``, ``site.json`` or schema; stores made before it."""

    def pe(cid: str, names: tuple[str, ...], build: Builder, *extra: str) -> Case:
        argv = ("site", "personalise", "--site", SITE, "--out", RESULT, "--quiet", *extra)
        return Case(cid, "site-personalise", "refused", argv,
                    steps(copy("sites/north"), build), names=names)  # fmt: skip

    import numpy as np

    def nan(a: dict[str, Any]) -> dict[str, Any]:
        a["params"][:5] = np.nan
        return a

    obj = np.array([{"x": 1}] * 3, dtype=object)
    npz, doc = "stage1.npz", "stage1.json"
    tracked = ("--tracking-uri", "sqlite:///{work}/out/mlflow.db")
    return [
        pe("s-pers-w-nan", (npz, "params"), _arrays(nan)),
        pe("s-pers-w-inf-buffers", (npz, "buffers"),
           _arrays(lambda a: a | {"buffers": np.full_like(a["buffers"], np.inf)})),
        pe("s-pers-w-truncated", (npz, "params"),
           _arrays(lambda a: a | {"params": a["params"][:100]})),
        pe("s-pers-w-2d", (npz, "params"),
           _arrays(lambda a: a | {"params": a["params"].reshape(1, -1)})),
        pe("s-pers-w-int", (npz, "params"),
           _arrays(lambda a: a | {"params": a["params"].astype(np.int64)})),
        pe("s-pers-w-extra-array", (npz,), _arrays(lambda a: a | {"extra": a["buffers"]})),
        pe("s-pers-w-pickled", (npz,), _arrays(lambda a: a | {"params": obj})),
        pe("s-pers-w-not-npz", (npz,), write(W_NPZ, "zz\n")),
        pe("s-pers-w-client-negative", (doc, "client_id"), _doc(lambda d: d.update(client_id=-3))),
        pe("s-pers-w-client-text", (doc, "client_id"), _doc(lambda d: d.update(client_id="x"))),
        pe("s-pers-w-clients-huge", (doc, "clients"), _doc(lambda d: d.update(clients=10**12))),
        pe("s-pers-w-objectives-empty", (doc, "objectives"),
           _doc(lambda d: d.update(objectives=[]))),
        pe("s-pers-w-objectives-text", (doc, "objectives"),
           _doc(lambda d: d.update(objectives="los"))),
        pe("s-pers-w-objectives-reordered", (doc, "objectives"),
           _doc(lambda d: d.update(objectives=d["objectives"][::-1]))),
        pe("s-pers-w-width", (doc, "common_width"), _doc(lambda d: d.update(common_width=10))),
        pe("s-pers-w-lambda-number", (doc, "lambda"),
           _doc(lambda d: d["rounds"][0].update({"lambda": 5}))),
        pe("s-pers-w-planned-negative", (doc, "planned_rounds"),
           _doc(lambda d: d.update(planned_rounds=-1))),
        pe("s-pers-w-doc-list", (doc,), write(W_DOC, "[1]")),
        pe("s-pers-w-digest-number", (doc, "schema_digest"),
           _doc(lambda d: d.update(schema_digest=7))),
        pe("s-pers-site-json-garbage", ("site.json",), write("north/site.json", "garbage\n")),
        pe("s-pers-site-name-escape", ("site.json", "name"),
           edit_json("north/site.json", lambda d: d.update(name="../../x")), *tracked),
        pe("s-pers-site-no-source", ("site.json", "source_sha256"),
           edit_json("north/site.json", lambda d: d.pop("source_sha256"))),
        pe("s-pers-site-digest-number", ("site.json", "schema_digest"),
           edit_json("north/site.json", lambda d: d.update(schema_digest=5))),
        pe("s-pers-schema-edited", ("federation.json",),
           edit_json("north/federation.json", lambda d: d["config"].update(seed=9))),
        _personalise_ok("s-ok-personalise", copy("sites/north")),
        _personalise_ok("s-ok-personalise-empty-store", steps(copy("sites/north"),
                        write("store/mlflow.db", b"")), *_store("{in}/store/mlflow.db")),
        _personalise_ok("s-ok-personalise-earlier-store", steps(copy("sites/north"),
                        _earlier_store), *_store("{in}/store/mlflow.db")),
    ]  # fmt: skip


def _store(db: str) -> tuple[str, ...]:
    return ("--tracking-uri", f"sqlite:///{db}")


def _earlier_store(inp: Path, _src: Sources) -> None:
    """A store an earlier MLflow run made (another experiment, a run, a metric)."""
    import os
    import subprocess
    import sys

    (inp / "store").mkdir()
    code = (
        "import mlflow; mlflow.set_tracking_uri('sqlite:///store/mlflow.db');"
        "mlflow.set_experiment('earlier'); mlflow.start_run(); mlflow.log_metric('m', 1.0);"
        "mlflow.end_run()"
    )
    python = os.environ.get("BADINPUTS_PYTHON", sys.executable)
    subprocess.run([python, "-c", code], cwd=inp, check=True, capture_output=True, timeout=300)


def _personalise_ok(cid: str, build: Builder, *extra: str) -> Case:
    argv = ("site", "personalise", "--site", SITE, "--out", RESULT, "--quiet", *extra)
    return Case(cid, "site-personalise-valid", "accepted", argv, build, outputs=(RESULT,),
                note="a store made before the command is a store")  # fmt: skip


def rotate_cases() -> list[Case]:
    """``site rotate-key``: the old key is kept whenever the folder cannot be read."""

    def rk(cid: str, names: tuple[str, ...], build: Builder) -> Case:
        return Case(cid, "site-rotate", "refused", ("site", "rotate-key", "--site", SITE),
                    steps(copy("sites/north"), build), names=names)  # fmt: skip

    return [
        rk("s-rot-card-garbage", ("site-card.json",), write("north/site-card.json", "zz\n")),
        rk("s-rot-card-name-escape", ("site-card.json", "name"),
           edit_json("north/site-card.json", lambda d: d.update(name="../../x"))),
        rk("s-rot-site-json-list", ("site.json",), write("north/site.json", "[]")),
        rk("s-rot-card-missing", ("site-card.json",),
           lambda i, s: (i / "north/site-card.json").unlink()),
        Case("s-ok-rotate", "site-rotate-valid", "accepted", ("site", "rotate-key", "--site", SITE),
             copy("sites/north")),
    ]  # fmt: skip


def site_cases(src: Sources) -> list[Case]:
    """Every ``fedcare site`` case."""
    return prepare_cases() + join_cases() + personalise_cases() + rotate_cases()
