"""The union view of the FullMLP baselines.

The union view the FullMLP baselines share: the feature layout (:mod:`.features`), the
algorithm base class over it (:mod:`.view`) and shared training pieces (:mod:`.common`).
"""
