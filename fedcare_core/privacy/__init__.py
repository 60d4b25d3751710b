"""Client-level differential privacy.

Client-level differential privacy: the clip, the noise and the accountant's ledger
(:mod:`.mechanism`), and Algorithm 1's rounds under it (:mod:`.stage1_rounds`).
"""
