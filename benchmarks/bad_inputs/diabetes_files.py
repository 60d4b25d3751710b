"""Diabetes 130-US cases about the file itself: columns, layout, encoding, archives and paths.

Also the valid-but-unusual files that must load (LF or CRLF endings, a BOM, quoted fields, an
extra column, reordered columns, an archive) and a few runs *with* the checksum.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from pathlib import Path

from case_model import Builder, Case, Sources, write_diabetes
from diabetes_cases import CSV, OUT_FILE, R1, R2, diabetes_argv

CATEGORY = "diabetes-file"
VALID = "diabetes-valid"
Order = Callable[[list[str]], list[str]]


def _lines_builder(edit: Callable[[list[str], list[str]], object]) -> Builder:
    """A builder applying ``edit(list_of_lines, header)`` to the published lines."""

    def build(inp: Path, src: Sources) -> None:
        lines = list(src.diabetes_lines)
        edit(lines, list(src.diabetes_header))
        write_diabetes(inp, lines)

    return build


def _columns_builder(order: Order) -> Builder:
    """A builder rewriting every line's fields as ``order(fields_list)``."""

    def build(inp: Path, src: Sources) -> None:
        lines = [",".join(order(line.split(","))) for line in src.diabetes_lines]
        write_diabetes(inp, lines)

    return build


def _raw(make: Callable[[bytes], bytes], name: str = CSV) -> Builder:
    """A builder writing ``make(published_bytes)`` as ``inp/name``."""

    def build(inp: Path, src: Sources) -> None:
        (inp / name).write_bytes(make(src.diabetes_bytes))

    return build


def _drop(col: int) -> Order:
    return lambda f: f[:col] + f[col + 1 :]


def _swap(a: int, b: int) -> Order:
    def order(f: list[str]) -> list[str]:
        f = list(f)
        f[a], f[b] = f[b], f[a]
        return f

    return order


def _rename(
    lines: list[str], _h: list[str], old: str = "A1Cresult", new: str = "A1C_result"
) -> None:
    lines[0] = lines[0].replace(old, new)


def _ragged(short: bool) -> Callable[[list[str], list[str]], None]:
    def edit(lines: list[str], _h: list[str]) -> None:
        parts = lines[R1].split(",")
        lines[R1] = ",".join(parts[:-3] if short else [*parts, "extra", "fields"])

    return edit


