"""Definitions and headers (issue 52): bounded YAML, round trips, shifted headers, cohorts, presets.

* YAML that expands or nests without bound (the billion laughs, 5,000 levels, a 2 MiB file, an
  alias inside the node it names) in a dataset definition or a site's column map is refused in
  moments, naming the file and the limit; aliases and merge keys within the bounds are read.
* A valid definition omitting an optional key (an objective's description, the title, the
  cohort, …) goes through ``federation init`` and then ``site prepare``.
* A header with a name missing or one too many is refused as the header's fault (the example
  hospital's export, Diabetes 130, a MIMIC-III table), not as bad values in every row; nor does
  an unread column's missing name silently move every value.
* A cohort rule that keeps no row is named with its counts (a definition's ``cohort.include``,
  MIMIC-III's benchmark-ihm rules); ``federation init --preset`` names the preset and the flag.

Every input is derived in the case's own folder from the worked example
(``examples/hospital``: its definition and its seeded generator) or the real files.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from case_model import Builder, Case, Sources, copy_mimic, write_diabetes
from ops_cases import run_fedcare

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hospital"
OBJECTIVES = "mortality,readmission,los"
#: Seconds a YAML bomb may take before it counts as a hang.
_BOMB_TIMEOUT = 60.0


def _laughs(levels: int = 9) -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return "version: 1\n" + "\n".join(lines) + "\n"


#: The YAML bombs: file name → text (written by :func:`_text`).
BOMBS: dict[str, Callable[[], str]] = {
    "laughs.yaml": _laughs,
    "deep.yaml": lambda: "version: 1\nx: " + "[" * 5_000 + "]" * 5_000 + "\n",
    "deep-block.yaml": lambda: (
        "".join("  " * i + f"k{i}:\n" for i in range(200)) + " " * 400 + "v\n"
    ),
    "big.yaml": lambda: "version: 1\ndescription: '" + "a" * (2 * 2**20) + "'\n",
    "loop.yaml": lambda: "version: 1\nx: &a [1, *a]\n",
}


def _cohort_bomb(levels: int = 9) -> dict[str, str]:
    """A cohort rule of ``all`` nested through aliases: 9**levels conditions a schema walks."""
    items = ["      - &c0 {column: AGE_YRS, ge: 0}"]
    for i in range(1, levels + 1):
        items.append(f"      - &c{i} {{all: [{', '.join([f'*c{i - 1}'] * 9)}]}}")
    rule = "cohort:\n  include:\n    all:\n" + "\n".join(items) + "\n"
    written = "  include: {column: DISCH_DISPO, ne: AMA}   # self-discharges leave the cohort\n"
    return {f"cohort:\n{written}": rule}


def _bomb(name: str) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        (inp / name).write_text(BOMBS[name]())

    return build


@cache
def _make_extract() -> Any:
    spec = importlib.util.spec_from_file_location("hospital_extract", EXAMPLE / "make_extract.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_extract


#: Aliases and a merge key within the bounds, as a hand-written definition may use them.
ANCHORED = {
    "  ED_VISITS_12M: {type: integer, range: [0, 200], known_at: admission}":
        "  ED_VISITS_12M: &count {type: integer, range: [0, 200], known_at: admission}",
    "  INPT_ADMITS_12M: {type: integer, range: [0, 100], known_at: admission}":
        "  INPT_ADMITS_12M: {<<: *count, range: [0, 100]}",
    "  ICU_STAY: {type: categorical, vocabulary: [Y, N], known_at: stay}":
        "  ICU_STAY: {type: categorical, vocabulary: &yes_no [Y, N], known_at: stay}",
    "  READMIT_30D: {type: categorical, vocabulary: [Y, N]}":
        "  READMIT_30D: {type: categorical, vocabulary: *yes_no}",
}  # fmt: skip


def _hospital(
    edit: Callable[[dict[str, Any]], None] | None = None,
    lines: Callable[[list[str]], None] = lambda ls: None,
    replace: dict[str, str] | None = None,
    rows: int = 300,
) -> Builder:
    """The example's definition (``edit`` applied to its document, or ``replace`` to its text)
    reading ``encounters.csv``, and a synthetic export (``lines`` applied)."""

    def build(inp: Path, _src: Sources) -> None:
        text = (EXAMPLE / "definition.yaml").read_text()
        text = text.replace("encounters.csv.gz", "encounters.csv")
        for old, new in (replace or {}).items():
            assert old in text, old
            text = text.replace(old, new)
        if edit is not None:
            doc = yaml.safe_load(text)
            edit(doc)
            text = yaml.safe_dump(doc, sort_keys=False)
        (inp / "definition.yaml").write_text(text)
        export = _make_extract()(rows, 7).to_csv(index=False).splitlines()
        lines(export)
        (inp / "encounters.csv").write_text("\n".join(export) + "\n")

    return build


def _init_then(builder: Builder) -> Builder:
    """``builder``, then ``federation init`` on its definition into ``{in}/federation.json``."""

    def build(inp: Path, src: Sources) -> None:
        builder(inp, src)
        init = ["federation", "init", "--dataset", str(inp / "definition.yaml")]
        run_fedcare([*init, "--out", str(inp / "federation.json"), "--rounds", "2"], inp)

    return build


def _without(*path: str | int) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        parent: Any = doc
        for part in path[:-1]:
            parent = parent[part]
        del parent[path[-1]]

    return edit


def _no_objective_descriptions(doc: dict[str, Any]) -> None:
    for objective in doc["objectives"]:
        objective.pop("description", None)


def yaml_cases() -> list[Case]:
    """YAML without bound, refused in moments; aliases within the bounds read."""

    def check(name: str) -> tuple[str, ...]:
        return ("data", "check", "--dataset", f"{{in}}/{name}", "--data-dir", "{in}")

    names = {
        "laughs.yaml": "aliases",
        "deep.yaml": "nesting",
        "deep-block.yaml": "nesting",
        "big.yaml": "1,048,576",
        "loop.yaml": "loop",
    }
    cases = [
        Case(f"def-yaml-{name.removesuffix('.yaml')}", "definition-yaml", "refused", check(name),
             _bomb(name), names=(name, why), timeout=_BOMB_TIMEOUT)
        for name, why in names.items()
    ]  # fmt: skip
    init = ("federation", "init", "--dataset", "{in}/laughs.yaml", "--out", "{work}/out/f.json")
    prepare = ("site", "prepare", "--schema", "{in}/federation.json", "--data",
               "{in}/encounters.csv", "--objectives", "mortality", "--out", "{work}/out/site",
               "--name", "site-a")  # fmt: skip
    return [
        *cases,
        Case("def-yaml-laughs-cohort", "definition-yaml", "refused", check("definition.yaml"),
             _hospital(replace=_cohort_bomb()), names=("definition.yaml", "aliases"),
             timeout=_BOMB_TIMEOUT,
             note="a complete definition whose cohort rule nests all() through aliases: the "
             "schema check walks every one of its 9**9 conditions"),
        Case("def-yaml-laughs-init", "definition-yaml", "refused", init, _bomb("laughs.yaml"),
             names=("laughs.yaml", "aliases"), timeout=_BOMB_TIMEOUT),
        Case("def-yaml-laughs-map", "definition-yaml", "refused",
             (*prepare, "--map", "{in}/laughs.yaml"),
             _both(_init_then(_hospital()), _bomb("laughs.yaml")),
             names=("laughs.yaml", "aliases"), timeout=_BOMB_TIMEOUT),
        Case("def-ok-yaml-aliases", "definition-yaml-valid", "accepted",
             (*check("definition.yaml"), "--json", "{work}/out/check.json"),
             _hospital(replace=ANCHORED), outputs=("{work}/out/check.json",),
             note="an anchored vocabulary and a merge key, as YAML has them"),
    ]  # fmt: skip


def _both(*builders: Builder) -> Builder:
    def build(inp: Path, src: Sources) -> None:
        for b in builders:
            b(inp, src)

    return build


#: Optional keys left out of the example definition: case id suffix → edit.
OMITTED: dict[str, Callable[[dict[str, Any]], None]] = {
    "objective-descriptions": _no_objective_descriptions,
    "one-objective-description": _without("objectives", 0, "description"),
    "title": _without("title"),
    "description": _without("description"),
    "cohort": _without("cohort"),
    "strata": _without("strata"),
    "encounter": _without("identifiers", "encounter"),
    "missing-values": _without("source", "missing_values"),
    "exclude": _without("objectives", 1, "exclude"),
    "datetime-format": _without("columns", "ADMIT_DTTM", "format"),
    "unit": _without("columns", "SBP_ADMIT", "unit"),
}


def round_trip_cases() -> list[Case]:
    """A valid definition without an optional key: ``federation init``, then ``site prepare``."""
    prepare = ("site", "prepare", "--schema", "{in}/federation.json", "--data",
               "{in}/encounters.csv", "--objectives", OBJECTIVES, "--out", "{work}/out/site",
               "--name", "site-a")  # fmt: skip
    init = ("federation", "init", "--dataset", "{in}/definition.yaml",
            "--out", "{work}/out/federation.json")  # fmt: skip
    cases = [
        Case(f"def-ok-omit-{name}", "definition-round-trip", "accepted", prepare,
             _init_then(_hospital(edit)), outputs=("{work}/out/site/site.json",))
        for name, edit in OMITTED.items()
    ]  # fmt: skip
    return [
        Case("def-ok-init-omit-objective-descriptions", "definition-round-trip", "accepted",
             init, _hospital(_no_objective_descriptions),
             outputs=("{work}/out/federation.json",)),
        *cases,
    ]  # fmt: skip


def _header(change: Callable[[list[str]], None]) -> Callable[[list[str]], None]:
    def edit(lines: list[str]) -> None:
        header = lines[0].split(",")
        change(header)
        lines[0] = ",".join(header)

    return edit


def _unread_column_unnamed(lines: list[str]) -> None:
    """A column no definition reads, its name missing from the header: values move silently."""
    for i, line in enumerate(lines):
        lines[i] = line + ("" if i == 0 else ",ward 5")


def _mimic_extra_name(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src)
    path = inp / "ADMISSIONS.csv"
    lines = path.read_text().splitlines()
    lines[0] += ",EXTRA_NOTE"
    path.write_text("\n".join(lines) + "\n")


def _diabetes_without(name: str) -> Builder:
    def build(inp: Path, src: Sources) -> None:
        lines = list(src.diabetes_lines[:301])
        header = lines[0].split(",")
        header.remove(name)
        lines[0] = ",".join(header)
        write_diabetes(inp, lines)

    return build


def header_cases(src: Sources) -> list[Case]:
    """A header shifted against its rows: the header named, not every row's values."""
    check = ("data", "check", "--dataset", "{in}/definition.yaml", "--data-dir", "{in}")
    secrets = ("RG7000001", "90000024")

    def hospital(cid: str, change: Callable[[list[str]], None], *names: str) -> Case:
        return Case(cid, "definition-header", "refused", check, _hospital(lines=change),
                    names=("encounters.csv", "shifted", *names), secrets=secrets)  # fmt: skip

    return [
        hospital("def-header-missing-name", _header(lambda h: h.remove("PAYOR_CLASS")),
                 "PAYOR_CLASS"),
        hospital("def-header-extra-name", _header(lambda h: h.insert(5, "WARD")), "WARD"),
        hospital("def-header-unread-column-unnamed", _unread_column_unnamed),
        hospital("def-header-two-names-missing",
                 _header(lambda h: [h.remove("BMI"), h.remove("NA_MIN")]), "BMI", "NA_MIN"),
        Case("def-header-diabetes-missing-name", "definition-header", "refused",
             ("data", "check", "--dataset", "diabetes130", "--data-dir",
              "{in}/diabetic_data.csv", "--no-verify"),
             _diabetes_without("race"), names=("diabetic_data.csv", "shifted", "race"),
             secrets=src.diabetes_ids(1, 2)),
        Case("def-header-mimic-extra-name", "definition-header", "refused",
             ("data", "check", "--dataset", "mimic3", "--data-dir", "{in}"),
             _mimic_extra_name, names=("ADMISSIONS.csv", "shifted")),
    ]  # fmt: skip


