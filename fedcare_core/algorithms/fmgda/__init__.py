"""FMGDA (:mod:`.method`) and FSMGDA (:mod:`.fsmgda`); their rounds (:mod:`.rounds`)."""
