"""Three hospitals whose feature spaces truly differ, as a sites list and a federation schema.

The synthetic extract of ``examples/hospital`` (seeded, never a patient's) split into three
hospitals' exports (``site_exports``): ``north`` exports the federation's columns only,
``south`` also a maximum lactate and a frailty score (``site2-private.yaml``), ``east`` names
and codes some columns its own way (``site3-map.yaml``) and records the ward
(``site3-private.yaml``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from examples.hospital.make_extract import make_extract, site_exports
from fedcare.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "hospital"
#: Each site's own private columns (sorted by site name: its client id).
OWN_COLUMNS = {"east": ["ADMIT_WARD"], "north": [], "south": ["LACTATE_MAX", "CLIN_FRAILTY_SCALE"]}
_SITES = [
    {"data": "site1.csv", "objectives": ["mortality"], "name": "north"},
    {"data": "site2.csv", "objectives": ["readmission"], "name": "south",
     "private": "site2-private.yaml"},
    {"data": "site3.csv", "objectives": ["los"], "name": "east",
     "private": "site3-private.yaml", "map": "site3-map.yaml"},
]  # fmt: skip


def write_hospital_sites(
    folder: Path, *, rows: int = 2400, seed: int = 3, init: Sequence[str] = ()
) -> tuple[Path, Path]:
    """Write the three exports, their declarations, ``sites.json`` and ``fed.json`` in ``folder``.

    Parameters
    ----------
    folder
        An existing folder.
    rows, seed
        The extract's encounters and seed.
    init
        More ``fedcare federation init`` options (e.g. ``--rounds 2``).

    Returns
    -------
    tuple[Path, Path]
        The sites list and the schema.
    """
    for name in ("definition.yaml", "site2-private.yaml", "site3-private.yaml", "site3-map.yaml"):
        shutil.copy(EXAMPLE / name, folder / name)
    for site, export in site_exports(make_extract(rows, seed=seed), 3, seed).items():
        export.to_csv(folder / f"{site}.csv", index=False)
    schema, sites = folder / "fed.json", folder / "sites.json"
    argv = ["federation", "init", "--dataset", str(folder / "definition.yaml")]
    assert main([*argv, "--out", str(schema), *init]) == 0
    sites.write_text(json.dumps(_SITES))
    return sites, schema
