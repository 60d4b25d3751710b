"""``fedcare predict``: score raw rows with a logged or registered client model.

The model is an MLflow pyfunc over the client's package; ``fedcare predict`` scores with that
package as the pyfunc's ``predict`` does (:func:`_load_model`), so it gives the predictions of
``mlflow.pyfunc.load_model`` and ``mlflow models serve``, and a registered version in a local
SQLite store is found without MLflow's client (:mod:`fedcare.tracking.model_folder`), which
keeps the command quick (``docs/BENCHMARKS.md``). The rows are read and checked as a run reads
and checks the dataset's source, by the same functions (:attr:`RowFormat.read_file`): a CSV,
gzipped or otherwise compressed (``.gz``, ``.bz2``, ``.xz``, ``.zst``), or Parquet; a header
naming a column twice or lacking an identifier column, an empty or repeated identifier, and a
gap where the definition allows none are refused naming the column and rows, never imputed.
The output CSV (gzipped when ``--out`` ends in ``.gz``) holds the input's identifier columns
(``encounter_id``, ``patient_nbr``; MIMIC-III's ``SUBJECT_ID``, ``HADM_ID``, ``ICUSTAY_ID``)
for joining, then one column per objective; identifiers are written only there, owner-only
(0600), never printed or logged, and never passed to the model. ``--out`` never replaces an
input: the rows, the model's files, the store
(:func:`~fedcare_core.files.apart.check_outputs_apart`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedcare.cli.options import add_tracking_uri_option
from fedcare_core.config import UNSEEN_CATEGORY_POLICIES
from fedcare_core.errors import ConfigError, DataError
from fedcare_core.files.apart import check_outputs_apart
from fedcare_core.files.output_paths import check_output_file

if TYPE_CHECKING:
    from fedcare_core.data.row_format import RowFormat
    from fedcare_core.predict.package import ModelPackage

#: The MLflow model's description file.
_MLMODEL_FILE = "MLmodel"


def add_parser(sub: Any) -> None:
    """Register ``fedcare predict``."""
    predict = sub.add_parser(
        "predict",
        help="score raw rows (no labels needed) with a client's model",
        description="Score raw rows of the model's dataset with a client's deployed model "
        "(e.g. models:/fedcare-diabetes130-fedcare-early_discharge-client0@champion: the "
        "registered name says what it predicts and for which client) and write one column per "
        "objective, after the input's identifier columns.",
    )
    predict.add_argument(
        "--model",
        required=True,
        metavar="URI",
        help="an MLflow model URI: models:/<name>@champion, models:/<name>/<version>, "
        "models:/<model id>, runs:/<run id>/client<k>, or a local model folder",
    )
    predict.add_argument(
        "--data", required=True, type=Path, metavar="FILE.csv", help="the rows to score"
    )
    predict.add_argument(
        "--out", required=True, type=Path, metavar="FILE.csv", help="write the predictions here"
    )
    predict.add_argument(
        "--unseen-categories",
        choices=UNSEEN_CATEGORY_POLICIES,
        help="a category outside a column's documented values: refuse the rows or encode it as "
        "'other' (default: as the model's training run did)",
    )
    add_tracking_uri_option(
        predict, "where models:/ URIs are looked up", "else the project's mlflow/mlflow.db"
    )


def _check_model_store(uri: str, db: Path) -> None:
    """Refuse a SQLite store that holds no model registry, without writing to it.

    MLflow would create its tables in an empty database file (``sqlite3 x.db ''``) before
    finding no model there: the store is opened read-only here first.

    Raises
    ------
    ConfigError
        Naming ``--tracking-uri``: no such file, not an SQLite database, or no MLflow tables.
    """
    import sqlite3

    if not db.is_file():
        raise ConfigError(f"--tracking-uri {uri}: no MLflow store at {db}")
    try:
        with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as con:
            found = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'registered_models'"
            ).fetchone()
    except sqlite3.Error as exc:
        raise ConfigError(f"--tracking-uri {uri}: {db} is not an MLflow store ({exc})") from None
    if found is None:
        raise ConfigError(
            f"--tracking-uri {uri}: {db} holds no MLflow model registry (an empty database): "
            "no model can be loaded from it"
        )


def _load_model(uri: str, tracking_uri: str | None, folder: Path | None) -> ModelPackage:
    """The client package of the MLflow model at ``uri``; a missing or foreign model is one line.

    MLflow's pyfunc of a client model (:mod:`fedcare.tracking.pyfunc_model`) wraps one artifact,
    the client's package, and its ``predict`` is :meth:`ModelPackage.score`; ``fedcare predict``
    reads that package from the model's folder and scores with it directly, so it predicts what
    ``mlflow.pyfunc.load_model(uri).predict`` and ``mlflow models serve`` predict (the tests
    compare them) without importing MLflow where it need not. ``folder``: the model's folder on
    this machine (:func:`_local_model_folder`); None: ``mlflow.artifacts.download_artifacts``
    fetches it. The model's pinned requirements are compared with this environment by
    :func:`requirement_mismatches` (a warning on stderr), as MLflow warns when it loads a model.
    """
    import tempfile

    if folder is not None:
        return _package_in(uri, folder)
    with tempfile.TemporaryDirectory(prefix="fedcare-model-") as fetched:  # removed once read
        return _package_in(uri, _download(uri, tracking_uri, Path(fetched)))


def _local_model_folder(uri: str, tracking_uri: str | None) -> Path | None:
    """The model's folder on this machine, found read-only, or None (MLflow fetches it).

    A registered version in a local SQLite store
    (:func:`~fedcare.tracking.model_folder.registered_model_folder`), or a model folder given
    as ``--model``.
    """
    from fedcare.tracking.model_folder import registered_model_folder, registry_uri

    folder = registered_model_folder(uri, registry_uri(tracking_uri))
    if folder is None and Path(uri).is_dir():  # a model folder on this machine: read in place
        folder = Path(uri)
    return folder


def _package_in(uri: str, folder: Path) -> ModelPackage:
    """The client package of the MLflow model in ``folder`` (``--model uri``), read whole."""
    from fedcare.tracking.model_folder import PACKAGE_ARTIFACT
    from fedcare_core.predict.package import load_package

    mlmodel = _read_mlmodel(uri, folder)
    flavor = (mlmodel.get("flavors") or {}).get("python_function") or {}
    artifact = ((flavor.get("artifacts") or {}).get(PACKAGE_ARTIFACT) or {}).get("path")
    if "dataset" not in (mlmodel.get("metadata") or {}) or not isinstance(artifact, str):
        raise ConfigError(f"--model {uri}: not a FedCARE client model (no dataset in its metadata)")
    for mismatch in requirement_mismatches(folder, flavor.get("python_version")):
        print(f"fedcare: warning: --model {uri}: {mismatch}", file=sys.stderr)
    try:
        return load_package(folder / artifact)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"--model {uri}: cannot load the model ({detail})") from None


def _download(uri: str, tracking_uri: str | None, into: Path) -> Path:
    """The model's folder as MLflow fetches it (any URI MLflow knows) into ``into``."""
    import fedcare.tracking  # noqa: F401, I001  (MLflow's telemetry off before it is imported)
    import mlflow.artifacts
    from mlflow.exceptions import MlflowException

    from fedcare.tracking import store

    store.configure(tracking_uri)
    try:
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(into)))
    except (MlflowException, OSError) as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"--model {uri}: cannot load the model ({detail})") from None


