"""Federated gradient-boosted trees (``fedxgb``): rounds, a client's own trees, its model."""
