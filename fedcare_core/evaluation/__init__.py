"""Evaluation: metrics and per-client scoring.

Evaluation (SPEC §3): the metrics (:mod:`.metrics`) and per-client and pooled scoring on
each client's held-out test rows (:mod:`.clients`).
"""
