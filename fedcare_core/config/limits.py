"""The configuration's choices and bounds, named once (the settings' declarations use them)."""

from __future__ import annotations

from fedcare_core.config.fields import Range

#: FedCARE's own methods, whose documents have no ``baselines`` section (the algorithm names
#: are the registry's, :mod:`fedcare_core.algorithms`).
FEDCARE_DOCUMENT_ALGORITHMS = ("fedcare", "fedcare-b")
CLIENT_SPLITS = ("iid", "dirichlet")
#: How numeric features are scaled: by each client's own training statistics, or by statistics
#: pooled across the clients (moments, or quantiles; fedcare_core.data.pooled_scaling).
SCALINGS = ("client", "federated", "federated-quantile")
SOLVERS = ("exact", "slsqp")
NORMALISATIONS = ("none", "l2", "loss+")
QP_SCOPES = ("full", "backbone")
SERVER_OPTIMIZERS = ("sgd", "adam")
STAGE2_OPTIMIZERS = ("adam", "sgd")
#: How Stage 2's personal heads start: freshly initialised (the paper), or as the global head.
STAGE2_HEAD_INITS = ("fresh", "global")
#: What the loaders do with a category outside a column's declared vocabulary
#: (:mod:`fedcare_core.data.categories`): stop, or encode it as ``other``.
UNSEEN_CATEGORY_POLICIES = ("refuse", "other")
LOCAL_OPTIMIZERS = ("adam", "sgd")
#: How a deployed model's binary risks are calibrated on its client's validation rows
#: (:mod:`fedcare_core.evaluation.calibration`): by the documented rule across the clients
#: (auto) or at each client alone (local), forced, or not at all.
CALIBRATION_METHODS = ("auto", "local", "platt", "isotonic", "none")

#: Largest seed (NumPy's generators take seeds below 2**32).
MAX_SEED = 2**32 - 1
#: Upper bounds of the count fields: generous for any real run, but an absurd value (a typo,
#: ``10**30`` rounds) is refused before any work instead of training for ever.
MAX_ROUNDS = 100_000
MAX_CLIENTS = 1_000
#: The most objectives a dataset declares (a definition file's ``objectives``).
MAX_OBJECTIVES = 16
MAX_STEPS = 100_000  # local steps, epochs and patience
_MAX_BATCH_SIZE = 10**7
MAX_PATIENTS = 10**9
_MAX_WIDTH = 65_536  # layer widths
MAX_CATEGORIES = 100_000
MAX_THREADS = 1_024

WIDTH = Range(1, _MAX_WIDTH)
STEPS = Range(1, MAX_STEPS)
BATCH = Range(1, _MAX_BATCH_SIZE)
SEEDS = Range(0, MAX_SEED)