def _truncated(data: bytes) -> bytes:
    cut = data.rfind(b"\r\n", 0, len(data) // 2)
    return data[: cut + 40]


def _non_utf8(data: bytes) -> bytes:
    lines = data.split(b"\r\n")
    fields = lines[R1].split(b",")
    fields[2] = b"Cauc\xe9sian\xff"  # the race field, whatever the row holds
    lines[R1] = b",".join(fields)
    return b"\r\n".join(lines)


def _nul_bytes(data: bytes) -> bytes:
    lines = data.split(b"\r\n")
    lines[R1] = lines[R1].replace(b",", b",\x00", 2)
    return b"\r\n".join(lines)


def _quoted(data: bytes) -> bytes:
    text = data.decode()
    out = []
    for line in text.split("\r\n"):
        out.append(",".join(f'"{f}"' for f in line.split(",")) if line else line)
    return "\r\n".join(out).encode()


def _zip_of(members: dict[str, bytes | None], name: str = "data.zip") -> Builder:
    """A builder writing a zip whose members are the given bytes (``None``: the CSV)."""

    def build(inp: Path, src: Sources) -> None:
        with zipfile.ZipFile(inp / name, "w", zipfile.ZIP_DEFLATED) as zf:
            for member, data in members.items():
                zf.writestr(member, src.diabetes_bytes if data is None else data)

    return build


def _truncated_zip(inp: Path, src: Sources) -> None:
    _zip_of({"diabetic_data.csv": None})(inp, src)
    path = inp / "data.zip"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _empty_folder(inp: Path, _src: Sources) -> None:
    (inp / "data").mkdir()
    (inp / "data" / "notes.txt").write_text("no data here\n")


def _folder_with_csv(inp: Path, src: Sources) -> None:
    (inp / "data").mkdir()
    (inp / "data" / CSV).write_bytes(src.diabetes_bytes)


def _unreadable(inp: Path, src: Sources) -> None:
    path = write_diabetes(inp, src.diabetes_lines)
    path.chmod(0)


def _unreadable_folder(inp: Path, src: Sources) -> None:
    _folder_with_csv(inp, src)
    (inp / "data").chmod(0)


def _symlink_loop(inp: Path, _src: Sources) -> None:
    os.symlink(inp / "b.csv", inp / CSV)
    os.symlink(inp / CSV, inp / "b.csv")


def _symlink_ok(inp: Path, src: Sources) -> None:
    write_diabetes(inp, src.diabetes_lines, name="real.csv")
    os.symlink(inp / "real.csv", inp / CSV)


def _dir_named_csv(inp: Path, _src: Sources) -> None:
    (inp / CSV).mkdir()


def _refused(
    cid: str,
    build: Builder,
    names: tuple[str, ...],
    *,
    data: str = "{in}/" + CSV,
    rows: tuple[int, ...] = (),
    nobody: bool = False,
    note: str = "",
) -> Case:
    return Case(
        cid,
        CATEGORY,
        "refused",
        diabetes_argv(data),
        build,
        names=names,
        rows=rows,
        as_nobody=nobody,
        note=note,
    )


def _accepted(
    cid: str, build: Builder, *, data: str = "{in}/" + CSV, note: str = "", verify: bool = False
) -> Case:
    return Case(
        cid,
        VALID,
        "accepted",
        diabetes_argv(data, verify=verify),
        build,
        outputs=(OUT_FILE,),
        note=note,
    )


def _column_cases(src: Sources) -> list[Case]:
    """Header problems: a required column missing, renamed or duplicated."""
    i = list(src.diabetes_header).index
    return [
        _refused(
            "d-missing-column-num-medications",
            _columns_builder(_drop(i("num_medications"))),
            (CSV, "num_medications"),
        ),
        _refused(
            "d-missing-column-readmitted",
            _columns_builder(_drop(i("readmitted"))),
            (CSV, "readmitted"),
        ),
        _refused(
            "d-missing-column-patient-nbr",
            _columns_builder(_drop(i("patient_nbr"))),
            (CSV, "patient_nbr"),
        ),
        _refused("d-renamed-column-a1cresult", _lines_builder(_rename), (CSV, "A1Cresult")),
        _refused(
            "d-duplicate-header-race",
            _lines_builder(lambda ls, h: ls.__setitem__(0, ls[0].replace("gender", "race"))),
            (CSV, "race|gender"),
            note="two columns called race, none called gender",
        ),
    ]


def _layout_and_encoding_cases() -> list[Case]:
    """Files with no rows, cut or ragged rows, another delimiter or undecodable bytes."""
    blank = b""
    return [
        _refused("d-empty-file", _raw(lambda d: blank), (CSV,)),
        _refused("d-whitespace-only", _raw(lambda d: b"\r\n\r\n  \r\n"), (CSV,)),
        _refused("d-header-only", _raw(lambda d: d.split(b"\r\n")[0] + b"\r\n"), (CSV,)),
        _refused(
            "d-truncated-mid-row",
            _raw(_truncated),
            (CSV,),
            note="cut in the middle of a row, half way through the file",
        ),
        _refused("d-ragged-row-short", _lines_builder(_ragged(True)), (CSV,), rows=(R1,)),
        _refused("d-ragged-row-long", _lines_builder(_ragged(False)), (CSV,), rows=(R1,)),
        _refused("d-semicolon-delimiter", _raw(lambda d: d.replace(b",", b";")), (CSV,)),
        _refused("d-tab-delimiter", _raw(lambda d: d.replace(b",", b"\t")), (CSV,)),
        _refused("d-non-utf8-bytes", _raw(_non_utf8), (CSV,)),
        _refused("d-utf16-file", _raw(lambda d: d.decode().encode("utf-16")), (CSV,)),
        _refused("d-nul-bytes", _raw(_nul_bytes), (CSV,)),
        _refused("d-binary-garbage", _raw(lambda d: bytes(range(256)) * 64), (CSV,)),
    ]


def _archive_and_path_cases() -> list[Case]:
    """Broken zip archives and data paths that are missing, unreadable or not a file."""
    blank = b""
    return [
        _refused(
            "d-zip-two-csvs",
            _zip_of({"a/diabetic_data.csv": None, "b/diabetic_data.csv": None}),
            ("data.zip",),
            data="{in}/data.zip",
            note="two members called diabetic_data.csv: which one would be trained on?",
        ),
        _refused(
            "d-zip-without-csv",
            _zip_of({"readme.txt": b"nothing\n"}),
            ("data.zip",),
            data="{in}/data.zip",
        ),
        _refused("d-zip-truncated", _truncated_zip, ("data.zip",), data="{in}/data.zip"),
        _refused(
            "d-zip-empty-bytes",
            _raw(lambda d: blank, "data.zip"),
            ("data.zip",),
            data="{in}/data.zip",
        ),
        _refused("d-dir-without-csv", _empty_folder, ("data",), data="{in}/data"),
        _refused("d-path-missing", lambda inp, s: None, ("nowhere.csv",), data="{in}/nowhere.csv"),
        _refused(
            "d-unreadable-file", _unreadable, (CSV,), nobody=True, note="chmod 000, run as nobody"
        ),
        _refused(
            "d-unreadable-folder",
            _unreadable_folder,
            ("data",),
            data="{in}/data",
            nobody=True,
            note="a folder chmod 000, run as nobody",
        ),
        _refused("d-symlink-loop", _symlink_loop, (CSV,)),
        _refused(
            "d-dir-named-csv",
            _dir_named_csv,
            (CSV,),
            data="{in}/" + CSV,
            note="a folder called diabetic_data.csv holding nothing",
        ),
        _refused("d-dev-null", lambda inp, s: None, ("/dev/null",), data="/dev/null"),
        _refused(
            "d-data-dir-empty-string",
            lambda inp, s: None,
            ("--data-dir|data",),
            data="",
            note="an empty --data-dir must not fall back to a download",
        ),
    ]


def _accepted_cases(src: Sources, eol_lf: Builder) -> list[Case]:
    """Unusual but valid files, archives, folders and links that must load."""
    i = list(src.diabetes_header).index
    return [
        _accepted("d-ok-crlf", _raw(lambda d: d), note="the file as published (CRLF)"),
        _accepted("d-ok-lf", eol_lf, note="LF line endings"),
        _accepted("d-ok-bom", _raw(lambda d: b"\xef\xbb\xbf" + d), note="UTF-8 byte-order mark"),
        _accepted("d-ok-quoted-fields", _raw(_quoted), note="every field in double quotes"),
        _accepted(
            "d-ok-no-final-newline",
            _raw(lambda d: d[:-2]),
            note="last line complete, only the final CRLF missing",
        ),
        _accepted(
            "d-ok-extra-column",
            _columns_builder(lambda f: [*f, "hospital_note" if f[0] == "encounter_id" else "x"]),
            note="one unknown extra column at the end",
        ),
        _accepted(
            "d-ok-reordered-columns",
            _columns_builder(_swap(i("race"), i("gender"))),
            note="columns are named in the header; order is not meaning",
        ),
        _accepted("d-ok-zip", _zip_of({"diabetic_data.csv": None}), data="{in}/data.zip"),
        _accepted(
            "d-ok-zip-with-mapping",
            _zip_of({"x/diabetic_data.csv": None, "x/IDs_mapping.csv": b"a,b\n1,2\n"}),
            data="{in}/data.zip",
            note="two CSVs, only one is diabetic_data.csv",
        ),
        _accepted("d-ok-folder", _folder_with_csv, data="{in}/data"),
        _accepted("d-ok-symlink", _symlink_ok),
        _accepted(
            "d-ok-published-zip-verified",
            lambda inp, s: None,
            data=str(src.diabetes_zip),
            verify=True,
            note="the real archive, checksum on",
        ),
    ]


def _checksum_cases(eol_lf: Builder) -> list[Case]:
    """Byte-changed copies that the checksum (``--verify``) must refuse."""
    return [
        Case(
            "d-checksum-one-cell",
            "diabetes-checksum",
            "refused",
            diabetes_argv(verify=True),
            _lines_builder(lambda ls, h: ls.__setitem__(R2, ls[R2].replace("Caucasian", "Asian"))),
            names=(CSV, "sha-256|checksum|sha256"),
        ),
        Case(
            "d-checksum-lf-endings",
            "diabetes-checksum",
            "refused",
            diabetes_argv(verify=True),
            eol_lf,
            names=(CSV, "sha-256|checksum|sha256"),
            note="a byte-different copy; --no-verify loads it (d-ok-lf)",
        ),
        Case(
            "d-checksum-negative-count",
            "diabetes-checksum",
            "refused",
            diabetes_argv(verify=True),
            _lines_builder(_set_count),
            names=(CSV, "sha-256|checksum|sha256|num_medications"),
        ),
    ]


def diabetes_file_cases(src: Sources) -> list[Case]:
    """Structure, encoding, archive and path cases, refused and accepted."""
    eol_lf = _raw(lambda d: d.replace(b"\r\n", b"\n"))
    refused = _column_cases(src) + _layout_and_encoding_cases() + _archive_and_path_cases()
    accepted = _accepted_cases(src, eol_lf)
    checksum = _checksum_cases(eol_lf)
    return refused + accepted + checksum


def _set_count(lines: list[str], header: list[str]) -> None:
    parts = lines[R1].split(",")
    parts[header.index("num_medications")] = "-3"
    lines[R1] = ",".join(parts)
