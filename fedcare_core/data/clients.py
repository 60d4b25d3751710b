"""Clients, their objectives, patient-level splits and per-client encoded arrays (SPEC §3).

Every patient's rows go to exactly one client, and within a client to exactly one of
train/validation/test. Encoders are fitted per client on that client's training rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from fedcare_core.config import DataConfig
from fedcare_core.config.preferences import Preference
from fedcare_core.config.seeds import derive_rng
from fedcare_core.data.cohort import Cohort, Objective
from fedcare_core.data.label_checks import check_labels
from fedcare_core.data.partition import FeaturePartition
from fedcare_core.data.pooled_scaling import PooledScale, pooled_statistics
from fedcare_core.data.preprocess import FeatureEncoder, fit_encoder
from fedcare_core.data.subgroups import RowGroups, row_groups
from fedcare_core.errors import ConfigError

SPLITS = ("train", "val", "test")
#: Redraws allowed when insisting that every objective has at least one client.
_MAX_OBJECTIVE_DRAWS = 1000


@dataclass(frozen=True)
class SplitArrays:
    """Encoded arrays of one client's split.

    Parameters
    ----------
    x_common
        Encoded common features, float32 (n, d_c).
    x_private
        Encoded private features, float32 (n, d_u).
    y
        Labels, float32 (n, m_k), one column per client objective; NaN = not applicable.
    groups
        int64 (n,): each row's patient as an ordinal ``0..P-1`` within the split (a patient's
        rows share it; never the patient's key). None: unknown, each row its own patient.
    subgroups
        Sensitive attribute name → each row's subgroup, a unicode array (n,) (``"missing"``
        where the value is missing; :func:`~fedcare_core.data.subgroups.subgroup_labels`).
    """

    x_common: np.ndarray
    x_private: np.ndarray
    y: np.ndarray
    groups: np.ndarray | None = None
    subgroups: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rows = (len(self.y),)
        if self.groups is not None and self.groups.shape != rows:
            raise ValueError(f"groups has shape {self.groups.shape}, not {rows}")
        for name, labels in self.subgroups.items():
            if labels.shape != rows or labels.dtype.kind != "U":
                raise ValueError(f"subgroup {name!r} is not {rows[0]} unicode labels")

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.y.shape[0])

    def take(self, rows: np.ndarray) -> SplitArrays:
        """The split's rows ``rows`` (indices, in that order), every array alike."""
        groups = None if self.groups is None else self.groups[rows]
        subgroups = {name: labels[rows] for name, labels in self.subgroups.items()}
        return SplitArrays(
            self.x_common[rows], self.x_private[rows], self.y[rows], groups, subgroups
        )


