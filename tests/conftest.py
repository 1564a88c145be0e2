"""Fixtures shared by several test modules: sessions that are expensive to start are started once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# --doctest-modules would import this file a second time, as a module named "conftest" like
# integrations/mlflow/tests/conftest.py, and stop the collection on the name clash; it has no doctests.
collect_ignore = ["conftest.py"]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local PySpark session (2 cores) for the whole run: starting the JVM costs seconds.

    The driver JVM runs with the C1 compiler only and the serial collector, and adaptive
    query execution is off: the test frames have a few hundred rows, so the JVM's start-up
    and the planner, not the work, take the time (about a third less per test here).
    """
    pytest.importorskip("pyspark")
    from skfair_measures import engines

    engines.use_bundled_java(override=True)  # the pinned pair (PySpark 3.5, Java 17), whatever JAVA_HOME says
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("skfair-measures-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
