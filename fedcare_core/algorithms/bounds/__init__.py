"""The bounds: Local and Centralised.

The bounds of SPEC §4: Local (:mod:`.local`) and Centralised (:mod:`.centralised`); their
training (:mod:`.rounds`).
"""
