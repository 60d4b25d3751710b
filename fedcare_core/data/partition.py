"""Declarative feature partitions (paper Definition 3, §V-D) and the disparity ratio ρ."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fedcare_core.errors import ConfigError


@dataclass(frozen=True)
class FeaturePartition:
    """Which features every client shares, and each objective's pool of private features.

    Parameters
    ----------
    common
        Features every client holds (the backbone's input ``x_c``), in order.
    private
        Objective name → private features held by clients pursuing that objective. A client with
        several objectives holds the union of their pools.
    private_only
        Features that can never be shared: categorical features without a declared vocabulary,
        which each client encodes with its own most frequent values. :func:`with_disparity`
        never moves them into the common set.
    """

    common: tuple[str, ...]
    private: Mapping[str, tuple[str, ...]]
    private_only: tuple[str, ...] = ()

    def private_for(self, objectives: tuple[str, ...] | list[str]) -> tuple[str, ...]:
        """Private features of a client pursuing ``objectives`` (union of pools, stable order)."""
        out: list[str] = []
        for name in objectives:
            for f in self.private.get(name, ()):
                if f not in out and f not in self.common:
                    out.append(f)
        return tuple(out)

    @property
    def all_features(self) -> tuple[str, ...]:
        """Every feature the partition uses: common first, then each pool in order."""
        out = list(self.common)
        for pool in self.private.values():
            out.extend(f for f in pool if f not in out)
        return tuple(out)

    def disparity_ratio(self) -> float:
        """ρ = d_u / (d_c + d_u), with d_u the largest pool."""
        d_u = max((len(p) for p in self.private.values()), default=0)
        total = len(self.common) + d_u
        return d_u / total if total else 0.0


#: ρ values the paper studies; any value in (0, 1) is accepted.
_PAPER_RHO_GRID = (0.1, 0.2, 0.3, 0.4, 0.5)


def with_disparity(partition: FeaturePartition, rho: float, seed: int = 0) -> FeaturePartition:
    """Move features between the common set and the private pools to reach disparity ratio ρ.

    The reference size is ``n = d_c + max_s |pool_s|`` (29 for Diabetes 130). The target private
    width is ``d_u* = round(ρ n)``. If ``d_u*`` exceeds the largest pool, ``d_u* - max|pool|``
    common features, chosen by a seeded permutation (no feature is favoured by hand), leave the
    common set and join *every* pool. If it is smaller, each pool gives up features (again a
    seeded choice, skipping the partition's ``private_only`` features) to the common set. The
    returned partition's :meth:`disparity_ratio` equals ``d_u* / (d_c' + d_u*)``; when features
    move into the common set, ``d_c'`` grows, which is the honest consequence of declaring a
    feature shared.

    Parameters
    ----------
    partition
        The dataset's default partition.
    rho
        Target disparity ratio, in (0, 1).
    seed
        Seed of the permutation that picks which features move.

    Returns
    -------
    FeaturePartition
        A new partition; the input is unchanged.
    """
    if not 0.0 < rho < 1.0:
        raise ConfigError(f"rho must lie in (0, 1), got {rho}")
    rng = np.random.default_rng([seed, 7919])
    d_u_max = max(len(p) for p in partition.private.values())
    n_ref = len(partition.common) + d_u_max
    target = max(1, min(n_ref - 1, round(rho * n_ref)))
    common = list(partition.common)
    private = {k: list(v) for k, v in partition.private.items()}
    if target > d_u_max:
        n_move = target - d_u_max
        if n_move >= len(common):
            raise ConfigError(f"rho={rho} would leave no common feature")
        moved_idx = sorted(rng.permutation(len(common))[:n_move].tolist())
        moved = [common[i] for i in moved_idx]
        common = [f for f in common if f not in moved]
        for pool in private.values():
            pool.extend(moved)
    elif target < d_u_max:
        for name in sorted(private):
            pool = private[name]
            n_move = max(0, len(pool) - target)
            order = [int(i) for i in rng.permutation(len(pool))]
            movable = [i for i in order if pool[i] not in partition.private_only]
            if n_move > len(movable):
                raise ConfigError(
                    f"rho={rho} would move {n_move} of pool {name!r}'s features into the common "
                    f"set, but only {len(movable)} may be shared"
                )
            idx = sorted(movable[:n_move])
            moved = [pool[i] for i in idx]
            private[name] = [f for f in pool if f not in moved]
            common.extend(f for f in moved if f not in common)
    return FeaturePartition(
        common=tuple(common),
        private={k: tuple(v) for k, v in private.items()},
        private_only=partition.private_only,
    )


#: When a feature's value is known, earliest first: at admission, by the end of the stay
#: (totals, in-stay results and medication changes, codes assigned during it), at discharge.
AVAILABILITY = ("admission", "stay", "discharge")
_ORDER = {t: i for i, t in enumerate(AVAILABILITY)}


def at_prediction_time(
    partition: FeaturePartition,
    available: Mapping[str, str],
    prediction_time: Mapping[str, str],
    *,
    moves: Mapping[str, tuple[str, ...]] | None = None,
) -> FeaturePartition:
    """The partition with every objective seeing only what is known when it is predicted.

    The rule, applied to ``partition`` (e.g. the paper's):

    * a common feature known by the earliest objective's prediction time stays common;
    * a later common feature leaves the common set (the backbone feeds every head) and joins
      the pool of each objective predicted late enough to see it (every client held it);
    * a pool feature stays in its pool if known by that objective's prediction time, and is
      dropped otherwise (no other objective's clients held it);
    * ``moves`` (objective → features) adds features to a pool by declaration, e.g. a feature
      the paper placed in another pool that this objective may legitimately see.

    Parameters
    ----------
    partition
        The partition to restrict.
    available
        Feature → its time in :data:`AVAILABILITY`; every feature of ``partition`` and
        ``moves`` must be listed.
    prediction_time
        Objective → the time in :data:`AVAILABILITY` at which it is predicted; every pool of
        ``partition`` must be listed.
    moves
        Features declared into an objective's pool (each must be known by its prediction time).

    Returns
    -------
    FeaturePartition
        A new partition satisfying :func:`check_prediction_times`.

    Raises
    ------
    ConfigError
        If a feature or objective has no time, a time is unknown, or a declared move would let
        an objective see a feature known only after its prediction time.
    """
    moves = dict(moves or {})
    features = set(partition.all_features) | {f for fs in moves.values() for f in fs}
    _check_times(available, features, "feature")
    _check_times(prediction_time, set(partition.private) | set(moves), "objective")

    def known(feature: str, objective: str) -> bool:
        return _ORDER[available[feature]] <= _ORDER[prediction_time[objective]]

    earliest = min((prediction_time[s] for s in partition.private), key=_ORDER.__getitem__)
    common = tuple(f for f in partition.common if _ORDER[available[f]] <= _ORDER[earliest])
    late = [f for f in partition.common if f not in common]
    private: dict[str, tuple[str, ...]] = {}
    for name, pool in partition.private.items():
        kept = [f for f in pool if known(f, name)]
        kept += [f for f in late if known(f, name) and f not in kept]
        kept += [f for f in moves.get(name, ()) if f not in kept]
        private[name] = tuple(kept)
    result = FeaturePartition(common, private, partition.private_only)
    check_prediction_times(result, available, prediction_time)
    return result


def check_prediction_times(
    partition: FeaturePartition, available: Mapping[str, str], prediction_time: Mapping[str, str]
) -> None:
    """Refuse a partition that shows an objective a feature known after its prediction time.

    Raises
    ------
    ConfigError
        Naming the objective, the features and their times.
    """
    for name in partition.private:
        seen = partition.common + partition.private_for([name])
        late = [f for f in seen if _ORDER[available[f]] > _ORDER[prediction_time[name]]]
        if late:
            raise ConfigError(
                f"objective {name!r} is predicted at {prediction_time[name]} but would see "
                + ", ".join(f"{f} (known at {available[f]})" for f in late)
            )


def _check_times(times: Mapping[str, str], names: set[str], what: str) -> None:
    missing = sorted(names - set(times))
    if missing:
        raise ConfigError(f"no time of availability declared for {what}(s) {', '.join(missing)}")
    unknown = sorted(f"{n}={t!r}" for n, t in times.items() if n in names and t not in _ORDER)
    if unknown:
        raise ConfigError(
            f"unknown time(s) {', '.join(unknown)}; expected one of {', '.join(AVAILABILITY)}"
        )
