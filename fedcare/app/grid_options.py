"""The options of a grid of runs, each declared once for ``fedcare experiment`` and the flows.

An experiment (:data:`~fedcare.experiments.cells.EXPERIMENTS`) is a grid of runs; what a
user chooses about it (its seeds, its client counts, the cluster, the output folder) is a
:class:`GridOption` here, with its type, default, help and value check. From that one
declaration come ``fedcare experiment``'s flags (:func:`fedcare.cli.experiment.add_parser`),
each experiment flow's parameters and their descriptions in Prefect's UI
(:mod:`flows.experiment_flows`), and the checks of :func:`fedcare.app.grid.check_grid_request`,
which both entries call. An option a configuration setting also is (``rounds``, ``features``,
``unseen_categories``) takes its help from that setting's declaration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fedcare.experiments.cells import (
    CLIENT_COUNTS,
    DISPARITY_RATIOS,
    EXPERIMENTS,
    PRIVACY_BUDGETS,
    PRIVACY_COUNTS,
    PROGRAMME,
    RECOMMENDED_COUNTS,
    RECOMMENDED_SETTINGS,
    SELECTION_SETTINGS,
    SETTINGS,
)
from fedcare_core.algorithms import get_algorithm
from fedcare_core.config import RANGES, flagged_settings
from fedcare_core.config.variants import (
    ABLATIONS,
    ALL_LABELS,
    CANDIDATES,
    FAIRNESS_STRENGTHS,
    PREFERENCE_CHOICES,
    PREFERENCES,
)
from fedcare_core.errors import ConfigError

#: The fewest clients of a federation (``data.clients``' lower bound).
MIN_CLIENTS = int(RANGES["data"]["clients"].low or 2)
#: What ``fedcare experiment programme`` (and the ``fedcare-programme`` flow) runs.
PROGRAMME_NAME = "programme"

Check = Callable[[Any, Sequence[str]], "str | None"]


@dataclass(frozen=True)
class GridOption:
    """One option of a grid, for every entry that offers it.

    Parameters
    ----------
    name
        The option's name in a :class:`~fedcare.app.grid.GridRequest` and as a flow parameter.
    annotation
        The flow parameter's type (Prefect validates a run's parameters against it).
    default
        Its value when not given.
    help
        One sentence for ``--help`` and the flow's parameter form.
    experiments
        The experiments whose grid it shapes (None: every one); an experiment's flow offers
        only those.
    item
        For a list option: one item's type on the command line (``--counts 3,5,10``).
    check
        ``check(value, experiments)`` → what is wrong with a given value, or None.
    flag
        The command-line flag (None: ``--<name>`` with ``_`` as ``-``; ``""``: none).
    parameter
        The flow parameter's name (None: ``name``; ``""``: not a flow parameter).
    choices
        The names it accepts (argparse and the flow's check).
    by_sites
        Decided by the sites and their schema: refused with ``sites`` (a grid over sites).
    whole
        Offered to the programme's flow only if every experiment of the programme uses it.
    metavar
        The flag's value in ``--help`` (None: argparse's).
    """

    name: str
    annotation: Any
    default: Any
    help: str
    experiments: tuple[str, ...] | None = None
    item: Callable[[str], Any] | None = None
    check: Check | None = None
    flag: str | None = None
    parameter: str | None = None
    choices: tuple[str, ...] | None = None
    by_sites: bool = False
    whole: bool = False
    metavar: str | None = None

    @property
    def cli_flag(self) -> str:
        """The command-line flag (``""``: none)."""
        return f"--{self.name.replace('_', '-')}" if self.flag is None else self.flag

    @property
    def flow_parameter(self) -> str:
        """The flow parameter's name (``""``: none)."""
        return self.name if self.parameter is None else self.parameter

    def used_by(self, experiments: Sequence[str]) -> bool:
        """Whether the option shapes any (:attr:`whole`: every one) of ``experiments``' grids."""
        if self.experiments is None:
            return True
        used = [e in self.experiments for e in experiments]
        return all(used) if self.whole else any(used)


def _join(values: Sequence[object]) -> str:
    return ", ".join("inf" if v is None else str(v) for v in values)


def _at_least(low: int, what: str = "") -> Check:
    def check(value: Any, _: Sequence[str]) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, got {value!r}"
        return None if value >= low else f"must be ≥ {low}{what}, got {value}"

    return check


def _each(problem: Callable[[Any], str | None]) -> Check:
    """A list option's check: not empty, no repeat, each item through ``problem``."""

    def check(values: Any, _: Sequence[str]) -> str | None:
        if not isinstance(values, list | tuple) or not values:
            return f"expected a non-empty list, got {values!r}"
        repeated = sorted({str(v) for i, v in enumerate(values) if v in values[:i]})
        if repeated:
            return f"{', '.join(repeated)} given twice in {list(values)}"
        for value in values:
            text = problem(value)
            if text is not None:
                return text
        return None

    return check


