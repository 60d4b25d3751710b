"""A run from a prepared federation to its result document.

:mod:`.pipeline` (``prepare_federation``, ``run_algorithm``), :mod:`.results` (the document),
:mod:`.executors` (where per-client phases execute), :mod:`.backends` (the backend registry:
where federated rounds execute), :mod:`.interrupts` (signals as one exception) and
:mod:`.output_paths` (outputs checked before any work).
"""
