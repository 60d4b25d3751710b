"""The networks and their training primitives.

The networks and their training primitives (SPEC §2): models, losses, dropout, optimisers,
flat parameter views, seeding, the shared training loop and torch's pinned CPU kernels.
"""
