"""fedxgb over Flower, beside the method itself (:mod:`fedcare_core.algorithms.fedxgb`).

Its wire format and client side (``trees``), its server strategy (``strategy``) and its
``fedcare.federated_rounds`` entry (``rounds``).
"""
