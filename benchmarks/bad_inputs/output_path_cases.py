"""Outputs never replace inputs; ``fedcare predict`` checks rows as a run does (issue 52, 1 and 5).

An output named as one of the command's inputs, however spelt (the same path, ``./`` and a
relative path, a symbolic link, a hard link), an output folder holding an input, and an output
replacing a file of a folder the command reads: refused before any work for every command that
reads and writes files, naming both options, every file left as it was. ``fedcare predict`` on
rows a run would refuse (a gap where the definition allows none, an empty or repeated
identifier, a column named twice, a header shifted by one name, an identifier column absent):
refused naming the column and rows, no scores written. Valid but unusual: a gzipped export,
gzipped scores, and outputs beside their inputs (the same folder, another name), accepted.

Predict cases score with a model a site registered (``site personalise`` of the multi-site
template's site ``north``, built once per harness run) copied into the case as a model folder,
and the first :data:`ROWS` rows of the published file as the export.
"""

from __future__ import annotations

import atexit
import gzip
import os
import shutil
import tempfile
from pathlib import Path

from case_model import SMALL, Builder, Case, Sources, write_diabetes
from ops_cases import run_fedcare
from site_fixtures import copy, steps, template, write

#: Data rows of the published file the predict cases score.
ROWS = 60
#: A valid dataset definition: the worked example's (its data is not needed to refuse).
DEFINITION = Path(__file__).resolve().parents[2] / "examples" / "hospital" / "definition.yaml"
SCORES = "{work}/out/scores.csv"

_BUILT: dict[str, Path] = {}


def _model_folder(src: Sources) -> Path:
    """A client model folder registered by ``site personalise`` (built on first use)."""
    if "model" not in _BUILT:
        root = Path(tempfile.mkdtemp(prefix="fedcare-badinputs-model-"))
        atexit.register(shutil.rmtree, root, True)
        shutil.copytree(template(src) / "sites" / "north", root / "north")
        run_fedcare(["site", "personalise", "--site", str(root / "north"), "--out",
                     str(root / "personalise.json"), "--tracking-uri",
                     f"sqlite:///{root / 'store.db'}", "--quiet"], root)  # fmt: skip
        _BUILT["model"] = sorted(root.rglob("MLmodel"))[0].parent
    return _BUILT["model"]


def _model(inp: Path, src: Sources) -> None:
    shutil.copytree(_model_folder(src), inp / "model")


def _rows(changes: dict[tuple[int, str], str] | None = None, *, name: str = "rows.csv") -> Builder:
    """``{in}/name``: the first :data:`ROWS` rows of the published file, cells changed."""

    def build(inp: Path, src: Sources) -> None:
        lines = list(src.diabetes_lines[: ROWS + 1])
        header = src.diabetes_header
        for (row, column), value in (changes or {}).items():
            parts = lines[row].split(",")
            parts[header.index(column)] = value
            lines[row] = ",".join(parts)
        write_diabetes(inp, lines, name=name)

    return build


def _header(edit: str) -> Builder:
    """``{in}/rows.csv`` with its header edited: ``twice`` (age named twice), ``shifted``."""

    def build(inp: Path, src: Sources) -> None:
        lines = list(src.diabetes_lines[: ROWS + 1])
        names = lines[0].split(",")
        if edit == "twice":
            names[names.index("gender")] = "age"
        else:  # shifted: race's name left out, every value one column off its name
            names.remove("race")
        lines[0] = ",".join(names)
        write_diabetes(inp, lines, name="rows.csv")

    return build


def _drop_column(column: str) -> Builder:
    def build(inp: Path, src: Sources) -> None:
        index = src.diabetes_header.index(column)
        lines = [",".join(p for i, p in enumerate(line.split(",")) if i != index)
                 for line in src.diabetes_lines[: ROWS + 1]]  # fmt: skip
        write_diabetes(inp, lines, name="rows.csv")

    return build


def _gzip(name: str) -> Builder:
    def build(inp: Path, _src: Sources) -> None:
        (inp / f"{name}.gz").write_bytes(gzip.compress((inp / name).read_bytes()))
        (inp / name).unlink()

    return build


