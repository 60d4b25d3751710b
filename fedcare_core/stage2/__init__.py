"""Stage 2: per-client personalisation.

Stage 2 (paper Algorithm 2): each client's personalisation, with no communication
(:mod:`.personalise`).
"""