@dataclass(frozen=True)
class ClientData:
    """Everything one client holds. It never leaves the client.

    ``definition``: the text of the client's own dataset definition, where a site has one
    (its private features and column map: :mod:`fedcare_core.data.declared.site`), which its
    packaged model reads rows by; None: the dataset's. ``preferences``: the client's clinical
    preference for each objective it states one for (:mod:`fedcare_core.config.preferences`;
    others are plain).
    """

    client_id: int
    objectives: tuple[str, ...]
    common_features: tuple[str, ...]
    private_features: tuple[str, ...]
    common_encoder: FeatureEncoder
    private_encoder: FeatureEncoder
    train: SplitArrays
    val: SplitArrays
    test: SplitArrays
    definition: str | None = None
    preferences: Mapping[str, Preference] = field(default_factory=dict)

    def split(self, name: str) -> SplitArrays:
        """Return the split called ``name`` (train, val or test)."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}")
        out: SplitArrays = getattr(self, name)
        return out

    def n_labelled(self, objective: str, split: str = "train") -> int:
        """Rows of ``split`` with a label for ``objective``."""
        j = self.objectives.index(objective)
        return int(np.isfinite(self.split(split).y[:, j]).sum())


@dataclass(frozen=True)
class Federation:
    """The clients of one experiment and the objectives they pursue."""

    dataset: str
    objectives: tuple[Objective, ...]
    partition: FeaturePartition
    clients: tuple[ClientData, ...]
    common_width: int

    @property
    def objective_names(self) -> tuple[str, ...]:
        """Objectives pursued by at least one client, in cohort order."""
        return tuple(o.name for o in self.objectives)

    def objective(self, name: str) -> Objective:
        """The objective called ``name``."""
        for o in self.objectives:
            if o.name == name:
                return o
        raise KeyError(name)


def draw_client_objectives(
    objective_names: tuple[str, ...], config: DataConfig, seed: int
) -> list[tuple[str, ...]]:
    """Draw each client's objectives uniformly at random (seeded).

    Each client gets ``objectives_per_client`` distinct objectives. With
    ``cover_all_objectives`` (and at least as many clients as objectives), draws are repeated,
    from the same seeded stream, until every objective has a client: the result is uniform
    conditional on full coverage.
    """
    m = min(config.objectives_per_client, len(objective_names))
    rng = derive_rng(seed, "objectives")
    need_cover = config.cover_all_objectives and config.clients * m >= len(objective_names)
    for _ in range(_MAX_OBJECTIVE_DRAWS):
        draws = [
            tuple(sorted(rng.choice(len(objective_names), size=m, replace=False).tolist()))
            for _ in range(config.clients)
        ]
        covered = {i for d in draws for i in d}
        if not need_cover or len(covered) == len(objective_names):
            return [tuple(objective_names[i] for i in d) for d in draws]
    raise ConfigError("could not draw objectives covering every objective")  # pragma: no cover


def assign_patients(cohort: Cohort, config: DataConfig, seed: int) -> np.ndarray:
    """Client index per row; all rows of a patient go to one client.

    ``iid`` shuffles patients and deals them out evenly. ``dirichlet`` groups patients by the
    cohort's natural key (the stratum of the patient's first row) and splits each group over
    clients with Dirichlet(α) proportions.
    """
    patients, first_row = np.unique(cohort.patient, return_index=True)
    rng = derive_rng(seed, "clients")
    k = config.clients
    if len(patients) < k:
        raise ConfigError(f"{len(patients)} patients cannot be split over {k} clients")
    client_of_patient = np.empty(len(patients), dtype=np.int64)
    if config.client_split == "iid" or cohort.strata is None:
        order = rng.permutation(len(patients))
        client_of_patient[order] = np.arange(len(patients)) % k
    else:
        strata = cohort.strata.to_numpy()[first_row].astype(str)
        for value in sorted(set(strata.tolist())):
            idx = np.flatnonzero(strata == value)
            idx = idx[rng.permutation(len(idx))]
            props = rng.dirichlet(np.full(k, config.dirichlet_alpha))
            cuts = (np.cumsum(props)[:-1] * len(idx)).astype(int)
            for c, part in enumerate(np.split(idx, cuts)):
                client_of_patient[part] = c
    lookup = np.searchsorted(patients, cohort.patient)
    return client_of_patient[lookup]


def split_patients(
    patients: np.ndarray,
    config: DataConfig,
    seed: int,
    key: int | str,
    test_patients: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Each split's patients (train/val/test fractions of ``config``), seeded by ``key``.

    ``key`` names the client's stream: its index in a federation built from one cohort, a
    site's name for a site preparing its own data. With ``test_patients`` (a published split)
    the test split is exactly the patients among them, and train and validation divide the
    others in the ratio of their fractions.
    """
    uniq = np.unique(patients)
    rng = derive_rng(seed, "split", key)
    if test_patients is not None:
        fixed = np.isin(uniq, test_patients)
        rest = uniq[~fixed]
        order = rest[rng.permutation(len(rest))]
        share = config.train_fraction / (config.train_fraction + config.val_fraction)
        n_train = round(share * len(order))
        return {"train": order[:n_train], "val": order[n_train:], "test": uniq[fixed]}
    order = uniq[rng.permutation(len(uniq))]
    n_train = round(config.train_fraction * len(order))
    n_val = round(config.val_fraction * len(order))
    return {
        "train": order[:n_train],
        "val": order[n_train : n_train + n_val],
        "test": order[n_train + n_val :],
    }


def _subsample_patients(cohort: Cohort, max_patients: int, seed: int) -> Cohort:
    """Keep the rows of ``max_patients`` patients drawn at random (seeded)."""
    uniq = np.unique(cohort.patient)
    if max_patients >= len(uniq):
        return cohort
    keep = derive_rng(seed, "subsample").choice(uniq, size=max_patients, replace=False)
    return _keep_patients(cohort, keep, f"subsampled to {max_patients} patients")