def _link(target: str, link: str, *, hard: bool = False) -> Builder:
    """``{in}/link`` naming ``{in}/target``: a symbolic link, or a hard link."""

    def build(inp: Path, _src: Sources) -> None:
        if hard:
            os.link(inp / target, inp / link)
        else:
            (inp / link).symlink_to(inp / target)

    return build


def _definition(inp: Path, _src: Sources) -> None:
    (inp / "def.yaml").write_bytes(DEFINITION.read_bytes())


def _data_folder(rows: int | None = 20) -> Builder:
    """``{in}/data/diabetic_data.csv``: the first ``rows`` rows (None: the whole file)."""

    def build(inp: Path, src: Sources) -> None:
        (inp / "data").mkdir()
        lines = src.diabetes_lines if rows is None else src.diabetes_lines[: rows + 1]
        write_diabetes(inp / "data", list(lines))

    return build


def _predict(*, data: str = "{in}/rows.csv", out: str = SCORES, model: str = "{in}/model"):
    return ("predict", "--model", model, "--data", data, "--out", out)


def predict_path_cases() -> list[Case]:
    """``predict``'s ``--out`` naming the export, the model's files or the store."""
    base = steps(_model, _rows())

    def refused(cid: str, names: tuple[str, ...], argv: tuple[str, ...], *more: Builder) -> Case:
        return Case(cid, "outputs-apart", "refused", argv, steps(base, *more), names=names)

    return [
        refused("io-pred-out-is-data", ("--out", "--data"), _predict(out="{in}/rows.csv")),
        refused("io-pred-out-dotted", ("--out", "--data"),
                _predict(data="in/rows.csv", out="./in/rows.csv")),
        refused("io-pred-out-absolute-relative", ("--out", "--data"),
                _predict(data="in/rows.csv", out="{in}/rows.csv")),
        refused("io-pred-out-symlink", ("--out", "--data"), _predict(out="{in}/link.csv"),
                _link("rows.csv", "link.csv")),
        refused("io-pred-out-hardlink", ("--out", "--data"), _predict(out="{in}/hard.csv"),
                _link("rows.csv", "hard.csv", hard=True)),
        refused("io-pred-out-mlmodel", ("--out", "--model"), _predict(out="{in}/model/MLmodel")),
        refused("io-pred-out-store", ("--out", "--tracking-uri"),
                (*_predict(out="{in}/s.db"), "--tracking-uri", "sqlite:///{in}/s.db"),
                write("s.db", b"")),
    ]  # fmt: skip


def predict_row_cases(src: Sources) -> list[Case]:
    """``predict`` on rows a run refuses: named by column and rows, nothing written."""

    def cells(cid: str, column: str, value: str, rows: tuple[int, ...], note: str) -> Case:
        return Case(cid, "predict-rows", "refused", _predict(),
                    steps(_model, _rows({(r, column): value for r in rows})),
                    names=("rows.csv", column), rows=rows, secrets=src.diabetes_ids(*rows),
                    note=note)  # fmt: skip

    first = src.diabetes_cell(7, "encounter_id")
    return [
        cells("io-pred-gap-max-glu-serum", "max_glu_serum", "", (9, 31),
              "the definition allows max_glu_serum no gaps ('None' is a value): not imputed"),
        cells("io-pred-gap-gender", "gender", "?", (12,), "gender may not be missing"),
        cells("io-pred-gap-num-medications", "num_medications", "", (40,),
              "a count may not be missing"),
        cells("io-pred-empty-encounter", "encounter_id", "", (5,), "an identifier is never empty"),
        cells("io-pred-missing-patient", "patient_nbr", "?", (17, 18), "'?' is a missing mark"),
        cells("io-pred-patient-form", "patient_nbr", "P-17", (22,), "not of the declared form"),
        Case("io-pred-repeated-encounter", "predict-rows", "refused", _predict(),
             steps(_model, _rows({(8, "encounter_id"): first})), names=("encounter_id",),
             rows=(7, 8), secrets=src.diabetes_ids(7, 8), note="each encounter once, as a run"),
        Case("io-pred-header-twice", "predict-rows", "refused", _predict(),
             steps(_model, _header("twice")), names=("rows.csv", "age"),
             note="a run refuses a column named twice; pandas would have scored the first"),
        Case("io-pred-header-shifted", "predict-rows", "refused", _predict(),
             steps(_model, _header("shifted")), names=("rows.csv", "header"),
             note="a header one name short: the header's fault (the shifted-header check)"),
        Case("io-pred-no-encounter-column", "predict-rows", "refused", _predict(),
             steps(_model, _drop_column("encounter_id")), names=("rows.csv", "encounter_id"),
             note="the scores are keyed by the export's identifiers"),
    ]  # fmt: skip


