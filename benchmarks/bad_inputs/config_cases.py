"""Configuration cases: ``--config`` JSON files and ``fedcare run`` flags.

These run on the published Diabetes 130 archive (checksum on), so only the configuration is
wrong. A refused case's message must name the parameter (``stage1.rounds`` or ``rounds``,
``--clients`` or ``clients``); for a file that is not a JSON object, the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from case_model import OUT_FILE, Builder, Case, Sources

CONFIG = "{in}/config.json"


def run_argv(src: Sources, **flags: str | None) -> tuple[str, ...]:
    """``fedcare run`` on the published archive; ``flags`` (``max_patients="5"``) override."""
    base: dict[str, str | None] = {
        "dataset": "diabetes130",
        "data_dir": str(src.diabetes_zip),
        "max_patients": "2000",
        "rounds": "2",
        "clients": "3",
        "stage2_epochs": "1",
        "out": OUT_FILE,
    }
    base.update(flags)
    argv = ["run"]
    for key, value in base.items():
        if value is not None:
            argv += [f"--{key.replace('_', '-')}", value]
    return (*argv, "--quiet")


def _write(text: str | bytes) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        path = inp / "config.json"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")

    return build


def _json(doc: Any) -> str:
    return json.dumps(doc, allow_nan=True)


def config_case(
    src: Sources,
    cid: str,
    content: str | bytes,
    names: tuple[str, ...],
    *,
    expect: str = "refused",
    rounds_in_file: bool = True,
    note: str = "",
) -> Case:
    """A ``--config`` case; the file sets stage1.rounds itself unless ``rounds_in_file``."""
    argv = run_argv(src, rounds=None if rounds_in_file else "2")
    argv = (argv[0], "--config", CONFIG, *argv[1:])
    outputs = (OUT_FILE,) if expect == "accepted" else ()
    return Case(
        cid, "config-json", expect, argv, _write(content), names=names, outputs=outputs, note=note
    )


_ROUNDS = "stage1.rounds|rounds"
_LOCAL_LR = "stage1.local_lr|local_lr"


def _stage1(value: Any, key: str = "rounds") -> str:
    """A config setting ``stage1.key`` to ``value`` (and stage1.rounds to 2 unless overridden)."""
    doc: dict[str, Any] = {"stage1": {"rounds": 2}}
    doc["stage1"][key] = value
    return _json(doc)


def _section(section: str, key: str, value: Any) -> str:
    """A config setting ``section.key`` to ``value`` (besides stage1.rounds = 2)."""
    return _json({"stage1": {"rounds": 2}, section: {key: value}})


def _stage1_value_cases(src: Sources) -> list[Case]:
    """Ill-typed or out-of-range values in the ``stage1`` section (rounds, rates, solver)."""
    r, lr = _ROUNDS, _LOCAL_LR
    s1 = _stage1
    c = config_case
    return [
        c(src, "c-rounds-string", s1("5"), (r,)),
        c(src, "c-rounds-float", s1(2.5), (r,)),
        c(src, "c-rounds-float-integral", s1(2.0), (r,), note="README: 2.0 is not an integer"),
        c(src, "c-rounds-bool", s1(True), (r,)),
        c(src, "c-rounds-array", s1([2]), (r,)),
        c(src, "c-rounds-object", s1({"n": 2}), (r,)),
        c(src, "c-rounds-null", s1(None), (r,)),
        c(src, "c-rounds-zero", s1(0), (r,)),
        c(src, "c-rounds-negative", s1(-4), (r,)),
        c(src, "c-rounds-huge", s1(10**30), (r,), note="an integer no counter holds"),
        c(src, "c-local-lr-string", s1("0.01", "local_lr"), (lr,)),
        c(src, "c-local-lr-nan", '{"stage1": {"rounds": 2, "local_lr": NaN}}', (lr,)),
        c(src, "c-local-lr-infinity", '{"stage1": {"rounds": 2, "local_lr": Infinity}}', (lr,)),
        c(
            src,
            "c-global-lr-neg-infinity",
            '{"stage1": {"rounds": 2, "global_lr": -Infinity}}',
            ("stage1.global_lr|global_lr",),
        ),
        c(src, "c-local-lr-negative", s1(-0.1, "local_lr"), (lr,)),
        c(src, "c-local-lr-zero", s1(0, "local_lr"), (lr,)),
        c(src, "c-local-lr-bool", s1(False, "local_lr"), (lr,)),
        c(src, "c-batch-size-float", s1(32.5, "batch_size"), ("stage1.batch_size|batch_size",)),
        c(src, "c-solver-unknown", s1("magic", "solver"), ("stage1.solver|solver",)),
    ]


def _other_section_value_cases(src: Sources) -> list[Case]:
    """Bad values in the data, model, stage2 and baselines sections and the top-level keys."""
    sec = _section
    c = config_case
    return [
        c(src, "c-clients-float", sec("data", "clients", 3.0), ("data.clients|clients",)),
        c(src, "c-clients-string", sec("data", "clients", "3"), ("data.clients|clients",)),
        c(src, "c-rho-above-one", sec("data", "rho", 1.5), ("data.rho|rho",)),
        c(src, "c-rho-nan", '{"stage1": {"rounds": 2}, "data": {"rho": NaN}}', ("data.rho|rho",)),
        c(
            src,
            "c-dirichlet-alpha-zero",
            sec("data", "dirichlet_alpha", 0),
            ("data.dirichlet_alpha|dirichlet_alpha",),
        ),
        c(
            src,
            "c-fractions-sum-over-one",
            _json({"stage1": {"rounds": 2}, "data": {"train_fraction": 0.95, "val_fraction": 0.1}}),
            ("train_fraction|val_fraction",),
        ),
        c(
            src,
            "c-split-unknown",
            sec("data", "client_split", "random"),
            ("data.client_split|client_split",),
        ),
        c(src, "c-dataset-unknown", sec("data", "dataset", "mnist"), ("data.dataset|dataset",)),
        c(src, "c-model-hidden-zero", sec("model", "hidden", 0), ("model.hidden|hidden",)),
        c(
            src,
            "c-model-dropout-above-one",
            sec("model", "dropout", 1.5),
            ("model.dropout|dropout",),
        ),
        c(
            src,
            "c-model-head-hidden-scalar",
            sec("model", "head_hidden", 64),
            ("model.head_hidden|head_hidden",),
        ),
        c(
            src,
            "c-stage2-patience-string",
            sec("stage2", "patience", "x"),
            ("stage2.patience|patience",),
        ),
        c(
            src,
            "c-baselines-prox-mu-negative",
            sec("baselines", "prox_mu", -1),
            ("baselines.prox_mu|prox_mu",),
        ),
        c(src, "c-seed-negative", _json({"stage1": {"rounds": 2}, "seed": -1}), ("seed",)),
        c(src, "c-seed-too-large", _json({"stage1": {"rounds": 2}, "seed": 2**32}), ("seed",)),
        c(src, "c-seed-float", _json({"stage1": {"rounds": 2}, "seed": 1e3}), ("seed",)),
        c(
            src,
            "c-algorithm-unknown",
            _json({"stage1": {"rounds": 2}, "algorithm": "sgd"}),
            ("algorithm",),
        ),
    ]


def _key_and_shape_cases(src: Sources) -> list[Case]:
    """Unknown keys, sections of the wrong shape, and files that are not a JSON object."""
    s1 = _stage1
    c = config_case
    return [
        c(src, "c-unknown-top-key", _json({"stage1": {"rounds": 2}, "epochs": 3}), ("epochs",)),
        c(src, "c-unknown-nested-key", s1(3, "roundz"), ("roundz|stage1.roundz",)),
        c(src, "c-unknown-section", _json({"stage1": {"rounds": 2}, "stage3": {}}), ("stage3",)),
        c(src, "c-section-not-object", _json({"stage1": 5}), ("stage1",), rounds_in_file=False),
        c(src, "c-section-array", _json({"stage1": {"rounds": 2}, "data": []}), ("data",)),
        c(src, "c-top-level-array", "[1, 2, 3]", ("config.json",), rounds_in_file=False),
        c(src, "c-top-level-string", '"fedcare"', ("config.json",), rounds_in_file=False),
        c(src, "c-top-level-number", "42", ("config.json",), rounds_in_file=False),
        c(src, "c-invalid-json", '{"stage1": {"rounds": 2,}', ("config.json",)),
        c(src, "c-empty-file", "", ("config.json",), rounds_in_file=False),
        c(
            src,
            "c-non-utf8",
            b'{"algorithm": "fed\xff\xfecare"}',
            ("config.json",),
            rounds_in_file=False,
        ),
        Case(
            "c-missing-file",
            "config-json",
            "refused",
            ("run", "--config", "{in}/nowhere.json", *run_argv(src)[1:]),
            names=("nowhere.json",),
        ),
        Case(
            "c-config-is-directory",
            "config-json",
            "refused",
            ("run", "--config", "{in}", *run_argv(src)[1:]),
            names=("--config|config",),
        ),
    ]


def _accepted_config_cases(src: Sources) -> list[Case]:
    """Unusual but valid config files that must run."""
    c = config_case
    return [
        c(
            src,
            "c-ok-int-for-float",
            _stage1(1, "local_lr"),
            (),
            expect="accepted",
            note="README: an integer is accepted for a float",
        ),
        c(src, "c-ok-rho", _section("data", "rho", 0.5), (), expect="accepted"),
    ]


def config_cases(src: Sources) -> list[Case]:
    """Wrong types, ranges, keys and shapes in a ``--config`` file."""
    return (
        _stage1_value_cases(src)
        + _other_section_value_cases(src)
        + _key_and_shape_cases(src)
        + _accepted_config_cases(src)
    )


def _flag(
    src: Sources,
    cid: str,
    names: tuple[str, ...],
    *,
    expect: str = "refused",
    note: str = "",
    **flags: str | None,
) -> Case:
    outputs = (OUT_FILE,) if expect == "accepted" else ()
    return Case(
        cid, "flags", expect, run_argv(src, **flags), names=names, outputs=outputs, note=note
    )


def flag_cases(src: Sources) -> list[Case]:
    """Out-of-range and ill-typed ``fedcare run`` flags."""
    f = _flag
    k, rho, lr = "--clients|clients", "--rho|rho", "--local-lr|local_lr"
    return [
        f(src, "f-clients-0", (k,), clients="0"),
        f(
            src,
            "f-clients-1",
            (k,),
            clients="1",
            note="one client cannot cover the three objectives (objectives-per-client 1)",
        ),
        f(src, "f-clients-negative", (k,), clients="-3"),
        f(
            src,
            "f-clients-million",
            (k,),
            clients="1000000",
            note="more clients than the 2000 patients sampled",
        ),
        f(src, "f-clients-text", (k,), clients="three"),
        f(src, "f-clients-fraction", (k,), clients="2.5"),
        f(src, "f-rounds-0", ("--rounds|rounds",), rounds="0"),
        f(src, "f-rounds-negative", ("--rounds|rounds",), rounds="-1"),
        f(src, "f-rho-0", (rho,), rho="0"),
        f(src, "f-rho-1", (rho,), rho="1"),
        f(src, "f-rho-nan", (rho,), rho="nan"),
        f(src, "f-rho-inf", (rho,), rho="inf"),
        f(src, "f-rho-negative", (rho,), rho="-0.5"),
        f(src, "f-local-lr-inf", (lr,), local_lr="inf"),
        f(src, "f-local-lr-negative", (lr,), local_lr="-1"),
        f(src, "f-local-lr-zero", (lr,), local_lr="0"),
        f(src, "f-local-lr-nan", (lr,), local_lr="nan"),
        f(src, "f-global-lr-zero", ("--global-lr|global_lr",), global_lr="0"),
        f(src, "f-batch-size-0", ("--batch-size|batch_size",), batch_size="0"),
        f(src, "f-batch-size-negative", ("--batch-size|batch_size",), batch_size="-8"),
        f(src, "f-max-patients-negative", ("--max-patients|max_patients",), max_patients="-5"),
        f(src, "f-max-patients-0", ("--max-patients|max_patients",), max_patients="0"),
        f(
            src,
            "f-max-patients-1",
            ("--max-patients|max_patients|clients",),
            max_patients="1",
            note="one patient for three clients",
        ),
        f(
            src,
            "f-objectives-per-client-0",
            ("--objectives-per-client|objectives_per_client",),
            objectives_per_client="0",
        ),
        f(
            src,
            "f-objectives-per-client-9",
            ("--objectives-per-client|objectives_per_client",),
            objectives_per_client="9",
            note="Diabetes 130 has three objectives",
        ),
        f(
            src,
            "f-objectives-per-client-4",
            ("--objectives-per-client|objectives_per_client",),
            objectives_per_client="4",
        ),
        f(src, "f-seed-negative", ("--seed|seed",), seed="-1"),
        f(src, "f-seed-too-large", ("--seed|seed",), seed="4294967296"),
        f(src, "f-stage2-epochs-0", ("--stage2-epochs|epochs",), stage2_epochs="0"),
        f(src, "f-local-steps-0", ("--local-steps|local_steps",), local_steps="0"),
        f(src, "f-algorithm-unknown", ("--algorithm|algorithm",), algorithm="sgd"),
        f(src, "f-split-unknown", ("--split|split",), split="random"),
        f(src, "f-dataset-unknown", ("--dataset|dataset",), dataset="mnist"),
        f(
            src,
            "f-round-timeout-local-nan",
            ("--round-timeout|round_timeout|round_timeout_s",),
            round_timeout="nan",
            note="a NaN is wrong whichever backend ignores it",
        ),
        f(src, "f-ok-max-patients-300", (), expect="accepted", max_patients="300"),
        f(src, "f-ok-rho-half", (), expect="accepted", rho="0.5"),
    ]
