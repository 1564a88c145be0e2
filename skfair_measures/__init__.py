"""skfair-measures: composable fairness measures for scikit-learn.

A fairness measure is a *base metric* computed in every group (``tpr``, ``fpr``,
``acc``, ``mse``, or any scikit-learn metric) and an *operation* comparing the
groups (``absdiff``, ``ratio``, ``diff_to_reference``, ...). ``msr(key)`` returns
the measures of mlr3fairness' table; ``fairness_scorer(m)`` makes any of them a
scikit-learn scorer.

Examples
--------
>>> import skfair_measures as sfm
>>> m = sfm.msr("fairness.tpr")
>>> m([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=["a", "a", "b", "b"])
0.5

``import skfair_measures`` loads neither PyMC, matplotlib, MLflow nor QuaPy: the
subpackages ``bayes`` and ``plots`` are imported explicitly, and ``unaware`` (whose
measures have registry keys) loads QuaPy only when a quantifier needs it.
"""

# Every public name is listed once, in ``__init__.pyi``: type checkers read its imports as the package's types,
# and lazy_loader (Scientific Python's SPEC 1) reads the same file here to load each name on first use (PEP 562),
# so ``import skfair_measures`` (and ``skfair --help``) costs milliseconds, not the import of scikit-learn. A map
# here beside typing-only imports and ``__all__`` listed every name three times, free to drift apart.
# Imported under private names: the namespace holds only the public names (and dunders).
from importlib import import_module as _import_module
from importlib.util import find_spec as _find_spec

import lazy_loader as _lazy

_load, _, __all__ = _lazy.attach_stub(__name__, __file__)
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """A public name, or a submodule (``sfm.registry``, ``sfm.bayes``, ...), imported on first use."""
    if name in __all__ or name.startswith("__") or _find_spec(f"{__name__}.{name}") is None:
        return _load(name)  # an AttributeError for any other name
    return _import_module(f".{name}", __name__)


def __dir__() -> list[str]:
    """The public names only (``__all__``, ``__version__``): no import helpers, no submodules loaded on the way."""
    return sorted([*__all__, "__version__"])
