"""FSMGDA: FMGDA with stochastic (mini-batch) local gradients, on the union view."""

from __future__ import annotations

from fedcare_core.algorithms.fmgda.method import Fmgda


class Fsmgda(Fmgda):
    """FMGDA's rounds with mini-batch local gradients."""

    name = "fsmgda"
    cost_at_ten_clients = 1.3
    cost_scales_with_clients = True
    full_gradients = False