def _keep_patients(cohort: Cohort, keep: np.ndarray, note: str) -> Cohort:
    """The cohort's rows of the patients in ``keep``, with ``note`` added to its notes."""
    mask = np.isin(cohort.patient, keep)
    return replace(
        cohort,
        features=cohort.features.loc[mask].reset_index(drop=True),
        labels=cohort.labels.loc[mask].reset_index(drop=True),
        patient=cohort.patient[mask],
        strata=None if cohort.strata is None else cohort.strata.loc[mask].reset_index(drop=True),
        notes=(*cohort.notes, note),
    )


def place_patients(cohort: Cohort, config: DataConfig, seed: int) -> tuple[Cohort, np.ndarray]:
    """The rows a federation is built from and each row's client.

    ``max_patients`` subsamples the cohort first; the patients are then assigned to clients
    (:func:`assign_patients`); ``max_patients_per_client`` then keeps at most that many of
    each client's patients, drawn at random (seeded, a stream per client): small hospitals.

    Returns
    -------
    cohort, client_of_row
        The kept rows and the client index of each.
    """
    if config.max_patients is not None:
        cohort = _subsample_patients(cohort, config.max_patients, seed)
    client_of_row = assign_patients(cohort, config, seed)
    cap = config.max_patients_per_client
    if cap is None:
        return cohort, client_of_row
    keep = []
    for k in range(config.clients):
        patients = np.unique(cohort.patient[client_of_row == k])
        if len(patients) > cap:
            patients = derive_rng(seed, "client-cap", k).choice(patients, size=cap, replace=False)
        keep.append(patients)
    kept = np.concatenate(keep)
    if len(kept) == len(np.unique(cohort.patient)):
        return cohort, client_of_row
    mask = np.isin(cohort.patient, kept)
    capped = _keep_patients(cohort, kept, f"at most {cap} patients per client")
    return capped, client_of_row[mask]


def build_federation(
    cohort: Cohort,
    partition: FeaturePartition,
    config: DataConfig,
    seed: int,
    *,
    max_categories: int = 20,
    source: str | None = None,
) -> Federation:
    """Assign patients to clients, split each client by patient, and encode each client's data.

    Parameters
    ----------
    cohort
        The loaded dataset.
    partition
        Common features and per-objective private pools (already adjusted for ρ).
    config
        Client count, split and fractions.
    seed
        Experiment seed.
    max_categories
        Vocabulary cap for undeclared categorical private features.
    source
        File name used in error messages (the cohort's source file).

    Returns
    -------
    Federation
        Clients with encoded train/val/test arrays.

    Raises
    ------
    DataError
        If a client's training split has no positive (or no negative) label for a binary
        objective it pursues, or no labelled row at all for an objective.
    """
    _check_partition(cohort, partition)
    cohort, client_of_row = place_patients(cohort, config, seed)
    client_objectives = draw_client_objectives(
        tuple(o.name for o in cohort.objectives), config, seed
    )
    pursued = {name for objs in client_objectives for name in objs}
    encoding = ClientEncoding(
        partition, frozenset(cohort.numeric_features), max_categories, cohort.vocabularies
    )
    prepared = []
    for k, objs in enumerate(client_objectives):
        rows = np.flatnonzero(client_of_row == k)
        splits = split_patients(cohort.patient[rows], config, seed, k, cohort.test_patients)
        frames, labels, extras = client_splits(cohort, rows, splits, objs)
        check_labels(cohort, objs, labels["train"], f"client {k}", source)
        prepared.append((k, objs, frames, labels, extras))
    trains = [(objs, f["train"]) for _, objs, f, _, _ in prepared]
    pooled = pooled_statistics(partition, encoding.numeric, config.scaling, trains)
    encoding = replace(encoding, pooled=pooled)
    # Every client encodes the common features to one layout (fit_encoder insists on declared
    # vocabularies for shared features).
    clients = [encoding.client(k, objs, f, lab, extras=ex) for k, objs, f, lab, ex in prepared]
    common_width = clients[0].common_encoder.width
    return Federation(
        dataset=cohort.dataset,
        objectives=tuple(o for o in cohort.objectives if o.name in pursued),
        partition=partition,
        clients=tuple(clients),
        common_width=common_width,
    )


