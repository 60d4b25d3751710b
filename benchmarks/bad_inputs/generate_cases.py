"""All bad-input cases, and a command that writes their inputs into a temporary folder.

The inputs are derived from the real files under the shared datasets folder each time; nothing
is committed, and nothing is written outside the temporary folder given (which must lie under
the system's temporary directory)::

    python benchmarks/bad_inputs/generate_cases.py --list
    python benchmarks/bad_inputs/generate_cases.py --out /tmp/badinputs [--only 'm-*']

Each case gets ``<out>/<case id>/in/`` (its inputs) and ``<out>/cases.json`` lists every case
with its command line, expected outcome and what the message must name.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from case_model import DEFAULT_DATA_ROOT, Case, Sources, fill
from config_cases import config_cases, flag_cases
from definition_cases import definition_cases
from diabetes_cases import diabetes_content_cases
from diabetes_files import diabetes_file_cases
from federation_cases import federation_cases
from mimic_extra import mimic_cases
from multisite_data_cases import multisite_data_cases
from newcomer_cases import newcomer_cases
from ops_cases import experiment_cases, flower_cases, output_cases, resume_cases
from option_cases import option_cases
from output_path_cases import output_path_cases
from round_cases import round_cases
from site_cases import site_cases


def all_cases(src: Sources) -> list[Case]:
    """Every case, in report order; ids are unique."""
    cases = (
        diabetes_content_cases(src)
        + diabetes_file_cases(src)
        + mimic_cases(src)
        + config_cases(src)
        + flag_cases(src)
        + output_cases(src)
        + resume_cases(src)
        + flower_cases(src)
        + experiment_cases(src)
        + federation_cases(src)
        + site_cases(src)
        + multisite_data_cases(src)
        + definition_cases(src)
        + option_cases(src)
        + output_path_cases(src)
        + round_cases(src)
        + newcomer_cases(src)
    )
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"duplicate case id {case.id}")
        seen.add(case.id)
    return cases


def select(cases: list[Case], only: list[str] | None, categories: list[str] | None) -> list[Case]:
    """The cases whose id matches one of the ``only`` globs and whose category is listed."""
    out = cases
    if only:
        out = [c for c in out if any(fnmatch.fnmatch(c.id, p) for p in only)]
    if categories:
        out = [c for c in out if c.category in categories]
    return out


def describe(case: Case) -> dict[str, object]:
    """A JSON-able summary of a case (placeholders kept)."""
    return {
        "id": case.id,
        "category": case.category,
        "expect": case.expect,
        "argv": ["fedcare", *case.argv],
        "names": list(case.names),
        "rows": list(case.rows),
        "as_nobody": case.as_nobody,
        "note": case.note,
    }


def _inside_tmp(path: Path) -> bool:
    tmp = Path(tempfile.gettempdir()).resolve()
    return path.resolve() == tmp or tmp in path.resolve().parents


def main(argv: list[str] | None = None) -> int:
    """Materialise the selected cases' inputs (or list them)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="a folder under the temporary directory")
    parser.add_argument("--only", action="append", help="case id glob (repeatable)")
    parser.add_argument("--category", action="append", help="category (repeatable)")
    parser.add_argument("--data-root", type=Path, default=DEFAULT_DATA_ROOT)
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    args = parser.parse_args(argv)
    src = Sources(args.data_root)
    cases = select(all_cases(src), args.only, args.category)
    if args.list or args.out is None:
        for case in cases:
            print(f"{case.id:45} {case.category:18} {case.expect}")
        print(f"{len(cases)} cases", file=sys.stderr)
        return 0
    if not _inside_tmp(args.out):
        parser.error(f"--out must lie under {tempfile.gettempdir()}: inputs hold real data")
    args.out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        inp = args.out / case.id / "in"
        inp.mkdir(parents=True, exist_ok=True)
        (inp.parent / "out").mkdir(exist_ok=True)
        case.build(inp, src)
    manifest = []
    for case in cases:
        doc = describe(case)
        work = args.out / case.id
        doc["argv"] = [fill(a, work / "in", work) for a in doc["argv"]]  # type: ignore[attr-defined]
        manifest.append(doc)
    (args.out / "cases.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(cases)} cases written under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