def predict_valid_cases() -> list[Case]:
    """A gzipped export, gzipped scores, scores beside the export: accepted."""
    return [
        Case("io-ok-pred-gz", "predict-valid", "accepted", _predict(data="{in}/rows.csv.gz"),
             steps(_model, _rows(), _gzip("rows.csv")), outputs=(SCORES,),
             note="the export gzipped, as site prepare reads it"),
        Case("io-ok-pred-gz-out", "predict-valid", "accepted",
             _predict(out="{work}/out/scores.csv.gz"), steps(_model, _rows()),
             outputs=("{work}/out/scores.csv.gz",)),
        Case("io-ok-pred-beside", "predict-valid", "accepted",
             _predict(data="in/rows.csv", out="in/rows-scores.csv"), steps(_model, _rows()),
             outputs=("{in}/rows-scores.csv",), note="the same folder, another name"),
    ]  # fmt: skip


def run_path_cases() -> list[Case]:
    """``run``: ``--out`` and ``--run-dir`` against its config, definition, data, sites, store."""
    config = write("c.json", "{}\n")
    sites = write("sites.json", '[{"name": "north", "data": "hosp/site-0.csv", "objectives": '
                  '["readmission"]}, {"name": "south", "data": "hosp/site-1.csv", "objectives": '
                  '["los"]}]')  # fmt: skip

    def refused(cid: str, names: tuple[str, ...], argv: tuple[str, ...], build: Builder) -> Case:
        return Case(cid, "outputs-apart", "refused", ("run", *argv), build, names=names)

    return [
        refused("io-run-out-is-config", ("--out", "--config"),
                ("--config", "{in}/c.json", "--out", "{in}/c.json"), config),
        refused("io-run-out-dotted-config", ("--out", "--config"),
                ("--config", "in/c.json", "--out", "./in/c.json"), config),
        refused("io-run-out-symlink-config", ("--out", "--config"),
                ("--config", "{in}/c.json", "--out", "{in}/l.json"),
                steps(config, _link("c.json", "l.json"))),
        refused("io-run-out-hardlink-config", ("--out", "--config"),
                ("--config", "{in}/c.json", "--out", "{in}/h.json"),
                steps(config, _link("c.json", "h.json", hard=True))),
        refused("io-run-out-is-definition", ("--out", "--dataset"),
                ("--dataset", "{in}/def.yaml", "--out", "{in}/def.yaml"), _definition),
        refused("io-run-out-is-store", ("--out", "--tracking-uri"),
                ("--tracking-uri", "sqlite:///{in}/s.db", "--out", "{in}/s.db"),
                write("s.db", b"")),
        refused("io-run-out-in-data-dir", ("--out", "--data-dir"),
                ("--data-dir", "{in}/data", "--out", "{in}/data/diabetic_data.csv"),
                _data_folder()),
        refused("io-run-out-is-data-dir-file", ("--out", "--data-dir"),
                ("--data-dir", "{in}/data/diabetic_data.csv", "--out",
                 "{in}/data/diabetic_data.csv"), _data_folder()),
        refused("io-run-run-dir-holds-config", ("--run-dir", "--config"),
                ("--config", "{in}/c.json", "--run-dir", "{in}"), config),
        refused("io-run-out-in-resumed-folder", ("--out", "--resume"),
                ("--resume", "{in}/kept", "--out", "{in}/kept/config.json"),
                write("kept/config.json", "{}\n")),
        refused("io-run-out-is-site-file", ("--out", "north"),
                ("--sites", "{in}/sites.json", "--schema", "{in}/fed.json", "--quiet", "--out",
                 "{in}/hosp/site-0.csv"), steps(copy("fed.json", "hosp"), sites)),
        Case("io-ok-run-out-in-data-folder", "outputs-apart-valid", "accepted",
             ("run", "--data-dir", "{in}/data", "--no-verify", "--max-patients", "2000", *SMALL,
              "--out", "{in}/data/results.json"), _data_folder(None),
             outputs=("{in}/data/results.json",),
             note="a new file in the data folder replaces nothing the run reads"),
    ]  # fmt: skip