def _check_partition(cohort: Cohort, partition: FeaturePartition) -> None:
    """Raise :class:`ConfigError` if the partition names a feature the cohort lacks."""
    missing = [f for f in partition.all_features if f not in cohort.features.columns]
    if missing:
        raise ConfigError(f"feature partition names unknown feature(s): {missing}")


def client_splits(
    cohort: Cohort, rows: np.ndarray, splits: dict[str, np.ndarray], objs: tuple[str, ...]
) -> tuple[dict[str, pd.DataFrame], dict[str, np.ndarray], dict[str, RowGroups]]:
    """Raw features, float32 labels (client objectives only) and row tags of each split.

    Parameters
    ----------
    cohort
        The cohort the client's rows are from.
    rows
        The client's cohort rows.
    splits
        The client's patients per split.
    objs
        The client's objectives.

    Returns
    -------
    frames, labels, extras
        Per split: its rows' raw features, their labels, and their patient ordinals within
        the split and subgroups of the cohort's sensitive attributes (:class:`RowGroups`).
    """
    frames: dict[str, pd.DataFrame] = {}
    labels: dict[str, np.ndarray] = {}
    extras: dict[str, RowGroups] = {}
    for name, pats in splits.items():
        sel = rows[np.isin(cohort.patient[rows], pats)]
        frames[name] = cohort.features.iloc[sel]
        labels[name] = np.array(
            cohort.labels.iloc[sel][list(objs)].to_numpy(dtype=np.float32), copy=True
        )
        extras[name] = row_groups(cohort.patient[sel], frames[name], cohort.sensitive)
    return frames, labels, extras


@dataclass(frozen=True)
class ClientEncoding:
    """How each client's encoders are fitted.

    The partition, the numeric features, the cap of undeclared vocabularies and the declared
    vocabularies (a cohort's, or a federation schema's).
    """

    partition: FeaturePartition
    numeric: frozenset[str]
    max_categories: int
    vocabularies: Mapping[str, tuple[str, ...]]
    pooled: Mapping[str, PooledScale] = field(default_factory=dict)

    def client(
        self,
        client_id: int,
        objs: tuple[str, ...],
        frames: dict[str, pd.DataFrame],
        labels: dict[str, np.ndarray],
        *,
        extras: Mapping[str, RowGroups] | None = None,
    ) -> ClientData:
        """Fit the client's encoders on its training rows and encode every split.

        Parameters
        ----------
        client_id
            The client's index.
        objs
            Its objectives.
        frames, labels
            Each split's raw features and labels (:func:`client_splits`).
        extras
            Each split's patient ordinals and subgroups, carried into its arrays (None: none,
            each row its own patient).

        Returns
        -------
        ClientData
            The client's encoders and encoded splits.
        """
        common = self.partition.common
        private = self.partition.private_for(objs)
        common_enc = fit_encoder(
            frames["train"],
            common,
            [c for c in common if c in self.numeric],
            shared=common,
            vocabularies=self.vocabularies,
            max_categories=self.max_categories,
            pooled=self.pooled,
        )
        private_enc = fit_encoder(
            frames["train"],
            private,
            [c for c in private if c in self.numeric],
            vocabularies=self.vocabularies,
            max_categories=self.max_categories,
            pooled=self.pooled,
        )
        arrays = {
            name: SplitArrays(
                x_common=common_enc.transform(frames[name]),
                x_private=private_enc.transform(frames[name]),
                y=labels[name],
                **_tags(extras, name),
            )
            for name in SPLITS
        }
        return ClientData(
            client_id=client_id,
            objectives=objs,
            common_features=common,
            private_features=private,
            common_encoder=common_enc,
            private_encoder=private_enc,
            train=arrays["train"],
            val=arrays["val"],
            test=arrays["test"],
        )


def _tags(extras: Mapping[str, RowGroups] | None, split: str) -> dict[str, Any]:
    """The ``groups`` and ``subgroups`` of ``split``'s :class:`SplitArrays` (none: empty)."""
    if extras is None or split not in extras:
        return {}
    return {"groups": extras[split].groups, "subgroups": dict(extras[split].subgroups)}
