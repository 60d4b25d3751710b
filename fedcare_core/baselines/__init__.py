"""The paper's baselines and the bounds it lacks (SPEC §4), on the same clients and evaluation.

``fedavg``/``fedprox`` (:mod:`.fedavg`), ``fmgda``/``fsmgda`` (:mod:`.fmgda`), ``pafnet``
(:mod:`.pafnet`), ``local``/``centralised`` (:mod:`.bounds`): their training code. Each is
registered as an algorithm in :mod:`fedcare_core.algorithms` and runs through the same
pipeline as FedCARE (:func:`fedcare_core.runner.run_algorithm`). All but PAFNet use the FullMLP
over the union feature vector (:mod:`.features`).
"""
