"""PAFNet (:mod:`.method`) and its rounds (:mod:`.rounds`)."""
