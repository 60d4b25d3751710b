"""Files the core reads and writes.

Files the core reads and writes: atomic replacement (:mod:`.atomic`), JSON handed over by a
user or another party (:mod:`.json_input`), append-only JSON-lines logs (:mod:`.json_lines`),
and patient data kept out of git (:mod:`.private`).
"""
