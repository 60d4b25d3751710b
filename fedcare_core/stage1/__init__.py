"""Stage 1: federated multi-objective training of the shared backbone.

Stage 1 (paper Algorithm 1): the federated multi-objective rounds (:mod:`.loop`), their
data types (:mod:`.types`) and the rounds from securely aggregated sums (:mod:`.secure_sums`).
"""