def _read_mlmodel(uri: str, folder: Path) -> dict[str, Any]:
    """The model's ``MLmodel`` file (YAML), or a one-line error naming ``--model``."""
    import yaml

    from fedcare_core.files.safe_yaml import read_yaml_file

    try:
        document = read_yaml_file(folder / _MLMODEL_FILE)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"--model {uri}: not an MLflow model ({detail})") from None
    if not isinstance(document, dict):
        raise ConfigError(f"--model {uri}: not an MLflow model ({_MLMODEL_FILE} is not a mapping)")
    return document


def requirement_mismatches(folder: Path, python_version: str | None) -> list[str]:
    """How this environment differs from what the model in ``folder`` was logged with.

    Parameters
    ----------
    folder
        The MLflow model's folder (its ``requirements.txt``: pinned ``name==version`` lines).
    python_version
        The Python version the model was logged with (its pyfunc flavour's), or ``None``.

    Returns
    -------
    list of str
        One line per package whose installed version does not satisfy its requirement (or is
        not installed), and one if Python's major.minor version differs, as MLflow warns.
    """
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    found: list[str] = []
    running = ".".join(str(v) for v in sys.version_info[:2])
    if python_version is not None and ".".join(python_version.split(".")[:2]) != running:
        found.append(f"logged with Python {python_version}, running Python {running}")
    path = folder / "requirements.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    for line in lines:
        try:
            req = Requirement(line.strip())
        except InvalidRequirement:  # a comment, an option, a path or URL: not compared
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            installed: str | None = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            installed = None
        if installed is None or (req.specifier and not req.specifier.contains(installed)):
            found.append(f"{req.name} {installed or 'not installed'}, the model needs {req}")
    return found


