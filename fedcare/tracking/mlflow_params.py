"""Configuration → MLflow params: dotted keys, string values within MLflow's length limits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: Longest param value written. MLflow 3's SQL stores accept 6000 characters, but older tracking
#: servers reject more than 500; every FedCARE setting is far shorter, and the full
#: configuration is in ``results.json`` as well.
MAX_PARAM_VALUE_LENGTH = 500
#: Longest param key MLflow accepts.
_MAX_PARAM_KEY_LENGTH = 250
#: Appended to a value cut to fit.
TRUNCATION_MARK = "...[truncated]"


def param_value(value: Any, max_length: int = MAX_PARAM_VALUE_LENGTH) -> str:
    """Render one setting as a param string.

    Sequences and ``None`` are written as JSON (``[64, 32]``, ``null``), booleans as
    ``true``/``false``, everything else with ``str``; a value longer than ``max_length`` is cut
    and ends with :data:`TRUNCATION_MARK`.

    Parameters
    ----------
    value
        The setting.
    max_length
        Longest string returned.

    Returns
    -------
    str
        The param value.
    """
    if max_length <= len(TRUNCATION_MARK):
        raise ValueError(f"max_length must exceed {len(TRUNCATION_MARK)}, got {max_length}")
    if value is None or isinstance(value, bool | list | tuple):
        text = json.dumps(list(value) if isinstance(value, tuple) else value)
    else:
        text = str(value)
    if len(text) > max_length:
        text = text[: max_length - len(TRUNCATION_MARK)] + TRUNCATION_MARK
    return text


def flatten_params(
    config: Mapping[str, Any], prefix: str = "", max_length: int = MAX_PARAM_VALUE_LENGTH
) -> dict[str, str]:
    """Flatten a nested configuration into dotted MLflow params.

    ``{"stage1": {"global_lr": 0.01}}`` becomes ``{"stage1.global_lr": "0.01"}``.

    Parameters
    ----------
    config
        A nested dict, e.g. :meth:`fedcare_core.config.ExperimentConfig.to_dict`.
    prefix
        Prepended to every key (with a dot).
    max_length
        Longest value (see :func:`param_value`).

    Returns
    -------
    dict[str, str]
        Param key → value, keys sorted.

    Raises
    ------
    ValueError
        If a key would exceed MLflow's key length limit.
    """
    out: dict[str, str] = {}
    for key, value in config.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten_params(value, full, max_length))
            continue
        if len(full) > _MAX_PARAM_KEY_LENGTH:
            raise ValueError(f"param key longer than {_MAX_PARAM_KEY_LENGTH} characters: {full!r}")
        out[full] = param_value(value, max_length)
    return dict(sorted(out.items()))
