"""Flower's backends, declared as entries of the ``fedcare.backends`` group.

Each names its runner and its options by import path: declaring them (``fedcare --help``,
the flows' parameter form) imports neither Flower nor Ray.
"""

from __future__ import annotations

from fedcare_core.config.backends import BackendSpec

_FLOWER_OPTIONS = "fedcare.flower.flower_options:FlowerConfig"

#: Flower's Simulation Engine on a private Ray instance.
SIMULATION = BackendSpec(
    "flower-sim",
    "Flower's Simulation Engine (a private Ray)",
    factory="fedcare.flower.simulation:SimulationStage1Runner",
    options=_FLOWER_OPTIONS,
    secagg=True,
)
#: A SuperLink and one SuperNode per client, as processes on loopback.
DEPLOYMENT = BackendSpec(
    "flower-deployment",
    "a Flower SuperLink and one SuperNode per client, as processes on loopback (TLS)",
    factory="fedcare.flower.deployment:DeploymentStage1Runner",
    options=_FLOWER_OPTIONS,
    secagg=True,
    network=True,
)