def _read_rows(path: Path, fmt: RowFormat, columns: list[str], policy: str) -> tuple[Any, str]:
    """The rows to score, named as declared, and the file's name for messages.

    A dataset's rows are read and checked as a run reads and checks its source
    (:attr:`RowFormat.read_file`: the run's reader, identifier rules and column checks);
    any other cohort's rows as pandas reads a CSV by default (``?``, empty cells: missing),
    gzipped or not.
    """
    import pandas as pd

    name = str(path)
    if fmt.read_file is not None:
        return fmt.read_file(path, columns, policy)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read the file ({exc.strerror})", file=name) from None
    if not data.strip():
        raise DataError("the file is empty", file=name)
    gzipped = path.name.lower().endswith(".gz")
    try:
        rows = pd.read_csv(
            io.BytesIO(data), low_memory=False, compression="gzip" if gzipped else None
        )
    except (ValueError, OSError, EOFError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        detail = " ".join(str(exc).split())
        raise DataError(f"cannot parse the CSV ({detail})", file=name) from None
    return fmt.as_declared(rows), name


def _output_bytes(out: Path, table: Any) -> bytes:
    """``table`` as CSV; gzipped (without a time stamp) when ``out`` ends in ``.gz``."""
    import gzip

    data: bytes = table.to_csv(index=False).encode()
    return gzip.compress(data, mtime=0) if out.name.lower().endswith(".gz") else data


def _check_paths(args: argparse.Namespace, model_folder: Path | None) -> None:
    """``--out`` apart from every input (the rows, the model, the store), and writable."""
    from fedcare.tracking.local_artifacts import sqlite_path
    from fedcare.tracking.model_folder import registry_uri

    store = sqlite_path(registry_uri(args.tracking_uri))
    check_outputs_apart(
        {"--out": args.out},
        {"--data": args.data, "--model": model_folder, "--tracking-uri": store},
        read_folders=("--model",),
    )
    check_output_file(args.out)


def cmd_predict(args: argparse.Namespace) -> int:
    """``fedcare predict``: load, read, score, write; one message on an expected failure."""
    import pandas as pd

    from fedcare.tracking.local_artifacts import sqlite_path
    from fedcare_core.files.atomic import write_atomic
    from fedcare_core.files.private import keep_out_of_git

    tracking_uri = args.tracking_uri
    folder = _local_model_folder(args.model, tracking_uri)
    _check_paths(args, folder)
    if not args.data.is_file():
        raise DataError("not a file (missing, or a folder)", file=str(args.data))
    db = sqlite_path(tracking_uri) if tracking_uri else None
    if db is not None:  # reading a model must not create (or migrate) a store
        _check_model_store(tracking_uri, db)
    package = _load_model(args.model, tracking_uri, folder)
    fmt = package.row_format()
    policy = args.unseen_categories or package.unseen_categories
    rows, source = _read_rows(args.data, fmt, package.input_columns, policy)
    inputs = [c for c in package.input_columns if c in rows.columns]
    predictions = package.score(
        rows.loc[:, inputs], source=source, unseen_categories=args.unseen_categories
    )
    kept = fmt.as_exported(rows.loc[:, [c for c in rows.columns if c in fmt.identifiers]])
    out = pd.concat([kept, predictions], axis=1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if kept.columns.size:  # scores keyed by patient: never where git would pick them up
        keep_out_of_git(args.out, "the scores (keyed by patient identifiers)", folder=False)
    write_atomic(args.out, _output_bytes(args.out, out))
    columns = ", ".join(str(c) for c in predictions.columns)
    print(f"scored {len(out)} rows ({columns}) → {args.out}", file=sys.stderr)
    return 0
