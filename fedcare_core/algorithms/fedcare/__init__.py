"""FedCARE (:mod:`.method`) and FedCARE-B, its backbone-only ablation (:mod:`.fedcare_b`)."""