def other_path_cases() -> list[Case]:
    """split-sites, site prepare/personalise, federation init/run, data check, experiment."""
    split = ("data", "split-sites", "--dataset", "diabetes130", "--data", "{in}/cohort.csv",
             "--sites", "2", "--seed", "0", "--out")  # fmt: skip
    prepare = ("site", "prepare", "--schema", "{in}/fed.json", "--data", "{in}/hosp/site-0.csv",
               "--objectives", "readmission", "--out")  # fmt: skip
    fed_run = ("federation", "run", "--state-dir", "{in}/ST", "--schema", "{in}/fed.json",
               "--min-sites", "2", "--rounds", "1", "--seed", "0", "--out")  # fmt: skip

    def refused(cid: str, names: tuple[str, ...], argv: tuple[str, ...], build: Builder) -> Case:
        return Case(cid, "outputs-apart", "refused", argv, build, names=names)

    return [
        refused("io-split-out-holds-data", ("--out", "--data"), (*split, "{in}"),
                copy("cohort.csv")),
        refused("io-split-out-is-data", ("--out", "--data"), (*split, "{in}/cohort.csv"),
                copy("cohort.csv")),
        refused("io-prep-out-holds-data", ("--out", "--data"), (*prepare, "{in}/hosp"),
                copy("fed.json", "hosp")),
        refused("io-prep-out-is-schema", ("--out", "--schema"), (*prepare, "{in}/fed.json"),
                copy("fed.json", "hosp")),
        refused("io-pers-out-site-file", ("--out", "--site"),
                ("site", "personalise", "--site", "{in}/north", "--out", "{in}/north/site.json"),
                copy("sites/north")),
        refused("io-init-out-is-definition", ("--out", "--dataset"),
                ("federation", "init", "--dataset", "{in}/def.yaml", "--out", "{in}/def.yaml"),
                _definition),
        refused("io-init-out-is-config", ("--out", "--config"),
                ("federation", "init", "--dataset", "diabetes130", "--config", "{in}/c.json",
                 "--out", "{in}/c.json"), write("c.json", "{}\n")),
        refused("io-fedrun-out-is-schema", ("--out", "--schema"), (*fed_run, "{in}/fed.json"),
                steps(copy("fed.json"), write("ST/superlink.json", "{}\n"))),
        refused("io-check-json-is-definition", ("--json", "--dataset"),
                ("data", "check", "--dataset", "{in}/def.yaml", "--json", "{in}/def.yaml"),
                _definition),
        refused("io-check-json-in-data-dir", ("--json", "--data-dir"),
                ("data", "check", "--dataset", "diabetes130", "--data-dir", "{in}/data",
                 "--json", "{in}/data/diabetic_data.csv"), _data_folder()),
        refused("io-exp-out-is-data-dir", ("--out", "--data-dir"),
                ("experiment", "comparison", "--data-dir", "{in}/data", "--out", "{in}/data"),
                _data_folder()),
        Case("io-ok-split-beside", "outputs-apart-valid", "accepted", (*split, "{in}/hosp"),
             copy("cohort.csv"), outputs=("{in}/hosp/sites.json",),
             note="a new folder beside the input"),
        Case("io-ok-init-beside-definition", "outputs-apart-valid", "accepted",
             ("federation", "init", "--dataset", "{in}/def.yaml", "--out", "{in}/fed.json"),
             _definition, outputs=("{in}/fed.json",)),
    ]  # fmt: skip


def output_path_cases(src: Sources) -> list[Case]:
    """Every ``io-`` case."""
    return (
        predict_path_cases()
        + predict_row_cases(src)
        + predict_valid_cases()
        + run_path_cases()
        + other_path_cases()
    )
