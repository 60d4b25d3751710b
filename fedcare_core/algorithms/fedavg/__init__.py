"""FedAvg (:mod:`.method`) and FedProx (:mod:`.fedprox`); their rounds (:mod:`.rounds`)."""
