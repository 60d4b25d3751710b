"""The multi-site federation: hospitals, each with its own file, federated by a coordinator.

A site prepares its folder (:mod:`.site_folder`, its files read checked in :mod:`.site_files`;
its own rows loaded by :mod:`.site_input`), joins with its own SuperNode (:mod:`.site_join`);
the coordinator runs a long-lived SuperLink and registers the sites (:mod:`.coordinator`, its
state in :mod:`.coordinator_state`) and runs Stage 1 over them (:mod:`.federation_run`). The
agreement every party reads (``federation.json``) is the core's :mod:`fedcare_core.sites`; the
Flower records of named sites are :mod:`fedcare.flower.site_messages`.
"""
