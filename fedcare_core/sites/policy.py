"""A site's own rules for the runs it joins (its ``policy.yaml``), and the terms of a run.

A hospital decides, not the coordinator, what its node takes part in. Its policy is kept in its
site folder and read only there; its node checks each run's terms (:class:`RunTerms`, sent with
the coordinator's handshake and re-checked on every training instruction) before any training:

- ``require_secagg``: every round summed by secure aggregation;
- ``max_epsilon`` (and ``max_delta``): client-level DP whose ε over the run's planned rounds,
  computed at the site from the noise multiplier, T and δ, stays within the cap (a run without
  DP has ε = ∞);
- ``accountant``: whose ε the cap binds (``pld`` by default, or ``rdp``);
- ``objectives``: the only objectives the run's model may predict;
- ``max_rounds``: T at most this;
- ``require_approval``: the site's operator approves the run's terms first
  (``fedcare site approve``).

A run that breaks a rule is refused naming the rule (:class:`Refusal`); nothing is trained.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from fedcare_core.config import Stage1Config
from fedcare_core.errors import ConfigError
from fedcare_core.privacy.accountants import ACCOUNTANTS, epsilon_spent

#: The policy's file in a site folder.
POLICY_FILE = "policy.yaml"


@dataclass(frozen=True)
class SitePolicy:
    """What a site requires of a run (every field optional: no rule)."""

    require_secagg: bool = False
    max_epsilon: float | None = None
    max_delta: float | None = None
    accountant: str = "pld"
    objectives: tuple[str, ...] | None = None
    max_rounds: int | None = None
    require_approval: bool = False


@dataclass(frozen=True)
class RunTerms:
    """What a site is asked to take part in: no data, only the run's settings.

    Parameters
    ----------
    run_name
        The coordinator's name of the run (shown to the operator; not part of :meth:`digest`).
    algorithm
        The rounds' algorithm (``fedcare``, ``fedxgb``, …).
    objectives
        The objectives the run's model predicts.
    rounds
        T, the rounds planned.
    secagg
        Whether each round is summed by secure aggregation.
    noise_multiplier, delta
        Client-level DP's z and δ (None: no DP).
    """

    run_name: str
    algorithm: str
    objectives: tuple[str, ...]
    rounds: int
    secagg: bool
    noise_multiplier: float | None = None
    delta: float | None = None

    def digest(self) -> str:
        """SHA-256 of the terms without the run's name: what an approval binds to."""
        doc = {k: v for k, v in asdict(self).items() if k != "run_name"}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def to_json(self) -> str:
        """The terms as JSON (the handshake carries them)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunTerms:
        """Inverse of :meth:`to_json`; raises ValueError on anything else."""
        raw = json.loads(text)
        if not isinstance(raw, dict) or set(raw) != {f.name for f in fields(cls)}:
            raise ValueError("run terms: unexpected fields")
        z, delta = raw["noise_multiplier"], raw["delta"]
        return cls(
            run_name=str(raw["run_name"]),
            algorithm=str(raw["algorithm"]),
            objectives=tuple(str(o) for o in raw["objectives"]),
            rounds=int(raw["rounds"]),
            secagg=bool(raw["secagg"]),
            noise_multiplier=None if z is None else float(z),
            delta=None if delta is None else float(delta),
        )

    def epsilon(self, accountant: str) -> float:
        """ε the planned rounds spend by ``accountant`` (∞ without DP)."""
        if self.noise_multiplier is None or self.delta is None:
            return math.inf
        return epsilon_spent(self.noise_multiplier, self.rounds, self.delta, accountant)


def terms_of(
    stage1: Stage1Config, *, run_name: str, algorithm: str, objectives: tuple[str, ...]
) -> RunTerms:
    """The terms of a run of these Stage 1 settings.

    The coordinator's plan and a site reading a training instruction both call it: the same
    settings give the same terms and digest.
    """
    dp = stage1.privacy()
    return RunTerms(
        run_name=run_name,
        algorithm=algorithm,
        objectives=objectives,
        rounds=stage1.rounds,
        secagg=stage1.secagg,
        noise_multiplier=None if dp is None else dp.noise_multiplier,
        delta=None if dp is None else dp.delta,
    )


@dataclass(frozen=True)
class Refusal:
    """Why a site refuses a run: the policy's rule (its key) and a sentence."""

    rule: str
    reason: str


def check_terms(policy: SitePolicy, terms: RunTerms) -> Refusal | None:
    """The first rule of ``policy`` that ``terms`` break (approval aside), or None."""
    if policy.require_secagg and not terms.secagg:
        return Refusal("require_secagg", "it requires secure aggregation (SecAgg+)")
    if policy.max_rounds is not None and terms.rounds > policy.max_rounds:
        return Refusal(
            "max_rounds", f"it allows at most {policy.max_rounds} rounds, not {terms.rounds}"
        )
    if policy.objectives is not None:
        outside = sorted(set(terms.objectives) - set(policy.objectives))
        if outside:
            return Refusal("objectives", f"it does not take part in models of {', '.join(outside)}")
    if policy.max_epsilon is not None:
        spent = terms.epsilon(policy.accountant)
        if spent > policy.max_epsilon:
            said = "no differential privacy" if math.isinf(spent) else f"ε = {spent:.4g}"
            return Refusal(
                "max_epsilon",
                f"it caps ε at {policy.max_epsilon:g} ({policy.accountant}); the run has {said}",
            )
    if policy.max_delta is not None and (terms.delta is None or terms.delta > policy.max_delta):
        return Refusal("max_delta", f"it caps δ at {policy.max_delta:g}; the run has {terms.delta}")
    return None


def read_policy(path: Path) -> SitePolicy | None:
    """The policy in ``path`` (None: no file, no rule).

    Raises
    ------
    ConfigError
        Naming the file and the key: unreadable YAML, an unknown key, or a value of the wrong
        type or range.
    """
    import yaml

    from fedcare_core.files.safe_yaml import YamlLimitError, read_yaml_file

    if not path.exists():
        return None
    try:
        raw = read_yaml_file(path) or {}
    except YamlLimitError as exc:
        raise ConfigError(f"site policy {path}: refused, {exc}") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"site policy {path}: not readable YAML ({type(exc).__name__})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"site policy {path}: a mapping of rules, e.g. 'require_secagg: true'")
    known = {f.name for f in fields(SitePolicy)}
    unknown = sorted(str(k) for k in raw if k not in known)
    if unknown:
        raise ConfigError(
            f"site policy {path}: unknown key(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}"
        )
    return SitePolicy(**{k: _value(path, k, v) for k, v in raw.items()})


def _value(path: Path, key: str, value: Any) -> Any:
    where = f"site policy {path}: {key}"
    if key in ("require_secagg", "require_approval"):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if key in ("max_epsilon", "max_delta"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value <= 0 or (key == "max_delta" and value >= 1):
            bound = "in (0, 1)" if key == "max_delta" else "a positive number"
            raise ConfigError(f"{where} must be {bound}, got {value!r}")
        return float(value)
    if key == "max_rounds":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{where} must be a whole number ≥ 1, got {value!r}")
        return value
    if key == "accountant":
        if value not in ACCOUNTANTS:
            raise ConfigError(f"{where} must be one of {', '.join(ACCOUNTANTS)}, got {value!r}")
        return value
    if not isinstance(value, list) or not value or not all(isinstance(o, str) and o for o in value):
        raise ConfigError(f"{where} must be a non-empty list of objective names, got {value!r}")
    return tuple(value)
