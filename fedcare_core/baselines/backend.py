"""Which baselines a federated backend (the Flower layer) can run, and how it is asked to.

The core never imports a backend. A Stage 1 runner that can also run baselines implements
:class:`BaselineBackend`; :func:`fedcare_core.baselines.runner.run_baseline` hands it the
federated rounds of a baseline and keeps everything else (clients, splits, union layout,
evaluation, the results document) in process, exactly as for an in-process run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from fedcare_core.baselines.common import ProgressFn
    from fedcare_core.baselines.features import UnionLayout
    from fedcare_core.config import ExperimentConfig
    from fedcare_core.data.federation import Federation
    from fedcare_core.stage1 import Stage1Result

#: Baselines whose rounds a federated backend runs (clients stateless between rounds, one
#: global FullMLP deployed by every client).
FEDERATED_BASELINES = ("fedavg", "fedprox", "fmgda", "fsmgda")

#: Why the other baselines and bounds run in process only.
IN_PROCESS_ONLY = {
    "pafnet": (
        "PAFNet's clients are stateful (their projection layers and masks persist across "
        "rounds and never leave the client), the server keeps one peer-attentive aggregate "
        "per client, and each client deploys its own best-validation model, which the "
        "in-process evaluation needs; none of that fits a stateless ClientApp yet"
    ),
    "local": "Local is a bound without communication: there is no federated round to run",
    "centralised": (
        "Centralised pools every client's rows in one place: there is no federated round to run"
    ),
}


def backend_refusal(algorithm: str, backend: str) -> str | None:
    """Why ``algorithm`` cannot run on the federated ``backend`` (None: it can)."""
    if backend == "local" or algorithm in FEDERATED_BASELINES:
        return None
    reason = IN_PROCESS_ONLY.get(algorithm)
    if reason is None:
        return None
    return (
        f"algorithm {algorithm!r} runs in process only (--backend local): {reason}. "
        f"Over Flower: {', '.join(FEDERATED_BASELINES)}"
    )


@runtime_checkable
class BaselineBackend(Protocol):
    """A Stage 1 runner that also runs the federated rounds of some baselines."""

    #: The baselines it runs (a subset of :data:`FEDERATED_BASELINES`).
    federated_baselines: tuple[str, ...]

    def run_federated_baseline(
        self,
        algorithm: str,
        federation: Federation,
        layout: UnionLayout,
        config: ExperimentConfig,
        progress: ProgressFn | None,
    ) -> Stage1Result:
        """Run ``algorithm``'s rounds and return the global FullMLP and the round trace.

        Parameters
        ----------
        algorithm
            One of :attr:`federated_baselines`.
        federation
            The clients as prepared (their own encoded features; each client builds its
            union vectors from ``layout``, which holds column names, no rows).
        layout
            The union layout (:func:`~fedcare_core.baselines.features.union_layout`).
        config
            The experiment configuration (rounds, seed, model, ``baselines``, ``stage1``).
        progress
            Called as ``progress("stage1", t, T)`` after each round.

        Returns
        -------
        Stage1Result
            What the in-process runner returns for the same configuration and seed.
        """
        ...
