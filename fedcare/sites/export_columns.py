"""What a site is told about its export's columns: what to do when names differ, what it took.

A hospital's export often names a column its own way. When the federation's definition misses
columns, :func:`column_map_hint` turns the loader's refusal into one line that also says how to
map the names (a column map, ``--map FILE.yaml``, and its format) or, for a built-in dataset,
that the export keeps the published names. After ``site prepare``, :func:`private_columns_lines`
says which of the site's own columns it took into which objective's pool and which columns of
the export it left out: names only, printed at the site and never sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from fedcare_core.errors import MissingColumnsError

#: Where the column map's format is documented.
_MAP_DOC = 'docs/DATASETS.md, "A site\'s own columns and names"'
#: How many column names one printed line lists before it counts the rest.
_NAMES_SHOWN = 12


def column_map_hint(
    error: MissingColumnsError,
    *,
    dataset: str,
    built_in: bool,
    column_map: Path | None,
    map_option: str = "--map",
) -> MissingColumnsError:
    """``error`` with one more clause: how to map the export's names onto the definition's.

    Parameters
    ----------
    error
        The loader's refusal (the missing columns, and those it did not expect).
    dataset
        The federation's dataset, for the message.
    built_in
        Whether the dataset is built in (its exports keep the published names: no map).
    column_map
        The column map given (None: none).
    map_option
        How the user gives a column map where this export is read (``--map``, or a sites
        list's ``"map"`` key).

    Returns
    -------
    MissingColumnsError
        The same file and columns, the message extended (still one line).
    """
    first = error.missing[0] + (", …" if len(error.missing) > 1 else "")
    them = "them" if len(error.missing) > 1 else "it"
    if built_in:
        hint = (
            f"{dataset} is built in: its export keeps the published column names (rename "
            f"{them} back; a column map, {map_option}, applies to a federation over a "
            "definition file: federation init --dataset FILE.yaml)"
        )
    elif column_map is None:
        hint = (
            f"if your export names {them} its own way, map {them} with {map_option} "
            f"FILE.yaml holding 'version: 1' and 'rename: {{YOUR_COLUMN: {first}}}' "
            f"({_MAP_DOC})"
        )
    else:
        hint = (
            f"{map_option} {column_map} does not map {them}: add under its 'rename:' "
            f"'YOUR_COLUMN: {first}' ({_MAP_DOC})"
        )
    message = f"{error.message.rstrip('.')}; {hint}"
    return MissingColumnsError(
        message, file=error.file or "", missing=error.missing, unexpected=error.unexpected
    )


def private_columns_lines(pools: Mapping[str, Sequence[str]], ignored: Sequence[str]) -> list[str]:
    """The lines ``site prepare`` prints about the site's own columns (names only).

    Parameters
    ----------
    pools
        Objective → the site's private columns (``--private``) taken into its pool.
    ignored
        Columns of the export that neither the definition nor ``--private`` declares.

    Returns
    -------
    list of str
        Indented lines: the columns taken per objective, and those left out; none when there
        is nothing to say.
    """
    lines = []
    taken = [f"{objective}: {_names(columns)}" for objective, columns in pools.items() if columns]
    if taken:
        lines.append(
            "  private columns taken (this site's own; named only here, never sent): "
            + "; ".join(taken)
        )
    if ignored:
        lines.append(
            "  columns of the export left out (not in the definition; --private FILE.yaml "
            f"declares a site's own columns): {_names(ignored)}"
        )
    return lines


def _names(columns: Sequence[str]) -> str:
    shown = ", ".join(columns[:_NAMES_SHOWN])
    more = len(columns) - _NAMES_SHOWN
    return shown + (f" and {more:,} more" if more > 0 else "")
