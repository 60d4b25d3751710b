"""The run plan the ServerApp reads (:class:`RunPlan`), and the files of a run's result folder.

:class:`RunPlan` is everything the server side needs to run Stage 1 and nothing about any
client's rows: objective names and kinds, the common feature width, the model and Stage 1
configuration, the seed, the number of clients to wait for, and where to write results.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fedcare.flower.flower_options import majority
from fedcare.flower.polling import RoundQuorum
from fedcare_core.config import BaselineConfig, ModelConfig, Stage1Config
from fedcare_core.config.method_options import baselines
from fedcare_core.sites.policy import RunTerms, terms_of

#: File names inside a run's result folder.
PLAN_FILE = "plan.json"
ROUNDS_FILE = "rounds.jsonl"
RESULT_ARRAYS_FILE = "stage1.npz"
RESULT_FILE = "stage1.json"
ERROR_FILE = "error.txt"


@dataclass(frozen=True)
class CheckpointTarget:
    """Where a Flower ServerApp keeps its Stage 1 checkpoint (see :class:`RunPlan`).

    Parameters
    ----------
    path
        The checkpoint file (in the run folder; its folder must exist).
    fingerprint
        The run's :func:`~fedcare_core.resume.keys.stage1_fingerprint`.
    """

    path: str
    fingerprint: str


@dataclass(frozen=True)
class RunPlan:
    """What the server needs to run Stage 1 (no client data).

    Parameters
    ----------
    objectives
        ``(name, kind)`` of every objective of the federation, in the model's head order.
    common_width
        Encoded width of the common features (the backbone's input).
    model, stage1
        Architecture and Stage 1 hyper-parameters.
    seed
        Experiment seed (``w^0`` and every client's random streams).
    num_clients
        K: how many clients the server waits for.
    result_dir
        Folder the server writes its per-round log and the final model to.
    round_timeout_s, startup_timeout_s, pull_interval_s, min_per_round, round_deadline_s
        See :class:`fedcare.flower.flower_options.FlowerConfig`.
    algorithm
        ``"fedcare"`` (Algorithm 1: FedCARE, FedCARE-B, FMGDA, FSMGDA) or a baseline run by
        Flower's own strategies (``"fedavg"``, ``"fedprox"``; :mod:`fedcare.flower.fedavg`).
    baselines
        The baselines' settings (FedAvg/FedProx local training, FedProx's μ).
    union_common_width, union_columns
        A baseline's union layout (:class:`~fedcare_core.algorithms.union.features.UnionLayout`):
        column names, no rows. Each client embeds its own features into it; ``common_width``
        is then the union width. None: the clients' common features as they are.
    threads
        Torch intra-op threads of a baseline's ClientApp (``ExperimentConfig.threads``).
    sites
        A federation of named sites: their names in client-id order (a node's handshake names
        its site; its client id is the site's position here). Empty: nodes claim client ids.
        ``num_clients`` is then how many of them Stage 1 waits for before round 1.
    schema_digest
        The federation schema's digest; a site prepared for another schema is not admitted
        (empty: not checked).
    broadcast
        Send ``w*`` to every site still in the run at the end (Algorithm 1, line 30).
    run_name
        A name for the run, sent with ``w*``.
    holders
        Objective → the ids of the clients pursuing it (fedxgb's server plans each round's
        boosting by them; no row). Empty: not needed.
    min_sites
        A federation of sites' ``--min-sites``: no round aggregates fewer replies than this
        (or than ``min_per_round``, which may lower it), and fewer end the run with an error
        (:mod:`fedcare.flower.round_floor`). None: a cohort's run (no such minimum).
    checkpoint_path, checkpoint_fingerprint
        FedCARE / FedCARE-B in a run folder (``fedcare run --run-dir``): the server writes a
        Stage 1 checkpoint (:mod:`fedcare_core.resume.checkpoint`) to this file after every round
        and, if it holds one of this run
        (:func:`~fedcare_core.resume.keys.stage1_fingerprint`),
        continues after its round. None: no checkpoint.
    """

    objectives: tuple[tuple[str, str], ...]
    common_width: int
    model: ModelConfig
    stage1: Stage1Config
    seed: int
    num_clients: int
    result_dir: str
    round_timeout_s: float = 600.0
    startup_timeout_s: float = 180.0
    pull_interval_s: float = 0.2
    min_per_round: int | None = None
    round_deadline_s: float | None = None
    algorithm: str = "fedcare"
    baselines: BaselineConfig | None = None
    union_common_width: int | None = None
    union_columns: tuple[str, ...] = ()
    threads: int = 1
    sites: tuple[str, ...] = ()
    schema_digest: str = ""
    broadcast: bool = False
    run_name: str = ""
    holders: tuple[tuple[str, tuple[int, ...]], ...] = ()
    min_sites: int | None = None
    checkpoint_path: str | None = None
    checkpoint_fingerprint: str | None = None

    @property
    def objective_names(self) -> tuple[str, ...]:
        """Objective names in head order."""
        return tuple(n for n, _ in self.objectives)

    @property
    def client_ids(self) -> range:
        """The client ids of this run: one per site, or ``0..num_clients-1``."""
        return range(len(self.sites) if self.sites else self.num_clients)

    def client_name(self, client_id: int) -> str:
        """How messages name client ``client_id``: ``site '<name>'`` or ``client <k>``.

        ``client <k>`` for a client of one cohort: no site names, or the loopback deployment's
        ``client-<k>``.
        """
        if not self.sites or self.sites[client_id] == f"client-{client_id}":
            return f"client {client_id}"
        return f"site {self.sites[client_id]!r}"

    def terms(self) -> RunTerms:
        """What a site is asked to take part in (its policy decides on these)."""
        return terms_of(
            self.stage1,
            run_name=self.run_name,
            algorithm=self.algorithm,
            objectives=self.objective_names,
        )

    def round_quorum(self) -> RoundQuorum | None:
        """K of n with the round's deadline (None: every client waited for until the timeout).

        k is ``min_per_round``, else a federation's ``min_sites`` (no round may aggregate
        fewer: :meth:`round_floor`), else a majority of the run's clients.
        """
        if self.round_deadline_s is None:
            return None
        k = self.min_per_round or self.min_sites or majority(len(self.client_ids))
        return RoundQuorum(k, self.round_deadline_s)

    def round_floor(self) -> int:
        """The fewest replies a round may aggregate; fewer end the run.

        Any run: 1 (a run that no client joined, or a round no client answered, would give
        the untrained model as its result). A federation of sites: ``min_per_round``, else
        ``min_sites``, and never one site. Under secure aggregation or differential privacy,
        whatever the run: at least 2 (the sum of one client's update is that update).
        """
        floor = 1
        if self.min_sites is not None:
            floor = max(self.min_per_round or self.min_sites, 2)
        stage1 = self.stage1
        private = stage1.dp_epsilon is not None or stage1.dp_noise_multiplier is not None
        if stage1.secagg or private:
            floor = max(floor, 2)
        return floor

    @property
    def kinds(self) -> dict[str, str]:
        """Objective name → kind."""
        return dict(self.objectives)

    def to_json(self) -> str:
        """Serialise as JSON."""
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> RunPlan:
        """Parse :meth:`to_json`'s output."""
        raw: dict[str, Any] = json.loads(text)
        model = dict(raw.pop("model"))
        model["head_hidden"] = tuple(model["head_hidden"])
        options = raw.pop("baselines", None)
        return cls(
            objectives=tuple((str(n), str(k)) for n, k in raw.pop("objectives")),
            model=ModelConfig(**model),
            stage1=Stage1Config(**raw.pop("stage1")),
            baselines=None if options is None else baselines(**options),
            union_columns=tuple(str(c) for c in raw.pop("union_columns", ())),
            sites=tuple(str(c) for c in raw.pop("sites", ())),
            holders=tuple(
                (str(s), tuple(int(k) for k in ids)) for s, ids in raw.pop("holders", ())
            ),
            **raw,
        )

    def write(self, path: str | Path) -> Path:
        """Write the plan to ``path``."""
        p = Path(path)
        p.write_text(self.to_json() + "\n")
        return p

    @classmethod
    def read(cls, path: str | Path) -> RunPlan:
        """Read a plan written by :meth:`write`."""
        return cls.from_json(Path(path).read_text())
