"""An objective kind's contract, and the installed kinds found by name.

A kind is an entry of the ``fedcare.objective_kinds`` group (:mod:`fedcare_core.plugins`) that
loads an :class:`ObjectiveKind` instance. Every objective names its kind (``Objective.kind``,
a definition's ``objectives.<name>.kind``); the code that trains, scores, calibrates or exports
an objective asks its kind, never compares the kind's name. Reading a kind imports no torch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from fedcare_core.config.preferences import Preference
from fedcare_core.objectives.metrics import MetricValue
from fedcare_core.plugins import entry_names, load_entry

if TYPE_CHECKING:  # torch is imported by what trains or predicts, not by what reads a kind
    import torch

    from fedcare_core.objectives.losses import ObjectiveLoss

#: The extension kind (:data:`fedcare_core.plugins.GROUPS`).
KIND = "objective_kind"


class ObjectiveKind(ABC):
    """What an objective's label is, how a head predicts it, and how predictions are scored.

    Its capabilities choose what else applies to it: a ``risk`` kind's predictions are the
    probability of an event (0/1 labels), recalibrated after training, thresholded for clinical
    operating points and shaped by a site's preference; a kind with a ``unit`` predicts a
    quantity in it, with a split-conformal prediction interval.
    """

    #: Its name, the entry's (``binary``).
    name: ClassVar[str]
    #: The main metric's name in results (``auroc``) and whether a larger value is better.
    metric: ClassVar[str]
    higher_is_better: ClassVar[bool]
    #: Whether a prediction is an event's probability (labels 0/1).
    risk: ClassVar[bool]
    #: The unit of a prediction that is a quantity (None: a probability).
    unit: ClassVar[str | None]
    #: What one prediction is, in a sentence's words (model cards, exported columns).
    prediction: ClassVar[str]
    #: How its loss and metric read, in a few words (help texts, the definition format).
    summary: ClassVar[str]
    #: What a profile reports of its labels: their mean, named so (``positive_rate``).
    label_mean: ClassVar[str]

    @property
    def interval(self) -> bool:
        """Whether a prediction gets a split-conformal interval: a quantity's (a ``unit``)."""
        return self.unit is not None

    @abstractmethod
    def make_loss(self, train_labels: np.ndarray, preference: Preference | None) -> ObjectiveLoss:
        """The loss of an objective of this kind at a client, from its training labels.

        Parameters
        ----------
        train_labels
            The client's training labels of the objective (NaN: not labelled).
        preference
            The client's preference for the objective (None or ``plain``: the plain loss).
        """

    @abstractmethod
    def predict(self, score: torch.Tensor) -> torch.Tensor:
        """The head's raw scores as predictions (a probability, or a quantity in ``unit``)."""

    @abstractmethod
    def score(self, y_true: np.ndarray, y_pred: np.ndarray) -> MetricValue:
        """The main metric of predictions against labels (NaN labels skipped)."""

    @abstractmethod
    def prediction_column(self, objective: str) -> str:
        """The exported column of ``objective``'s predictions (``readmission_probability``)."""

    @abstractmethod
    def unlearnable(self, train_labels: np.ndarray) -> str | None:
        """Why a client's labelled training rows cannot train it (None: they can).

        Worded to follow the client's name (``has no positive label``).
        """


def objective_kind(name: str) -> ObjectiveKind:
    """The installed objective kind called ``name``.

    Raises
    ------
    PluginError
        No installed kind has that name (the message lists those that do).
    """
    kind: ObjectiveKind = load_entry(KIND, name)
    return kind


def objective_kind_names() -> tuple[str, ...]:
    """The names of the installed objective kinds (nothing is imported)."""
    return entry_names(KIND)


def make_loss(
    kind: str, train_labels: np.ndarray, preference: Preference | None = None
) -> ObjectiveLoss:
    """The loss of an objective of ``kind`` at a client (:meth:`ObjectiveKind.make_loss`).

    Parameters
    ----------
    kind
        The objective's kind.
    train_labels
        The client's training labels of the objective (their prevalence sets a risk's weight).
    preference
        The client's preference for the objective (None or ``plain``: the prediction loss).

    Returns
    -------
    ObjectiveLoss
        The loss.
    """
    return objective_kind(kind).make_loss(train_labels, preference)


def predict(kind: str, score: torch.Tensor) -> torch.Tensor:
    """Raw scores as predictions of ``kind`` (:meth:`ObjectiveKind.predict`)."""
    return objective_kind(kind).predict(score)


def compute_metric(kind: str, y_true: np.ndarray, y_pred: np.ndarray) -> MetricValue:
    """The main metric of ``kind`` (:meth:`ObjectiveKind.score`)."""
    return objective_kind(kind).score(y_true, y_pred)