def _count(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= MIN_CLIENTS
    return None if ok else f"expected client counts ≥ {MIN_CLIENTS} (a federation), got {value!r}"


def _ratio(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1
    return None if ok else f"expected numbers in (0, 1), got {value!r}"  # NaN fails too


def _budget(value: Any) -> str | None:
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
    return None if ok else f"expected positive ε values or inf (no DP), got {value!r}"


def _algorithm(value: Any) -> str | None:
    try:
        get_algorithm(value)
    except ConfigError as exc:
        return str(exc)
    return None


def _check_algorithms(values: Any, experiments: Sequence[str]) -> str | None:
    # "all-labels" is the recommended experiment's label-only bound, not an algorithm.
    only_recommended = list(experiments) == ["recommended"]
    return _each(lambda v: None if only_recommended and v == ALL_LABELS else _algorithm(v))(
        values, experiments
    )


def _known(names: Sequence[str], what: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in names else f"unknown {what} {v!r}; choose from {list(names)}"


def _check_variants(values: Any, experiments: Sequence[str]) -> str | None:
    by_experiment = {
        "selection": tuple(CANDIDATES),
        "preferences": PREFERENCE_CHOICES,
    }
    known = by_experiment.get(",".join(experiments), tuple(ABLATIONS))
    return _each(_known(known, "variant"))(values, experiments)


def _check_dataset(value: Any, _: Sequence[str]) -> str | None:
    from fedcare_core.data.registry import get_dataset

    try:
        get_dataset(value)
    except ConfigError as exc:
        return str(exc)
    return None


def _check_address(value: Any, _: Sequence[str]) -> str | None:
    from fedcare.grid.cluster import check_address

    try:
        check_address(value, "it")
    except ConfigError as exc:
        return str(exc).removeprefix("it ")
    return None


def _float_or_inf(text: str) -> float | None:
    value = float(text)
    return None if math.isinf(value) and value > 0 else value


def _setting_option(
    name: str, annotation: Any, default: Any = None, by_sites: bool = False
) -> GridOption:
    """An option that sets configuration setting ``name`` in every run: its help and choices."""
    ref = flagged_settings()[name]
    help = f"{ref.spec.help}; every run's (default {ref.default_text()})"
    choices = ref.spec.choices or None
    return GridOption(name, annotation, default, help, choices=choices, by_sites=by_sites)


#: The experiments a grid over sites runs: what they vary (methods, ablations) the sites leave
#: open. The others vary what the sites decide, given as why they refuse ``sites``.
SITES_EXPERIMENTS = ("comparison", "ablation")
_NO_SITES = {
    "clients": "sweeps the client count K, which over sites is the number of sites",
    "disparity": "sweeps ρ, which the federation schema fixes",
    "privacy": "sweeps the client count K, which over sites is the number of sites",
    "selection": "compares candidates at K = 30 clients drawn from one dataset",
    "recommended": "compares federation settings and client counts drawn from one dataset",
    "preferences": "gives every client drawn from one dataset the same preference",
}


def _file(value: Any) -> str | None:
    ok = isinstance(value, str) and value != "" and "\0" not in value
    return None if ok else f"expected a file path, got {value!r}"


def _check_sites(value: Any, experiments: Sequence[str]) -> str | None:
    """A file, for an experiment that runs over sites (``programme``: each of its own must)."""
    problem = _file(value)
    if problem is not None:
        return problem
    refused = [e for e in experiments if e not in SITES_EXPERIMENTS]
    if not refused:
        return None
    which = "the programme's " if len(experiments) > 1 else "the "
    return (
        f"a grid over sites runs {' or '.join(SITES_EXPERIMENTS)}; {which}{refused[0]} "
        f"experiment {_NO_SITES[refused[0]]}"
    )


_K_EXPERIMENTS = ("comparison", "disparity", "ablation", "selection", "preferences")

GRID_OPTIONS: tuple[GridOption, ...] = (
    GridOption("dataset", str, "diabetes130", "the dataset", check=_check_dataset, by_sites=True),
    GridOption(
        "data_dir",
        str | None,
        None,
        "dataset folder or file (default $FEDCARE_DATA_DIR; the weekly re-training schedule "
        "passes FEDCARE_RETRAIN_DATA_DIR)",
        by_sites=True,
    ),
    GridOption(
        "sites",
        str | None,
        None,
        "run the grid over these sites instead of a dataset split into clients: a sites list "
        "(SITES.json, as `fedcare run --sites` takes; each site's own file, private features "
        "and column map), prepared once per process; the sites and their schema decide K, ρ, "
        "the dataset and the features; needs the schema",
        experiments=SITES_EXPERIMENTS,
        check=_check_sites,
        whole=True,
        metavar="SITES.json",
    ),
    GridOption(
        "schema",
        str | None,
        None,
        "the sites' federation schema (federation.json, `fedcare federation init`); with the "
        "sites only",
        experiments=SITES_EXPERIMENTS,
        check=_check_sites,
        parameter="federation_schema",  # Prefect reserves `schema`
        whole=True,
        metavar="federation.json",
    ),
    GridOption("seeds", int, 10, "seeds 0..n-1 of each cell", check=_at_least(1)),
    GridOption(
        "clients",
        int | None,
        None,
        "K, the clients of every cell (default 10; selection and preferences: 30)",
        experiments=_K_EXPERIMENTS,
        check=_at_least(MIN_CLIENTS, " (a federation)"),
        by_sites=True,
    ),
    GridOption(
        "counts",
        list[int] | None,
        None,
        f"the client counts K swept (default {_join(CLIENT_COUNTS)}; privacy: "
        f"{_join(PRIVACY_COUNTS)}; recommended: {_join(RECOMMENDED_COUNTS)})",
        experiments=("clients", "privacy", "recommended"),
        item=int,
        check=_each(_count),
    ),
    GridOption(
        "budgets",
        list[float | None] | None,
        None,
        f"client-level ε values (δ = 1e-5), inf (null in a flow) for a run without DP "
        f"(default {_join(PRIVACY_BUDGETS)})",
        experiments=("privacy",),
        item=_float_or_inf,
        check=_each(_budget),
    ),
    GridOption(
        "ratios",
        list[float] | None,
        None,
        f"the disparity ratios ρ swept (default {_join(DISPARITY_RATIOS)})",
        experiments=("disparity",),
        item=float,
        check=_each(_ratio),
    ),
    GridOption(
        "algorithms",
        list[str] | None,
        None,
        "the methods compared (default: the experiment's list)",
        experiments=("comparison", "clients", "privacy", "recommended"),
        item=str,
        check=_check_algorithms,
    ),
    GridOption(
        "variants",
        list[str] | None,
        None,
        f"the ablations to run (default all: {_join(tuple(ABLATIONS))}); selection: the "
        f"candidates (default all: {_join(tuple(CANDIDATES))}); preferences: the clinical "
        f"preferences beside the plain preset (default all: {_join(tuple(PREFERENCES))}; "
        f"also {_join(tuple(FAIRNESS_STRENGTHS))}: the fairness ones at γ 0.25 and 4)",
        experiments=("ablation", "selection", "preferences"),
        item=str,
        check=_check_variants,
    ),
    GridOption(
        "settings",
        list[str] | None,
        None,
        f"federation settings (from {_join(tuple(SETTINGS))}; default "
        f"{_join(RECOMMENDED_SETTINGS)}; selection and preferences: "
        f"{_join(SELECTION_SETTINGS)})",
        experiments=("selection", "recommended", "preferences"),
        item=str,
        check=_each(_known(tuple(SETTINGS), "setting")),
    ),
    _setting_option("features", str, "paper", by_sites=True),
    _setting_option("rounds", int | None),
    GridOption(
        "max_patients",
        int | None,
        None,
        "subsample the cohort to N patients (quick trials)",
        by_sites=True,
    ),
    _setting_option("unseen_categories", str | None, by_sites=True),
    GridOption(
        "stage2_epochs",
        int | None,
        None,
        "epoch budget of Stage 2 and of the Local / Centralised bounds (default 40)",
        by_sites=True,
    ),
    GridOption(
        "workers",
        int | None,
        None,
        "worker processes of the local Dask cluster (default: one per core)",
        check=_at_least(1),
    ),
    GridOption(
        "dask_address",
        str | None,
        None,
        "run on an existing Dask cluster (its scheduler, tcp://HOST:PORT) instead of a local "
        "one on loopback; the output folder must then be one every worker reaches at the same "
        "path",
        check=_check_address,
    ),
    GridOption(
        "out",
        str | None,
        None,
        "output folder: the tables and figures of each experiment in a sub-folder, the runs' "
        "documents under cells/ (default .experiments/<dataset>)",
        parameter="out_dir",
    ),
    GridOption(
        "tracking_uri",
        str | None,
        None,
        "MLflow tracking URI (default $MLFLOW_TRACKING_URI, the stack's MLflow server, else the "
        "project's mlflow/mlflow.db)",
    ),
    GridOption(
        "verify_checksum",
        bool,
        True,
        "check the Diabetes 130 file's published SHA-256 (off to train on new exports)",
        flag="--no-verify",
        by_sites=True,
    ),
)

OPTIONS_BY_NAME = {o.name: o for o in GRID_OPTIONS}


def experiments_of(name: str) -> tuple[str, ...]:
    """The experiments ``name`` runs: itself, or the programme's.

    Raises
    ------
    ConfigError
        An unknown name.
    """
    if name == PROGRAMME_NAME:
        return PROGRAMME
    if name not in EXPERIMENTS:
        raise ConfigError(
            f"unknown experiment {name!r}; choose from {[*EXPERIMENTS, PROGRAMME_NAME]}"
        )
    return (name,)


def options_of(name: str) -> list[GridOption]:
    """The options experiment (or programme) ``name``'s flow offers, in declaration order."""
    experiments = experiments_of(name)
    return [o for o in GRID_OPTIONS if o.flow_parameter and o.used_by(experiments)]
