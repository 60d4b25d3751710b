"""Extension points: each kind of extension is one group of Python entry points.

A method, a backend, a dataset, an objective kind or a predictor is found by its entry point
alone: FedCARE's own are declared in its ``pyproject.toml`` exactly as an outside package
declares its own, so the code that uses an extension never names one (``docs/EXTENDING.md``).

=============  ======================  ==================================================
kind           entry-point group       an entry loads
=============  ======================  ==================================================
algorithm      ``fedcare.algorithms``  an :class:`~fedcare_core.algorithms.base.Algorithm`
                                       subclass (its ``name`` is the entry's)
backend        ``fedcare.backends``    a :class:`~fedcare_core.config.backends.BackendSpec`
dataset        ``fedcare.datasets``    a :class:`~fedcare_core.data.registry.DatasetSpec` (a
                                       built-in dataset; its ``name`` is the entry's)
extractor      ``fedcare.extractors``  an :class:`~fedcare_core.data.declared.extractors.
                                       Extractor`: a release's raw tables → the one table a
                                       definition declares (``source.extractor``)
federated      ``fedcare.federated_    the rounds a method runs over Flower (the federation
rounds         rounds``                layer's ``FederatedRounds``), by the name its
                                       ``Algorithm.federated_rounds`` gives
objective      ``fedcare.objective_   an :class:`~fedcare_core.objectives.kind.ObjectiveKind`
kind           kinds``                 (its ``name`` is the entry's): a label's head, loss,
                                       metric and columns
predictor      ``fedcare.predictors``  a :class:`~fedcare_core.predict.predictors.ClientPredictor`
                                       subclass (its ``kind`` is the entry's)
raw checks     ``fedcare.raw_checks``  a dataset's raw-table checks (the data gate's Great
                                       Expectations suites), by the name its spec or its
                                       extractor gives
=============  ======================  ==================================================

Names are read from the installed distributions' metadata without importing anything; an
entry is imported when it is first used. Entries are listed in name order, FedCARE's own
first, then each other distribution's. Two distributions declaring one name is refused,
naming both.
"""

from __future__ import annotations

from fedcare_core.plugins.entry_points import (
    GROUPS,
    PluginError,
    entry_names,
    load_entry,
)

__all__ = ["GROUPS", "PluginError", "entry_names", "load_entry"]
