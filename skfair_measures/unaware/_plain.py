"""Plain-Python conversion of the unawareness results (for ``to_dict`` and JSON)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


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
    if isinstance(obj, (pd.Series, pd.Index)):
        return plain(obj.tolist())
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, float) and np.isnan(obj):
        return None
    return obj