def _cohort(rule: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["cohort"] = {"include": rule}

    return edit


def _short_stays(inp: Path, src: Sources) -> None:
    copy_mimic(inp, src)
    path = inp / "ICUSTAYS.csv"
    header, *rows = path.read_text().splitlines()
    los = header.lower().split(",").index("los")
    fixed = []
    for row in rows:
        fields = row.split(",")
        fields[los] = "1.0"
        fixed.append(",".join(fields))
    path.write_text("\n".join([header, *fixed]) + "\n")


def cohort_and_preset_cases(src: Sources) -> list[Case]:
    """A cohort rule keeping no row, named; a preset a federation refuses, named with the fix."""
    run = (
        "run",
        "--dataset",
        "{in}/definition.yaml",
        "--data-dir",
        "{in}",
        "--clients",
        "3",
        "--rounds",
        "1",
        "--stage2-epochs",
        "1",
        "--quiet",
        "--out",
        "{work}/out/r.json",
    )
    init = ("federation", "init", "--dataset", "diabetes130", "--out", "{work}/out/f.json")
    ihm = src.mimic_dir
    return [
        Case("def-cohort-keeps-no-row", "definition-cohort", "refused", run,
             _hospital(_cohort({"column": "AGE_YRS", "gt": 150})),
             names=("definition.yaml", "cohort.include", "AGE_YRS")),
        Case("def-cohort-keeps-no-row-check", "definition-cohort", "refused",
             ("data", "check", "--dataset", "{in}/definition.yaml", "--data-dir", "{in}"),
             _hospital(_cohort({"all": [{"column": "SEX", "eq": "F"},
                                        {"column": "SEX", "eq": "M"}]})),
             names=("definition.yaml", "cohort.include", "SEX")),
        Case("def-cohort-mimic-benchmark-keeps-no-stay", "definition-cohort", "refused",
             ("run", "--dataset", "mimic3", "--data-dir", "{in}", "--cohort", "benchmark-ihm",
              *run[5:]), _short_stays, names=("ICUSTAYS.csv", "benchmark-ihm", "48")),
        Case("def-preset-init-admission", "definition-preset", "refused",
             (*init, "--preset", "recommended-admission"),
             names=("--preset", "recommended-admission", "--scaling")),
        Case("def-ok-preset-init-admission-client", "definition-preset-valid", "accepted",
             (*init, "--preset", "recommended-admission", "--scaling", "client"),
             outputs=("{work}/out/f.json",)),
        Case("def-ok-preset-init-recommended", "definition-preset-valid", "accepted",
             (*init, "--preset", "recommended"), outputs=("{work}/out/f.json",)),
        Case("def-ok-benchmark-unlisted-subjects", "definition-cohort-valid", "accepted",
             ("run", "--dataset", "mimic3", "--data-dir", str(ihm), "--cohort", "benchmark-ihm",
              "--benchmark-split", "{in}/ihm", "--clients", "3", "--rounds", "1",
              "--stage2-epochs", "1", "--quiet", "--out", "{work}/out/r.json"),
             _listfiles, outputs=("{work}/out/r.json",),
             note="the listfiles name subjects in no table: the run's notes count them"),
    ]  # fmt: skip


def _listfiles(inp: Path, src: Sources) -> None:
    """Listfiles of the demo's subjects and of subjects in no table (train and test)."""
    header, rows = src.mimic_table("ICUSTAYS")
    column = [h.upper() for h in header].index("SUBJECT_ID")
    subjects = sorted({int(r[column]) for r in rows})
    parts = {"train": [*subjects[10:], 1, 2], "test": [*subjects[:10], 3]}
    for part, chosen in parts.items():
        (inp / "ihm" / part).mkdir(parents=True)
        lines = "".join(f"{s}_episode1_timeseries.csv,0\n" for s in chosen)
        (inp / "ihm" / part / "listfile.csv").write_text("stay,y_true\n" + lines)


def definition_cases(src: Sources) -> list[Case]:
    """Every case of this module, in report order."""
    return yaml_cases() + round_trip_cases() + header_cases(src) + cohort_and_preset_cases(src)
