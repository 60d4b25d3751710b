"""What a site is told about its export's columns (:mod:`fedcare.sites.export_columns`)."""

from __future__ import annotations

from pathlib import Path

from fedcare.sites.export_columns import column_map_hint, private_columns_lines
from fedcare_core.errors import MissingColumnsError

REFUSED = MissingColumnsError(
    "missing column(s): 'MRN'. Expected the 23 columns of x.csv.", file="x.csv", missing=["MRN"]
)


def test_the_hint_keeps_the_file_and_columns_and_stays_one_line() -> None:
    hinted = column_map_hint(REFUSED, dataset="riverside", built_in=False, column_map=None)
    assert (hinted.file, hinted.column, hinted.missing) == ("x.csv", "MRN", ("MRN",))
    assert str(hinted).startswith("file x.csv; column 'MRN': missing column(s): 'MRN'. ")
    assert "x.csv; if your export names it its own way, map it with --map FILE.yaml" in str(hinted)
    assert "\n" not in str(hinted)


def test_the_hint_follows_how_the_site_gives_its_map() -> None:
    listed = column_map_hint(
        REFUSED, dataset="riverside", built_in=False, column_map=None, map_option="site east's"
    )
    assert "map it with site east's FILE.yaml" in str(listed)
    given = column_map_hint(REFUSED, dataset="riverside", built_in=False, column_map=Path("m.yaml"))
    assert "--map m.yaml does not map it: add under its 'rename:' 'YOUR_COLUMN: MRN'" in str(given)
    built_in = column_map_hint(REFUSED, dataset="diabetes130", built_in=True, column_map=None)
    assert "diabetes130 is built in: its export keeps the published column names" in str(built_in)


def test_the_columns_taken_and_left_out_are_listed_by_name_only() -> None:
    assert private_columns_lines({}, ()) == []
    lines = private_columns_lines({"readmission": ("LACTATE",), "los": ()}, ())
    assert lines == [
        "  private columns taken (this site's own; named only here, never sent): "
        "readmission: LACTATE"
    ]
    many = [f"C{i}" for i in range(15)]
    (left,) = private_columns_lines({}, many)
    assert left.endswith("C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11 and 3 more")
