"""The paper's baselines and the bounds it lacks (SPEC §4), on the same clients and evaluation.

``fedavg``/``fedprox`` (:mod:`.fedavg`), ``fmgda``/``fsmgda`` (:mod:`.fmgda`), ``pafnet``
(:mod:`.pafnet`), ``local``/``centralised`` (:mod:`.bounds`); :func:`.runner.run_baseline`
dispatches and returns FedCARE's :class:`~fedcare_core.runner.ExperimentResult`. All but PAFNet
use the FullMLP over the union feature vector (:mod:`.features`).
"""
