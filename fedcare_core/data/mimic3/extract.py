"""The MIMIC-III extractor: the raw tables → one row per adult ICU stay, as its definition declares.

:func:`extract_mimic3` reads and checks the tables, keeps the cohort's stays, joins their
admission and patient rows and aggregates their first hours' events; the table it gives is
declared by ``fedcare_core/data/definitions/mimic3.yaml`` (types, vocabularies, ranges, labels),
whose loader (:func:`~fedcare_core.data.declared.loader.load_declared`) checks and labels it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fedcare_core.data.declared.extractors import Extractor
from fedcare_core.data.declared.reading import ColumnOrigin, RawTable, TableRows
from fedcare_core.data.mimic3.benchmark_split import read_benchmark_split
from fedcare_core.data.mimic3.categories import static_features
from fedcare_core.data.mimic3.cohorts import (
    COHORTS,
    DEFAULT_COHORT,
    CohortRules,
    drop_transfers_and_shared_admissions,
    long_enough,
    refuse_if_none_left,
)
from fedcare_core.data.mimic3.consistency import (
    check_admission_times,
    check_patient_dates,
    check_stay_links,
    check_stay_values,
    check_stay_window,
)
from fedcare_core.data.mimic3.dates import TimeRule, TimeStats, parse_times
from fedcare_core.data.mimic3.events import stream_labs, stream_vitals
from fedcare_core.data.mimic3.features import MIMIC3_FEATURES, VITAL_COLUMNS
from fedcare_core.data.mimic3.labels import days_to_next_admission
from fedcare_core.data.mimic3.reader import file_sha256, find_table, read_header, read_small
from fedcare_core.data.mimic3.schema import (
    ADMISSIONS,
    CHARTEVENTS,
    ICUSTAYS,
    LABEVENTS,
    PATIENTS,
)
from fedcare_core.data.mimic3.stays import join_stays
from fedcare_core.errors import DataError

__all__ = ["EXTRACTED_COLUMNS", "LABEL_SOURCES", "extract_mimic3", "find_tables_folder"]

#: The identifiers of a stay.
IDENTIFIERS = ("SUBJECT_ID", "ICUSTAY_ID")
#: What the labels read: the admission's outcome and discharge, the days to the next
#: admission, the stay's length.
LABEL_SOURCES = ("HOSPITAL_EXPIRE_FLAG", "DISCHTIME", "DAYS_TO_NEXT_ADMISSION", "LOS")
#: Every column of the table :func:`extract_mimic3` gives.
EXTRACTED_COLUMNS = (*IDENTIFIERS, *MIMIC3_FEATURES, *LABEL_SOURCES)


def extract_mimic3(
    data_dir: str | Path,
    *,
    chunksize: int = 2_000_000,
    min_age: float = 18.0,
    cohort: str = DEFAULT_COHORT,
    benchmark_split: str | Path | None = None,
) -> RawTable:
    """One row per adult ICU stay of the MIMIC-III tables in ``data_dir``.

    Parameters
    ----------
    data_dir
        Directory holding the MIMIC-III v1.4 CSV tables ``ADMISSIONS``, ``PATIENTS``,
        ``ICUSTAYS``, ``LABEVENTS`` and optionally ``CHARTEVENTS``, each as ``NAME.csv`` or
        ``NAME.csv.gz`` (file names and column headers in upper or lower case).
    chunksize
        Rows per chunk when streaming the tables; the result does not depend on it.
    min_age
        Minimum age in years at ICU admission (``INTIME``).
    cohort
        Which stays and feature window (:data:`~fedcare_core.data.mimic3.cohorts.COHORTS`):
        ``"all-adult-24h"`` (every adult stay, first 24 h) or ``"benchmark-ihm"`` (the MIMIC-III
        benchmark's in-hospital-mortality rules, first 48 h).
    benchmark_split
        The benchmark task folder holding ``train/listfile.csv`` and ``test/listfile.csv``
        (:mod:`~fedcare_core.data.mimic3.benchmark_split`): only stays of listed subjects are
        kept, and the test subjects' stays are the table's ``test_rows``.

    Returns
    -------
    RawTable
        Columns :data:`EXTRACTED_COLUMNS` in ICUSTAYS order: the identifiers, ``age`` (90 and
        over set to 91.4), the seven categories cleaned (MIMIC's "unknown" markers missing,
        ethnicity grouped), the lab and vital-sign aggregates of the window (missing where not
        measured; vitals all missing without CHARTEVENTS) and :data:`LABEL_SOURCES`. Rows name
        ICUSTAYS' data rows, a category its raw table's; ``sha256`` is the ICUSTAYS file's;
        the notes say how the cohort was built.

    Raises
    ------
    DataError
        If the directory or a required table is missing, a required column is missing, a file
        is empty or truncated, a numeric column holds text, a date cannot be parsed, keys
        repeat or the tables disagree (see :mod:`fedcare_core.data.mimic3.consistency`).
    """
    if chunksize < 1:
        raise ValueError(f"chunksize must be positive, got {chunksize}")
    if cohort not in COHORTS:
        raise ValueError(f"unknown cohort {cohort!r}; expected one of {', '.join(COHORTS)}")
    rules = COHORTS[cohort]
    sources = _locate_tables(find_tables_folder(Path(data_dir)))
    stats = TimeStats({}, {})
    icu, adm, pat, notes = _read_checked_tables(sources, chunksize, stats)
    table_subjects = icu["SUBJECT_ID"].to_numpy()  # every subject of the tables, for the split
    icu, rule_notes = _cohort_stays(icu, rules, sources.icustays)
    notes.extend(rule_notes)
    stays, age, stay_notes = join_stays(icu, adm, pat, min_age=min_age, root=sources.root)
    labs, vitals, event_notes = _event_features(sources, stays, adm, chunksize, stats, rules.window)
    chosen = _Chosen(stays, age, labs, vitals)
    if rules.need_events:
        chosen, note = chosen.with_events(rules)
        stay_notes.append(note)
    part = None
    if benchmark_split is not None:
        chosen, part, split_notes = chosen.in_listfiles(benchmark_split, table_subjects)
        stay_notes.extend(split_notes)
    stays = chosen.stays
    frame = pd.concat(
        [
            stays[list(IDENTIFIERS)].astype("int64"),
            static_features(stays, chosen.age),
            chosen.labs,
            chosen.vitals,
            _label_sources(stays, adm),
        ],
        axis=1,
    )
    n = len(stays)
    rows = TableRows(
        (str(sources.icustays),),
        np.zeros(n, dtype=np.int64),
        stays["_ROW"].to_numpy(dtype=np.int64),
        origins=_category_origins(sources, stays),
    )
    return RawTable(
        frame.loc[:, list(EXTRACTED_COLUMNS)],
        rows,
        file_sha256(sources.icustays),
        (),
        (*notes, *stay_notes, *event_notes, *_two_digit_notes(stats)),
        test_rows=None if part is None else part == "test",
    )


def find_tables_folder(root: Path) -> Path:
    """The MIMIC-III tables' folder: ``root`` itself, or its first sub-folder holding the tables.

    Parameters
    ----------
    root
        The tables' folder, or a datasets root holding e.g. ``mimic3-demo``.

    Returns
    -------
    Path
        The folder with ``ICUSTAYS.csv`` (``root`` when none is found, so the loader names it).
    """

    def holds_tables(folder: Path) -> bool:
        return any(p.name.upper().startswith("ICUSTAYS.CSV") for p in folder.glob("*"))

    if holds_tables(root):
        return root
    for candidate in sorted(root.iterdir()) if root.is_dir() else []:
        if candidate.is_dir() and holds_tables(candidate):
            return candidate
    return root


def _label_sources(stays: pd.DataFrame, adm: pd.DataFrame) -> pd.DataFrame:
    """The columns the labels read, per stay (:data:`LABEL_SOURCES`)."""
    hadm = stays["HADM_ID"].to_numpy()
    return pd.DataFrame(
        {
            "HOSPITAL_EXPIRE_FLAG": stays["HOSPITAL_EXPIRE_FLAG"].to_numpy(dtype=np.float64),
            "DISCHTIME": adm.set_index("HADM_ID")["DISCHTIME"].reindex(hadm).to_numpy(),
            "DAYS_TO_NEXT_ADMISSION": days_to_next_admission(adm, hadm),
            "LOS": stays["LOS"].to_numpy(dtype=np.float64),
        }
    )


#: The raw table, its data-row column in the joined stays, and the raw column of each
#: categorical feature.
_CATEGORY_COLUMNS: dict[str, tuple[str, str, str]] = {
    "gender": ("patients", "_PAT_ROW", "GENDER"),
    "ethnicity": ("admissions", "_ADM_ROW", "ETHNICITY"),
    "admission_type": ("admissions", "_ADM_ROW", "ADMISSION_TYPE"),
    "admission_location": ("admissions", "_ADM_ROW", "ADMISSION_LOCATION"),
    "insurance": ("admissions", "_ADM_ROW", "INSURANCE"),
    "marital_status": ("admissions", "_ADM_ROW", "MARITAL_STATUS"),
    "first_careunit": ("icustays", "_ROW", "FIRST_CAREUNIT"),
}


def _category_origins(sources: _Sources, stays: pd.DataFrame) -> dict[str, ColumnOrigin]:
    """Where each categorical feature of the cohort stays comes from: file, column, data rows."""
    return {
        feature: ColumnOrigin(
            str(getattr(sources, table)), column, stays[rows].to_numpy(dtype=np.int64)
        )
        for feature, (table, rows, column) in _CATEGORY_COLUMNS.items()
    }


@dataclass(frozen=True)
class _Sources:
    """The files of one MIMIC-III directory."""

    root: Path
    icustays: Path
    admissions: Path
    patients: Path
    labevents: Path
    chartevents: Path | None


def _locate_tables(data_dir: str | Path) -> _Sources:
    """Find every table, and check the big tables' headers before anything large is read."""
    root = Path(data_dir)
    if not root.is_dir():
        raise DataError(f"MIMIC-III directory {root} does not exist or is not a directory")
    icu_path = find_table(root, "ICUSTAYS", required=True)
    adm_path = find_table(root, "ADMISSIONS", required=True)
    pat_path = find_table(root, "PATIENTS", required=True)
    lab_path = find_table(root, "LABEVENTS", required=True)
    chart_path = find_table(root, "CHARTEVENTS", required=False)
    assert icu_path is not None and adm_path is not None
    assert pat_path is not None and lab_path is not None
    # Fail fast on missing columns in the big tables before reading anything large.
    read_header(lab_path, LABEVENTS)
    if chart_path is not None:
        read_header(chart_path, CHARTEVENTS)
    return _Sources(root, icu_path, adm_path, pat_path, lab_path, chart_path)


def _check_unique(df: pd.DataFrame, key: str, path: Path, table: str) -> None:
    """Raise :class:`DataError` if ``key`` repeats in ``df`` (rows named)."""
    dup = df[key].duplicated(keep=False) & df[key].notna()
    if dup.any():
        raise DataError(
            f"duplicate {key} values in the {table} table",
            file=str(path),
            column=key,
            rows=df.loc[dup, "_ROW"].tolist(),
        )


def _check_flag(df: pd.DataFrame, col: str, path: Path, table: str) -> None:
    """Raise :class:`DataError` if ``col`` holds values other than 0, 1 or missing."""
    bad = df[col].notna() & ~df[col].isin([0.0, 1.0])
    if bad.any():
        raise DataError(
            f"{col} in the {table} table must be 0 or 1",
            file=str(path),
            column=col,
            rows=df.loc[bad, "_ROW"].tolist(),
        )


def _read_icustays(path: Path, chunksize: int, stats: TimeStats) -> tuple[pd.DataFrame, list[str]]:
    """ICU stays with a parsed ``INTIME``, less those without a key; notes on both counts."""
    icu = read_small(path, ICUSTAYS, chunksize)
    notes = [f"ICUSTAYS: {len(icu)} ICU stays read"]
    _check_unique(icu, "ICUSTAY_ID", path, "ICUSTAYS")
    icu["INTIME"] = _times(icu, "INTIME", path, "ICUSTAYS", stats, None)
    if "OUTTIME" in icu.columns:  # for the consistency checks only
        icu["OUTTIME"] = _times(icu, "OUTTIME", path, "ICUSTAYS", stats, icu["INTIME"])
    missing_key = icu[["SUBJECT_ID", "HADM_ID", "ICUSTAY_ID"]].isna().any(axis=1)
    if missing_key.any():
        notes.append(
            f"excluded {int(missing_key.sum())} stays without SUBJECT_ID, HADM_ID or ICUSTAY_ID"
        )
        icu = icu.loc[~missing_key]
    return icu, notes


def _read_admissions(
    path: Path, icu: pd.DataFrame, chunksize: int, stats: TimeStats
) -> pd.DataFrame:
    """Admissions with parsed ``ADMITTIME`` and ``DISCHTIME``, centuries anchored on ``icu``."""
    adm = read_small(path, ADMISSIONS, chunksize)
    _check_unique(adm, "HADM_ID", path, "ADMISSIONS")
    _check_flag(adm, "HOSPITAL_EXPIRE_FLAG", path, "ADMISSIONS")
    # Anchor: the admission's own first ICU INTIME, else the subject's first ICU INTIME.
    intime_by_hadm = icu.groupby("HADM_ID")["INTIME"].min()
    first_intime = icu.groupby("SUBJECT_ID")["INTIME"].min()
    anchor = adm["HADM_ID"].map(intime_by_hadm).astype("datetime64[us]")
    anchor = anchor.fillna(adm["SUBJECT_ID"].map(first_intime).astype("datetime64[us]"))
    for col in ("ADMITTIME", "DISCHTIME"):
        adm[col] = _times(adm, col, path, "ADMISSIONS", stats, anchor)
    return adm


def _read_patients(path: Path, icu: pd.DataFrame, chunksize: int, stats: TimeStats) -> pd.DataFrame:
    """Patients with a parsed ``DOB``: the latest date not after the patient's first ICU stay."""
    pat = read_small(path, PATIENTS, chunksize)
    _check_unique(pat, "SUBJECT_ID", path, "PATIENTS")
    first_intime = icu.groupby("SUBJECT_ID")["INTIME"].min()
    anchor = pat["SUBJECT_ID"].map(first_intime).astype("datetime64[us]")
    pat["DOB"] = _times(pat, "DOB", path, "PATIENTS", stats, anchor, rule="latest_not_after")
    if "DOD" in pat.columns:  # for the consistency checks only
        pat["DOD"] = _times(pat, "DOD", path, "PATIENTS", stats, anchor)
    return pat


def _times(
    df: pd.DataFrame,
    column: str,
    path: Path,
    table: str,
    stats: TimeStats,
    anchor: pd.Series | None,
    rule: TimeRule = "nearest",
) -> pd.Series:
    """``df[column]`` parsed as times (:func:`parse_times`), rows named by ``df["_ROW"]``."""
    return parse_times(
        df[column],
        rows=df["_ROW"].to_numpy(),
        path=path,
        column=column,
        anchor=anchor,
        rule=rule,
        stats=stats,
        table=table,
    )


def _read_checked_tables(
    sources: _Sources, chunksize: int, stats: TimeStats
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """ICUSTAYS, ADMISSIONS and PATIENTS, read and checked against each other; notes."""
    icu, notes = _read_icustays(sources.icustays, chunksize, stats)
    adm = _read_admissions(sources.admissions, icu, chunksize, stats)
    pat = _read_patients(sources.patients, icu, chunksize, stats)
    check_stay_links(icu, adm, pat, sources.icustays)
    notes.extend(check_admission_times(adm, sources.admissions))
    check_stay_window(icu, adm, sources.icustays)
    check_patient_dates(pat, sources.patients)
    dob = icu["SUBJECT_ID"].map(pat.drop_duplicates("SUBJECT_ID").set_index("SUBJECT_ID")["DOB"])
    check_stay_values(icu, dob, sources.icustays)
    return icu, adm, pat, notes


def _cohort_stays(
    icu: pd.DataFrame, rules: CohortRules, path: Path
) -> tuple[pd.DataFrame, list[str]]:
    """The stays ``rules`` keep before the join: the benchmark's rules, the shortest stay."""
    notes: list[str] = []
    before = len(icu)
    if rules.benchmark_stays:
        icu, notes = drop_transfers_and_shared_admissions(icu, path)
        refuse_if_none_left(icu, rules, notes, before, path)
    if rules.min_stay > pd.Timedelta(0):
        keep = long_enough(icu, rules.min_stay)
        hours = rules.min_stay / pd.Timedelta(hours=1)
        notes.append(
            f"{rules.name}: excluded {int((~keep).sum())} stays shorter than {hours:g} h "
            "(ICUSTAYS.LOS)"
        )
        icu = icu.loc[keep]
        refuse_if_none_left(icu, rules, notes, before, path)
    return icu, notes


@dataclass(frozen=True)
class _Chosen:
    """The cohort's stays so far, with their ages and event aggregates (row-aligned)."""

    stays: pd.DataFrame
    age: np.ndarray
    labs: pd.DataFrame
    vitals: pd.DataFrame

    def keep(self, mask: np.ndarray) -> _Chosen:
        """The stays where ``mask`` holds, re-indexed."""

        def kept(frame: pd.DataFrame) -> pd.DataFrame:
            return frame.loc[mask].reset_index(drop=True)

        return _Chosen(kept(self.stays), self.age[mask], kept(self.labs), kept(self.vitals))

    def with_events(self, rules: CohortRules) -> tuple[_Chosen, str]:
        """Only the stays with a lab or vital-sign value in the window, and a note.

        Raises
        ------
        DataError
            If no stay has one.
        """
        has = (self.labs.notna().any(axis=1) | self.vitals.notna().any(axis=1)).to_numpy()
        if not has.any():
            raise DataError(f"no ICU stay of the {rules.name} cohort has an event in its window")
        hours = rules.window / pd.Timedelta(hours=1)
        note = (
            f"{rules.name}: excluded {int((~has).sum())} stays without a lab or vital-sign "
            f"value in the first {hours:g} h; {int(has.sum())} stays kept"
        )
        return self.keep(has), note

    def in_listfiles(
        self, task_dir: str | Path, table_subjects: np.ndarray
    ) -> tuple[_Chosen, np.ndarray, list[str]]:
        """Only the stays of subjects the benchmark lists; each one's part; notes.

        The notes count the stays kept and left out, and the listed subjects with no stay in
        the cohort (absent from the tables, ``table_subjects``, or left out by its rules).

        Raises
        ------
        DataError
            From the listfiles, or if the cohort has no stay of a train or of a test subject.
        """
        split = read_benchmark_split(task_dir)
        part = split.part_of(self.stays["SUBJECT_ID"].to_numpy())
        listed = part != ""
        for name in ("train", "test"):
            if not (part == name).any():
                raise DataError(
                    f"no stay of the cohort belongs to a subject of the {name} listfile",
                    file=str(Path(task_dir) / name / "listfile.csv"),
                )
        note = (
            f"benchmark split: {int((part == 'train').sum())} train and "
            f"{int((part == 'test').sum())} test stays; excluded {int((~listed).sum())} stays "
            "of subjects in neither listfile"
        )
        unlisted = split.unmatched_note(self.stays["SUBJECT_ID"].to_numpy(), table_subjects)
        notes = [note] if unlisted is None else [note, unlisted]
        return self.keep(listed), part[listed], notes


def _event_features(
    sources: _Sources,
    stays: pd.DataFrame,
    adm: pd.DataFrame,
    chunksize: int,
    stats: TimeStats,
    window: pd.Timedelta,
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Lab and vital-sign aggregates of the cohort stays (vitals all NaN without CHARTEVENTS)."""
    admit_by_hadm = adm.set_index("HADM_ID")["ADMITTIME"]
    labs, n_lab_rows = stream_labs(
        sources.labevents, stays[["HADM_ID", "INTIME"]], admit_by_hadm, chunksize, stats, window
    )
    hours = f"{window / pd.Timedelta(hours=1):g} h"
    notes = [f"LABEVENTS: {n_lab_rows} lab values in the first {hours} used"]
    if sources.chartevents is not None:
        vitals, n_chart_rows, n_error = stream_vitals(
            sources.chartevents, stays[["ICUSTAY_ID", "INTIME"]], chunksize, stats, window
        )
        notes.append(
            f"CHARTEVENTS: {n_chart_rows} vital-sign values in the first {hours} used"
            + (f" ({n_error} rows with ERROR = 1 ignored)" if n_error else "")
        )
        return labs, vitals, notes
    n_rows = len(stays)
    vitals = pd.DataFrame(
        {c: np.full(n_rows, np.nan) for c in VITAL_COLUMNS}, index=pd.RangeIndex(n_rows)
    )
    notes.append(
        "CHARTEVENTS absent: the 15 vital-sign features are all missing (NaN) "
        "and left to imputation"
    )
    return labs, vitals, notes


def _two_digit_notes(stats: TimeStats) -> list[str]:
    """One note per column that held two-digit years, in the order the columns were read."""
    notes = []
    for key, n in stats.two_digit.items():
        lost = stats.unresolved.get(key, 0)
        notes.append(
            f"{key}: {n} values written with two-digit years (M/D/YY); century restored "
            "from the patient's ICU stay times"
            + (f", {lost} left missing (patient without ICU stay)" if lost else "")
        )
    return notes


#: The ``fedcare.extractors`` entry ``mimic3``: MIMIC-III v1.4's tables → one row per ICU stay,
#: checked by the ``mimic3`` raw-table checks.
EXTRACTOR = Extractor(extract_mimic3, EXTRACTED_COLUMNS, "mimic3")
