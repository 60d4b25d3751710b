"""The experiments of paper §V as grids of cells: one cell is one run (algorithm, seed, K, ρ).

A cell's :attr:`Cell.key` names its result file; cells that mean the same run share a key, so
the K = 10 cells of the client sweep are the comparison's and a programme runs each once.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from fedcare_core.config import DataConfig, ExperimentConfig
from fedcare_core.config.quick import quick_seeds, quick_sized
from fedcare_core.config.variants import (
    ABLATIONS,
    ALL_LABELS,
    CANDIDATES,
    PREFERENCE_CHOICES,
    PREFERENCES,
    RECOMMENDED_CANDIDATE,
    preference_variant,
    privacy_variant,
    recommended_candidate,
    variant_overrides,
)
from fedcare_core.data.registry import get_dataset
from fedcare_core.errors import ConfigError

#: The methods each experiment runs by default, in its tables' order (``paper_methods.toml``).
_METHODS: dict[str, Any] = tomllib.loads(
    resources.files(__package__).joinpath("paper_methods.toml").read_text(encoding="utf-8")
)
#: Every method of paper §V-B, the two bounds included.
COMPARISON_ALGORITHMS = tuple(_METHODS["comparison"])
#: The client sweep's default methods.
CLIENTS_ALGORITHMS = tuple(_METHODS["clients"])
#: The disparity sweep's and the ablations' methods.
_DISPARITY_ALGORITHMS = tuple(_METHODS["disparity"])
_ABLATION_ALGORITHMS = tuple(_METHODS["ablation"])
#: The method the selection and recommended grids tune, and the pooled reference's.
_TUNED: str = _METHODS["tuned"]
POOLED_ALGORITHM: str = _METHODS["pooled"]
#: Client counts of paper §V-C (Fig. 5).
CLIENT_COUNTS = (3, 5, 10, 20, 30)
#: Disparity ratios of paper §V-D (Fig. 6–7).
DISPARITY_RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5)
#: K of the selection grid: where federation matters (issue 18).
_SELECTION_CLIENTS = 30
#: Patients kept per client in the ``small`` (small hospitals) setting.
SMALL_HOSPITAL_PATIENTS = 300
#: Federation settings of the ``recommended`` experiment: name → data fields it sets.
SETTINGS: dict[str, dict[str, Any]] = {
    "iid": {},
    "dirichlet": {"client_split": "dirichlet"},
    "small": {"max_patients_per_client": SMALL_HOSPITAL_PATIENTS},
}
#: The ``recommended`` experiment's defaults: its settings, K values and comparators (the
#: paper's FedCARE is the ``paper`` variant's ``fedcare``).
RECOMMENDED_SETTINGS = ("iid", "small")
#: Federation settings of the ``selection`` experiment (the preset's choice was made in ``iid``).
SELECTION_SETTINGS = ("iid",)
RECOMMENDED_COUNTS = (30,)
RECOMMENDED_BASELINES = tuple(_METHODS["recommended"])
#: Privacy budgets ε of the privacy–utility experiment (None: no DP, the comparison's runs).
PRIVACY_BUDGETS: tuple[float | None, ...] = (1.0, 3.0, 8.0, None)
#: Its client counts and methods (FedCARE-B shares FedCARE's Stage 1, so costs little more).
PRIVACY_COUNTS = (10, 30)
_PRIVACY_ALGORITHMS = tuple(_METHODS["privacy"])
EXPERIMENTS = (
    "comparison",
    "clients",
    "disparity",
    "ablation",
    "privacy",
    "selection",
    "recommended",
    "preferences",
)


@dataclass(frozen=True)
class Cell:
    """One run of an experiment grid.

    Parameters
    ----------
    algorithm
        A name of :data:`fedcare_core.config.ALGORITHMS`.
    seed
        Experiment seed.
    clients
        K.
    rho
        Disparity ratio ρ, or None for the dataset's default partition.
    variant
        Ablation name (:data:`ABLATIONS`); ``"paper"`` is the SPEC's configuration.
    setting
        Federation setting (:data:`SETTINGS`); ``"iid"`` is the base's split.
    """

    algorithm: str
    seed: int
    clients: int
    rho: float | None = None
    variant: str = "paper"
    setting: str = "iid"

    @property
    def key(self) -> str:
        """File-name-safe identity of the run (no experiment name: equal runs share it)."""
        rho = "default" if self.rho is None else f"{self.rho:g}"
        setting = "" if self.setting == "iid" else f"__{self.setting}"
        return (
            f"{self.variant}__{self.algorithm}__K{self.clients}__rho{rho}{setting}__seed{self.seed}"
        )

    def config(self, base: ExperimentConfig) -> ExperimentConfig:
        """``base`` with this cell's algorithm, seed, K, ρ, variant and setting (validated).

        Capped to the quick size under ``FEDCARE_QUICK``
        (:func:`~fedcare_core.config.quick.quick_sized`)
        here, where every executor of a grid gets its cells' configurations, so the cohort a job
        loads is the capped one too.
        """
        sections: dict[str, Any] = variant_overrides(self.variant)
        if "dp_epsilon" in sections.get("stage1", {}):
            # Research runs: seeded noise, a stream of its own per seed, so a cell is
            # reproducible and the seeds' noise independent.
            sections["stage1"]["dp_noise_seed"] = self.seed
        if self.variant == ALL_LABELS:
            if base.data.features != "paper":
                raise ConfigError(
                    f"{ALL_LABELS}: every client would hold every objective's features, so an "
                    "objective would see features past its prediction time; it is defined for "
                    "--features paper only"
                )
            sections["data"]["objectives_per_client"] = get_dataset(base.data.dataset).objectives
        if self.setting not in SETTINGS:
            raise ConfigError(f"unknown setting {self.setting!r}; choose from {list(SETTINGS)}")
        data = sections.setdefault("data", {})
        data.update(SETTINGS[self.setting], clients=self.clients, rho=self.rho)
        config = replace(base, algorithm=self.algorithm, seed=self.seed).with_overrides(**sections)
        return quick_sized(config)

    def stage1_key(self) -> tuple[Any, ...]:
        """Cells with equal keys share Stage 1 (FedCARE and FedCARE-B of the same setting)."""
        from fedcare_core.algorithms import get_algorithm

        # Every algorithm whose rounds are Algorithm 1's Stage 1 shares them.
        rounds = "stage1" if get_algorithm(self.algorithm).runs_stage1 else self.algorithm
        return (self.variant, rounds, self.clients, self.rho, self.setting, self.seed)


def _seeds(seeds: int | Sequence[int]) -> list[int]:
    out = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not out:
        raise ConfigError("at least one seed is needed")
    return out


def comparison(
    seeds: int | Sequence[int],
    clients: int = 10,
    algorithms: Sequence[str] = COMPARISON_ALGORITHMS,
) -> list[Cell]:
    """Paper §V-B (Tables III–V, Fig. 3–4): every algorithm at one K, over seeds."""
    return [Cell(a, s, clients) for s in _seeds(seeds) for a in algorithms]


def clients_sweep(
    seeds: int | Sequence[int],
    counts: Sequence[int] = CLIENT_COUNTS,
    algorithms: Sequence[str] = CLIENTS_ALGORITHMS,
) -> list[Cell]:
    """Paper §V-C (Fig. 5): the algorithms at each K, over seeds."""
    return [Cell(a, s, k) for k in counts for s in _seeds(seeds) for a in algorithms]


def disparity_sweep(
    seeds: int | Sequence[int],
    ratios: Sequence[float] = DISPARITY_RATIOS,
    clients: int = 10,
) -> list[Cell]:
    """Paper §V-D (Fig. 6–7): FedCARE against FedCARE-B at each ρ, over seeds."""
    return [
        Cell(a, s, clients, rho)
        for r in ratios
        for s in _seeds(seeds)
        for a in _DISPARITY_ALGORITHMS
        for rho in (float(r),)
    ]


def ablation(
    seeds: int | Sequence[int],
    variants: Sequence[str] = tuple(ABLATIONS),
    clients: int = 10,
) -> list[Cell]:
    """λ* solver, gradient normalisation and QP scope (SPEC §1), FedCARE and FedCARE-B."""
    unknown = sorted(set(variants) - set(ABLATIONS))
    if unknown:
        raise ConfigError(f"unknown ablation(s) {unknown}; choose from {sorted(ABLATIONS)}")
    return [
        Cell(a, s, clients, None, v)
        for v in variants
        for s in _seeds(seeds)
        for a in _ABLATION_ALGORITHMS
    ]


def selection(
    seeds: int | Sequence[int],
    variants: Sequence[str] = tuple(CANDIDATES),
    clients: int = _SELECTION_CLIENTS,
    settings: Sequence[str] = SELECTION_SETTINGS,
) -> list[Cell]:
    """FedCARE as the paper runs it and each candidate configuration, for choosing on validation.

    One grid per federation setting of ``settings`` (:data:`SETTINGS`; the choice of
    ``--preset recommended`` was made in ``iid``).
    """
    unknown = sorted(set(variants) - set(CANDIDATES))
    if unknown:
        raise ConfigError(f"unknown candidate(s) {unknown}; choose from {sorted(CANDIDATES)}")
    _check_settings(settings)
    return [
        Cell(_TUNED, s, clients, None, v, setting)
        for setting in settings
        for v in ("paper", *variants)
        for s in _seeds(seeds)
    ]


def _check_settings(settings: Sequence[str]) -> None:
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise ConfigError(f"unknown setting(s) {unknown}; choose from {list(SETTINGS)}")


def _recommended_grid(
    seeds: int | Sequence[int],
    settings: Sequence[str] = RECOMMENDED_SETTINGS,
    counts: Sequence[int] = RECOMMENDED_COUNTS,
    baselines: Sequence[str] = RECOMMENDED_BASELINES,
    candidate: str = RECOMMENDED_CANDIDATE,
) -> list[Cell]:
    """The recommended preset against each method, paired by seed, in each setting and K.

    Every seed of a setting runs FedCARE with ``candidate`` (the preset of the grid's feature
    set: :func:`~fedcare_core.config.variants.recommended_candidate`) and each method of
    ``baselines`` (``fedcare`` there is the paper's FedCARE); ``centralised`` is the
    federation-information bound and ``all-labels`` the whole-dataset reference
    (:data:`ALL_LABELS`).
    """
    _check_settings(settings)
    cells = []
    for setting in settings:
        for k in counts:
            for s in _seeds(seeds):
                cells.append(Cell(_TUNED, s, k, None, candidate, setting))
                for a in baselines:
                    if a == ALL_LABELS:
                        cells.append(Cell(POOLED_ALGORITHM, s, k, None, ALL_LABELS, setting))
                    else:
                        cells.append(Cell(a, s, k, None, "paper", setting))
    return cells


def privacy_sweep(
    seeds: int | Sequence[int],
    budgets: Sequence[float | None] = PRIVACY_BUDGETS,
    counts: Sequence[int] = PRIVACY_COUNTS,
    algorithms: Sequence[str] = _PRIVACY_ALGORITHMS,
) -> list[Cell]:
    """The privacy–utility trade-off: the methods at each ε (None: no DP) and K, over seeds."""
    return [
        Cell(a, s, k, None, privacy_variant(b))
        for k in counts
        for b in budgets
        for s in _seeds(seeds)
        for a in algorithms
    ]


def unique(cells: Iterable[Cell]) -> list[Cell]:
    """The cells once each, in first-seen order."""
    seen: dict[str, Cell] = {}
    for c in cells:
        seen.setdefault(c.key, c)
    return list(seen.values())


def preferences_grid(
    seeds: int | Sequence[int],
    variants: Sequence[str] = tuple(PREFERENCES),
    clients: int = RECOMMENDED_COUNTS[0],
    settings: Sequence[str] = ("iid",),
    features: str | None = None,
) -> list[Cell]:
    """The feature set's preset with each clinical preference (:data:`PREFERENCES`) and without.

    Every seed runs the plain preset (the candidate the selection chose for ``features``:
    :func:`~fedcare_core.config.variants.recommended_candidate`) and the preset with each
    preference in ``variants``, so each preference's effect is paired by seed (same clients,
    splits and objectives).
    """
    unknown = sorted(set(variants) - set(PREFERENCE_CHOICES))
    if unknown:
        raise ConfigError(
            f"unknown preference(s) {unknown}; choose from {list(PREFERENCE_CHOICES)}"
        )
    _check_settings(settings)
    named = [recommended_candidate(features), *(preference_variant(v, features) for v in variants)]
    return [
        Cell(_TUNED, s, clients, None, v, setting)
        for setting in settings
        for s in _seeds(seeds)
        for v in named
    ]


#: The programme of issue 5 / docs/RESULTS.md: the comparison, the client sweep and the
#: disparity sweep (the ablations are run on their own).
PROGRAMME = ("comparison", "clients", "disparity")


def experiment_cells(
    experiment: str,
    seeds: int | Sequence[int],
    *,
    clients: int | None = None,
    counts: Sequence[int] | None = None,
    ratios: Sequence[float] = DISPARITY_RATIOS,
    algorithms: Sequence[str] | None = None,
    variants: Sequence[str] | None = None,
    budgets: Sequence[float | None] = PRIVACY_BUDGETS,
    settings: Sequence[str] | None = None,
    features: str | None = None,
) -> list[Cell]:
    """The grid of one experiment.

    Parameters
    ----------
    experiment
        ``comparison``, ``clients``, ``disparity``, ``ablation``, ``privacy``,
        ``selection``, ``recommended`` or ``preferences``.
    seeds
        A count (seeds 0..n−1) or the seeds themselves.
    clients
        K of the comparison, disparity and ablation grids (None: 10) and of the selection and
        the preferences (None: 30).
    counts, ratios
        The client sweep's (or the privacy grid's) K values (None: the experiment's
        defaults) and the disparity sweep's ρ values.
    algorithms
        The methods of the comparison, client sweep or privacy grid (None: their defaults).
    variants
        The ablations (the selection's candidates, the preferences) to run (None: all).
    budgets
        The privacy grid's ε values (None in it: no DP).
    settings
        The federation settings (:data:`SETTINGS`) of the recommended experiment (None:
        :data:`RECOMMENDED_SETTINGS`), of the selection (None: :data:`SELECTION_SETTINGS`) and
        of the preferences (None: ``iid``).
    features
        The grid's feature set: the recommended and the preferences experiments run the preset
        chosen for it (None: the paper's partition).

    Returns
    -------
    list[Cell]
        The experiment's cells.
    """
    if isinstance(seeds, int):
        seeds = quick_seeds(seeds)  # FEDCARE_QUICK: one seed
    if experiment == "recommended":
        return _recommended_grid(
            seeds,
            settings or RECOMMENDED_SETTINGS,
            counts or RECOMMENDED_COUNTS,
            algorithms or RECOMMENDED_BASELINES,
            recommended_candidate(features),
        )
    if experiment == "preferences":
        k = RECOMMENDED_COUNTS[0] if clients is None else clients
        chosen = tuple(PREFERENCES) if variants is None else variants
        return preferences_grid(seeds, chosen, k, settings or ("iid",), features)
    if experiment == "selection":
        k = _SELECTION_CLIENTS if clients is None else clients
        candidates = tuple(CANDIDATES) if variants is None else variants
        return selection(seeds, candidates, k, settings or SELECTION_SETTINGS)
    clients = 10 if clients is None else clients
    if experiment == "comparison":
        return comparison(seeds, clients, algorithms or COMPARISON_ALGORITHMS)
    if experiment == "clients":
        return clients_sweep(seeds, counts or CLIENT_COUNTS, algorithms or CLIENTS_ALGORITHMS)
    if experiment == "privacy":
        return privacy_sweep(
            seeds, budgets, counts or PRIVACY_COUNTS, algorithms or _PRIVACY_ALGORITHMS
        )
    if experiment == "disparity":
        return disparity_sweep(seeds, ratios, clients)
    if experiment == "ablation":
        return ablation(seeds, tuple(ABLATIONS) if variants is None else variants, clients)
    raise ConfigError(f"unknown experiment {experiment!r}; choose from {list(EXPERIMENTS)}")


def check_grid(cells: Sequence[Cell], base: ExperimentConfig) -> list[ExperimentConfig]:
    """Every cell's configuration built and validated, before the first cell runs.

    Parameters
    ----------
    cells
        The grid (one experiment's, or a programme's).
    base
        The configuration every cell starts from.

    Returns
    -------
    list[ExperimentConfig]
        The cells' configurations, in the cells' order.

    Raises
    ------
    ConfigError
        For the first cell whose configuration is invalid (an unknown algorithm, K < 1, a ρ
        outside (0, 1), ...), naming the cell and the parameter.
    """
    from fedcare_core.algorithms import validate_config

    if not cells:
        raise ConfigError("the grid has no cells")
    configs = []
    for cell in cells:
        try:
            configs.append(validate_config(cell.config(base)))
        except ConfigError as exc:
            raise ConfigError(f"grid cell {cell.key}: {exc}") from None
    return configs


def grid_base(
    dataset: str,
    *,
    rounds: int | None = None,
    max_patients: int | None = None,
    stage2_epochs: int | None = None,
) -> ExperimentConfig:
    """The configuration every cell of a grid starts from: the SPEC's defaults on ``dataset``.

    Parameters
    ----------
    dataset
        ``diabetes130`` or ``mimic3``.
    rounds
        Federated rounds T (None: 100).
    max_patients
        Subsample the cohort (quick trials).
    stage2_epochs
        Epoch budget of Stage 2 and of the Local / Centralised bounds (None: 40).
    """
    sections: dict[str, dict[str, Any]] = {}
    if rounds is not None:
        sections["stage1"] = {"rounds": rounds}
    if max_patients is not None:
        sections["data"] = {"max_patients": max_patients}
    if stage2_epochs is not None:
        sections["stage2"] = {"epochs": stage2_epochs}
        sections["baselines"] = {"bound_epochs": stage2_epochs}
    return ExperimentConfig(data=DataConfig(dataset=dataset)).with_overrides(**sections)
