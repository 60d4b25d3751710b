"""The core of a multi-site federation.

The core of a multi-site federation: what every party agrees on (:mod:`.schema`,
``federation.json``), one hospital's own file as a client (:mod:`.client`) and names that
become file names (:mod:`.safe_names`).
"""
