"""FedAvg's family over Flower, with Flower's own strategies.

FedAvg, FedProx and the averaging methods installed beside them: the wire format
(:mod:`~fedcare.flower.fedavg.wire`), the server's strategy
(:mod:`~fedcare.flower.fedavg.strategy`) and the ``fedcare.federated_rounds`` entry
``union-fedavg`` (:mod:`~fedcare.flower.fedavg.rounds`).
"""
