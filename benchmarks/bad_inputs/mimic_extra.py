"""MIMIC-III demo cases around CHARTEVENTS, and the unusual but valid folders that must load."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

from case_model import MIMIC_TABLES, OUT_FILE, Builder, Case, Sources, copy_mimic, mimic_csv
from mimic_cases import (
    VALID,
    J,
    Keys,
    _case,
    _cut,
    drop_col,
    edit_table,
    mimic_argv,
    raw_table,
    value_cases,
)


def _without(table: str) -> Builder:
    """A builder copying every required table but ``table``."""

    def build(inp: Path, src: Sources) -> None:
        copy_mimic(inp, src, skip=(table,))

    return build


def _with_notes(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src)
    (inp / "NOTES.csv").write_text("a\n1\n")


def table_cases(src: Sources, k: Keys) -> list[Case]:
    """Missing, empty, truncated and malformed tables."""
    cases = [
        _case(
            f"m-missing-table-{t.lower()}",
            _without(t),
            (t,),
            k,
        )
        for t in MIMIC_TABLES
    ]
    for table, col in (
        ("ADMISSIONS", "ADMITTIME"),
        ("PATIENTS", "DOB"),
        ("ICUSTAYS", "INTIME"),
        ("LABEVENTS", "VALUENUM"),
        ("ICUSTAYS", "LOS"),
        ("ADMISSIONS", "HOSPITAL_EXPIRE_FLAG"),
    ):
        cases.append(
            _case(
                f"m-missing-column-{table.lower()}-{col.lower()}",
                edit_table(table, drop_col(col)),
                (table, col),
                k,
            )
        )
    for table in ("ICUSTAYS", "ADMISSIONS", "PATIENTS", "LABEVENTS"):
        cases.append(
            _case(
                f"m-truncated-{table.lower()}",
                raw_table(table, _cut),
                (table,),
                k,
                note="cut mid-row at 60% of the file",
            )
        )
    cases += [
        _case("m-empty-icustays", raw_table("ICUSTAYS", lambda d: b""), ("ICUSTAYS",), k),
        _case(
            "m-header-only-patients",
            raw_table("PATIENTS", lambda d: d.split(b"\n")[0] + b"\n"),
            ("PATIENTS",),
            k,
        ),
        _case(
            "m-ragged-row-icustays",
            edit_table("ICUSTAYS", lambda h, r: r[J - 1].pop()),
            ("ICUSTAYS",),
            k,
            rows=(J,),
        ),
        _case(
            "m-semicolon-admissions",
            raw_table("ADMISSIONS", lambda d: d.replace(b",", b";")),
            ("ADMISSIONS",),
            k,
        ),
        _case(
            "m-non-utf8-patients",
            raw_table("PATIENTS", lambda d: d.replace(b",F,", b",F\xff\xfe,", 3)),
            ("PATIENTS",),
            k,
        ),
        _case("m-data-dir-missing", lambda inp, s: None, ("nowhere",), k, data="{in}/nowhere"),
        _case(
            "m-data-dir-is-file",
            lambda inp, s: copy_mimic(inp, s),
            ("ICUSTAYS.csv",),
            k,
            data="{in}/ICUSTAYS.csv",
        ),
        _case("m-table-is-directory", _table_dir, ("ICUSTAYS",), k),
        _case(
            "m-table-unreadable",
            _table_unreadable,
            ("ICUSTAYS",),
            k,
            nobody=True,
            note="chmod 000, run as nobody",
        ),
        _case("m-table-symlink-loop", _table_loop, ("ICUSTAYS",), k),
        _case(
            "m-two-icustays-files",
            _two_icustays,
            ("ICUSTAYS",),
            k,
            note="ICUSTAYS.csv and icustays.csv.gz: which one?",
        ),
    ]
    return cases


def _table_dir(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src, skip=("ICUSTAYS",))
    (inp / "ICUSTAYS.csv").mkdir()


def _table_unreadable(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src)
    (inp / "ICUSTAYS.csv").chmod(0)


def _table_loop(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src, skip=("ICUSTAYS",))
    os.symlink(inp / "x.csv", inp / "ICUSTAYS.csv")
    os.symlink(inp / "ICUSTAYS.csv", inp / "x.csv")


def _two_icustays(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src)
    header, rows = src.mimic_table("ICUSTAYS")
    with gzip.open(inp / "icustays.csv.gz", "wt", encoding="utf-8") as fh:
        fh.write(mimic_csv(header, rows[: len(rows) // 2]))


def _chart_builder(edit: Callable[[list[list[str]]], None] | None) -> Builder:
    """A builder adding a small CHARTEVENTS (heart rates in the first day of 5 stays)."""

    def build(inp: Path, src: Sources) -> None:
        copy_mimic(inp, src)
        header, icu = src.mimic_table("ICUSTAYS")
        cols = [
            "ROW_ID",
            "SUBJECT_ID",
            "HADM_ID",
            "ICUSTAY_ID",
            "ITEMID",
            "CHARTTIME",
            "STORETIME",
            "CGID",
            "VALUE",
            "VALUENUM",
            "VALUEUOM",
            "WARNING",
            "ERROR",
            "RESULTSTATUS",
            "STOPPED",
        ]
        rows = []
        for n, stay in enumerate(icu[5:10]):
            s = dict(zip(header, stay, strict=True))
            t = s["INTIME"][:11] + "23:59:00"
            rows.append(
                [
                    str(n + 1),
                    s["SUBJECT_ID"],
                    s["HADM_ID"],
                    s["ICUSTAY_ID"],
                    "211",
                    t,
                    t,
                    "",
                    "84",
                    "84",
                    "bpm",
                    "0",
                    "0",
                    "",
                    "",
                ]
            )
        if edit is not None:
            edit(rows)
        (inp / "CHARTEVENTS.csv").write_text(mimic_csv(cols, rows), encoding="utf-8")

    return build


def chart_cases(k: Keys) -> list[Case]:
    """Bad values in an (optional) CHARTEVENTS table."""

    def cell(col: int, value: str) -> Callable[[list[list[str]]], None]:
        return lambda rows: rows[2].__setitem__(col, value)

    return [
        _case(
            "m-chart-valuenum-text",
            _chart_builder(cell(9, "abc")),
            ("CHARTEVENTS", "VALUENUM"),
            k,
            rows=(3,),
        ),
        _case(
            "m-chart-error-7", _chart_builder(cell(12, "7")), ("CHARTEVENTS", "ERROR"), k, rows=(3,)
        ),
        _case(
            "m-chart-icustay-text",
            _chart_builder(cell(3, "stay")),
            ("CHARTEVENTS", "ICUSTAY_ID"),
            k,
            rows=(3,),
        ),
    ]


def valid_cases(src: Sources) -> list[Case]:
    """Unusual but valid MIMIC folders that must load."""

    def lower_headers(inp: Path, s: Sources) -> None:
        for t in MIMIC_TABLES:
            header, rows = s.mimic_table(t)
            text = mimic_csv([h.lower() for h in header], rows)
            (inp / f"{t}.csv").write_text(text, encoding="utf-8")

    def lower_names(inp: Path, s: Sources) -> None:
        for t in MIMIC_TABLES:
            (inp / f"{t.lower()}.csv").write_bytes((s.mimic_dir / f"{t}.csv").read_bytes())

    def gzipped(inp: Path, s: Sources) -> None:
        for t in MIMIC_TABLES:
            (inp / f"{t}.csv.gz").write_bytes(
                gzip.compress((s.mimic_dir / f"{t}.csv").read_bytes())
            )

    def crlf(inp: Path, s: Sources) -> None:
        for t in MIMIC_TABLES:
            data = (s.mimic_dir / f"{t}.csv").read_bytes().replace(b"\r\n", b"\n")
            (inp / f"{t}.csv").write_bytes(data.replace(b"\n", b"\r\n"))

    def bom(inp: Path, s: Sources) -> None:
        for t in MIMIC_TABLES:
            (inp / f"{t}.csv").write_bytes(
                b"\xef\xbb\xbf" + (s.mimic_dir / f"{t}.csv").read_bytes()
            )

    def ok(cid: str, build: Builder, note: str = "", data: str = "{in}") -> Case:
        return Case(cid, VALID, "accepted", mimic_argv(data), build, outputs=(OUT_FILE,), note=note)

    return [
        ok(
            "m-ok-demo-as-shipped",
            lambda inp, s: None,
            "the shared folder itself",
            data=str(src.mimic_dir),
        ),
        ok("m-ok-lowercase-headers", lower_headers, "the demo's own release is lower case"),
        ok("m-ok-lowercase-filenames", lower_names),
        ok("m-ok-gzipped-tables", gzipped, "NAME.csv.gz is documented"),
        ok("m-ok-crlf", crlf),
        ok("m-ok-bom", bom),
        ok("m-ok-chartevents", _chart_builder(None), "a small valid CHARTEVENTS"),
        ok(
            "m-ok-extra-tables",
            _with_notes,
            "an unrelated extra CSV in the folder",
        ),
    ]


def mimic_cases(src: Sources) -> list[Case]:
    """Every MIMIC-III case."""
    keys = Keys(src)
    return table_cases(src, keys) + value_cases(src, keys) + chart_cases(keys) + valid_cases(src)
