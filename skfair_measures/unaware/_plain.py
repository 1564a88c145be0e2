"""What the unawareness results share: reliability reasons, diagnostics, and their plain ``to_dict`` (JSON)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..uncertainty import ReplicatesResult


def _label(c: Any) -> str:
    return ",".join(str(x) for x in c) if isinstance(c, tuple) else str(c)


def plain(obj: Any) -> Any:
    """Convert numpy / pandas objects inside nested containers to plain Python; NaN -> None.

    Examples
    --------
    >>> plain({"a": np.float64(0.5), "b": np.array([1, 2]), "c": float("nan")})
    {'a': 0.5, 'b': [1, 2], 'c': None}
    """
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, pd.DataFrame):
        return {str(g): {_label(c): plain(v) for c, v in row.items()} for g, row in obj.iterrows()}
    if isinstance(obj, (pd.Series, pd.Index, np.ndarray, np.generic)):  # a numpy scalar's tolist() is its item()
        return plain(obj.tolist())
    return None if isinstance(obj, float) and np.isnan(obj) else obj


class UnawareResult(ReplicatesResult):
    """An estimate made without the sensitive attribute: ``value``, ``by_group``, ``reasons`` and ``diagnostics``.

    ``reliable`` is False when a reliability check failed (``reasons`` lists them) or
    the value is undefined; ``draws`` are the bootstrap replicates of ``value``, if any.
    Subclasses name their default key (``_default_key``).
    """

    kind = "estimate"
    _default_key = ""

    def __init__(
        self,
        value: float,
        by_group: pd.Series | pd.DataFrame,
        diagnostics: dict[str, Any] | None = None,
        *,
        draws: np.ndarray | None = None,
        reason: str | None = None,
        reasons: list[str] | None = None,
        key: str | None = None,
        measure: Any = None,
        prob: float = 0.95,
    ) -> None:
        self.key, self.prob, self.value, self.measure = key or self._default_key, prob, float(value), measure
        self.diagnostics, self.reasons = {} if diagnostics is None else diagnostics, list(reasons or [])
        self._by_group, self._reason, self._draws = by_group, reason, draws

    @property
    def reliable(self) -> bool:
        """Whether every reliability check passed and the value is defined."""
        return not self.reasons and not math.isnan(self.value)

    def to_dict(self) -> dict[str, Any]:
        """The result as plain Python types (JSON-serialisable), every group kept.

        Returns
        -------
        dict
            The keys of :meth:`Result.to_dict` plus ``reliable``, ``reasons``, ``interval``
            (with replicates) and ``diagnostics`` (the bootstrap's replicates left out).
        """
        out = super().to_dict()
        out.update(reliable=self.reliable, reasons=list(self.reasons))
        out["interval"] = None if self._draws is None else [plain(v) for v in self.interval()]
        diagnostics = {k: v for k, v in self.diagnostics.items() if k != "bootstrap"}
        if "bootstrap" in self.diagnostics:
            diagnostics["bootstrap"] = {k: v for k, v in self.diagnostics["bootstrap"].items() if k != "values"}
        out["diagnostics"] = plain(diagnostics)
        return out
