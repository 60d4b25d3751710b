"""A synthetic adult inpatient extract of a made-up hospital, for trying FedCARE on "your own data".

No row is a patient's: every value is drawn from a seeded generator. The columns look like an
EHR export (``MRN``, ``CSN``, admission and discharge date-times, ICD-10-CM principal diagnoses,
first and worst lab values with gaps, a free-text smoking status) and unlike Diabetes 130-US's.
A latent severity drives in-hospital death, the length of stay and 30-day readmission, so the
three objectives of ``definition.yaml`` are learnable.

    python examples/hospital/make_extract.py --out /tmp/riverside --rows 20000 --seed 7

writes ``encounters.csv.gz`` (and with ``--sites 3``, ``site1/encounters.csv.gz`` … with
disjoint patients: one hospital each, for ``fedcare site prepare``). The hospitals' exports
differ as real ones do: ``site2`` also records a maximum lactate and a clinical frailty score
(``site2-private.yaml`` declares them), ``site3`` names some columns and codes its own way
(mapped by ``site3-map.yaml``) and records the ward (``site3-private.yaml``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

#: ICD-10-CM principal diagnoses (code → how much it adds to the latent severity).
_DIAGNOSES = {
    "I50.9": 0.8,
    "I21.4": 1.0,
    "I48.91": 0.3,
    "I63.9": 1.1,
    "J18.9": 0.7,
    "J44.1": 0.6,
    "J96.01": 1.4,
    "K92.2": 0.6,
    "K85.90": 0.5,
    "K57.32": 0.2,
    "E11.65": 0.3,
    "E87.1": 0.4,
    "N17.9": 0.9,
    "N39.0": 0.3,
    "A41.9": 1.5,
    "S72.001A": 0.6,
    "T81.4XXA": 0.5,
    "M54.5": -0.4,
    "C34.90": 1.2,
    "D64.9": 0.2,
    "R07.9": -0.6,
    "F10.239": 0.3,
    "Z51.11": 0.4,
}
_SMOKING = [
    "Never",
    "Former",
    "Current every day",
    "Current some days",
    "never smoker",
    "Unknown",
    "former smoker",
    "Passive",
]
_DISPOSITIONS = ["HOME", "HOME_HEALTH", "SNF", "REHAB", "TRANSFER", "AMA"]


def make_extract(rows: int, seed: int) -> pd.DataFrame:
    """``rows`` synthetic encounters drawn with ``seed``.

    Returns
    -------
    pandas.DataFrame
        One encounter per row, in the columns ``definition.yaml`` declares.
    """
    rng = np.random.default_rng(seed)
    n_patients = max(1, int(rows * 0.7))
    patient = np.sort(rng.integers(0, n_patients, size=rows))
    age_of = rng.integers(18, 98, size=n_patients)
    sex_of = rng.choice(["F", "M", "X"], p=[0.52, 0.475, 0.005], size=n_patients)
    frailty_of = rng.normal(0, 1, size=n_patients)
    age = age_of[patient]
    frailty = frailty_of[patient]
    dx = rng.choice(list(_DIAGNOSES), size=rows)
    source = rng.choice(
        ["ED", "CLINIC", "TRANSFER", "ELECTIVE"], p=[0.62, 0.15, 0.08, 0.15], size=rows
    )
    admit_type = np.where(
        source == "ELECTIVE",
        "ELECTIVE",
        rng.choice(["EMERGENCY", "URGENT"], p=[0.8, 0.2], size=rows),
    )
    ed_visits = rng.poisson(0.6 + 0.5 * np.clip(frailty, 0, None))
    prior_admits = rng.poisson(0.3 + 0.6 * np.clip(frailty, 0, None))
    severity = (
        0.035 * (age - 60)
        + 0.6 * frailty
        + np.vectorize(_DIAGNOSES.get)(dx)
        + 0.5 * (source == "TRANSFER")
        - 0.6 * (admit_type == "ELECTIVE")
        + 0.15 * prior_admits
        + rng.normal(0, 0.8, size=rows)
    )
    sbp = np.clip(rng.normal(135 - 9 * severity, 18), 60, 240)
    hgb = np.clip(rng.normal(12.8 - 0.7 * severity, 1.6), 4, 19)
    creat = np.clip(np.exp(rng.normal(0.0 + 0.25 * severity, 0.45)), 0.2, 15)
    sodium = np.clip(rng.normal(137 - 1.2 * severity, 3.5), 112, 165)
    hba1c = np.clip(rng.normal(6.4 + 0.3 * (dx == "E11.65") * 3, 1.1), 4, 16)
    bmi = np.clip(rng.normal(29, 6.5, size=rows), 14, 70)
    icu = rng.random(rows) < 1 / (1 + np.exp(-(severity - 1.6)))
    los_days = np.exp(rng.normal(1.1 + 0.35 * severity + 0.5 * icu, 0.55))
    died = rng.random(rows) < 1 / (1 + np.exp(-(severity * 1.3 - 5.0 + 0.8 * icu)))
    admit = pd.Timestamp("2024-01-01") + pd.to_timedelta(
        rng.integers(0, 700 * 24 * 60, rows), unit="min"
    )
    discharge = admit + pd.to_timedelta(np.round(los_days * 24 * 60), unit="min")
    n_meds = np.clip(rng.poisson(6 + 1.5 * np.clip(severity, 0, None)), 0, 45)
    disposition = np.where(
        died,
        "EXPIRED",
        np.where(
            rng.random(rows) < 0.04 * np.clip(severity, 0, None),
            "HOSPICE",
            rng.choice(_DISPOSITIONS, p=[0.55, 0.15, 0.13, 0.07, 0.05, 0.05], size=rows),
        ),
    )
    readmit_logit = -2.6 + 0.45 * severity + 0.35 * prior_admits + 0.4 * (disposition == "AMA")
    readmit = np.where(rng.random(rows) < 1 / (1 + np.exp(-readmit_logit)), "Y", "N")
    frame = pd.DataFrame(
        {
            "MRN": [f"RG{7_000_000 + p:07d}" for p in patient],
            "CSN": [f"{90_000_000 + i}" for i in rng.permutation(rows)],
            "ADMIT_DTTM": admit.strftime("%Y-%m-%d %H:%M"),
            "DISCH_DTTM": discharge.strftime("%Y-%m-%d %H:%M"),
            "AGE_YRS": age,
            "SEX": sex_of[patient],
            "ADMIT_SRC": source,
            "ADMIT_TYPE": admit_type,
            "PAYOR_CLASS": rng.choice(
                ["MEDICARE", "MEDICAID", "COMMERCIAL", "SELF_PAY", "OTHER"],
                p=[0.45, 0.18, 0.28, 0.05, 0.04],
                size=rows,
            ),
            "PRIN_DX_ICD10": dx,
            "ED_VISITS_12M": ed_visits,
            "INPT_ADMITS_12M": prior_admits,
            "SBP_ADMIT": np.round(sbp),
            "HGB_FIRST": np.round(hgb, 1),
            "BMI": np.round(bmi, 1),
            "HBA1C_PCT": np.round(hba1c, 1),
            "CREAT_MAX": np.round(creat, 2),
            "NA_MIN": np.round(sodium),
            "ICU_STAY": np.where(icu, "Y", "N"),
            "N_MEDS_DISCH": n_meds,
            "SMOKING_STATUS": rng.choice(_SMOKING, size=rows),
            "DISCH_DISPO": disposition,
            "READMIT_30D": readmit,
        }
    )
    _punch_gaps(frame, rng)
    return frame


def _punch_gaps(frame: pd.DataFrame, rng: np.random.Generator) -> None:
    """Leave realistic gaps: labs not drawn, a payor not recorded, an unmeasured BMI."""
    for column, rate in (
        ("HGB_FIRST", 0.06),
        ("BMI", 0.22),
        ("HBA1C_PCT", 0.55),
        ("CREAT_MAX", 0.04),
        ("NA_MIN", 0.04),
        ("PAYOR_CLASS", 0.02),
        ("SMOKING_STATUS", 0.15),
    ):
        gap = rng.random(len(frame)) < rate
        frame[column] = frame[column].astype(object).where(~gap, None)


def site_exports(frame: pd.DataFrame, sites: int, seed: int) -> dict[str, pd.DataFrame]:
    """The extract split by patient into ``sites`` hospitals' exports, each its own way.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``site1``, ``site2``, … (disjoint patients). ``site2`` adds ``LACTATE_MAX`` (mmol/L,
        with gaps) and ``CLIN_FRAILTY_SCALE`` (1-9); ``site3`` calls ``MRN`` ``PAT_ID`` and
        ``AGE_YRS`` ``AGE``, codes ``SEX`` as Female/Male/Other, and adds ``ADMIT_WARD``.
    """
    rng = np.random.default_rng(seed + 1)
    patients = frame["MRN"].unique()
    site_of = dict(zip(patients, np.arange(len(patients)) % max(sites, 1), strict=True))
    out: dict[str, pd.DataFrame] = {}
    for k in range(sites):
        part = frame[frame["MRN"].map(site_of) == k].reset_index(drop=True)
        n = len(part)
        if k == 1:
            lactate = np.round(np.exp(rng.normal(0.4, 0.5, n)), 1)
            part["LACTATE_MAX"] = pd.Series(lactate).where(rng.random(n) > 0.3, None)
            part["CLIN_FRAILTY_SCALE"] = np.clip(rng.poisson(3, n) + 1, 1, 9)
        if k == 2:
            part["SEX"] = part["SEX"].map({"F": "Female", "M": "Male", "X": "Other"})
            part = part.rename(columns={"MRN": "PAT_ID", "AGE_YRS": "AGE"})
            part["ADMIT_WARD"] = rng.choice(["4 North", "5 West", "CCU", "Short stay"], n)
        out[f"site{k + 1}"] = part
    return out


def main(argv: list[str] | None = None) -> None:
    """Write the extract (and, with ``--sites``, one extract per hospital)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--rows", type=int, default=20_000, help="encounters (default 20000)")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument(
        "--sites",
        type=int,
        default=0,
        help="also split the patients into this many hospitals' files",
    )
    args = parser.parse_args(argv)
    frame = make_extract(args.rows, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "encounters.csv.gz", index=False)
    for name, export in site_exports(frame, args.sites, args.seed).items():
        folder = args.out / name
        folder.mkdir(exist_ok=True)
        export.to_csv(folder / "encounters.csv.gz", index=False)
    print(f"wrote {len(frame):,} encounters to {args.out}")


if __name__ == "__main__":
    main()
