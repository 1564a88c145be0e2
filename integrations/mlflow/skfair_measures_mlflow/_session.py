"""Talking to MLflow without ever losing a computed result.

Every call this package makes to a tracking server goes through one
:class:`TrackingSession`. The session

- probes an HTTP tracking server once, with a short timeout, before the first call
  (a dead server such as ``http://127.0.0.1:9`` is found in milliseconds instead of
  after MLflow's four minutes of retries);
- bounds MLflow's own HTTP timeout and retries while it runs (the user's
  ``MLFLOW_HTTP_REQUEST_TIMEOUT`` / ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` win when set);
- turns the first failure into one :class:`FairnessLoggingWarning` and skips every
  later call, so a failure in the middle of a cross-validation costs the logging,
  never the fitted folds or the computed values.

This module imports MLflow only inside functions.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

__all__ = ["DEFAULT_TIMEOUT", "FairnessLoggingWarning", "TrackingSession", "TrackingUnreachableError", "probe"]

#: Seconds to wait for the tracking server, per request (settable per call with ``timeout=``).
DEFAULT_TIMEOUT = 10.0
#: MLflow's HTTP retries while a session runs, unless the user set ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``.
BOUNDED_RETRIES = 1

T = TypeVar("T")


class FairnessLoggingWarning(UserWarning):
    """Logging to MLflow failed (or was partial); the computed values are kept."""


class TrackingUnreachableError(ConnectionError):
    """The tracking server did not answer within the timeout."""


def probe(uri: str, timeout: float) -> None:
    """Check that an HTTP(S) tracking server accepts connections; raise if not.

    Other tracking URIs (``sqlite:``, ``file:``, plain paths, ``databricks``) are
    not probed: they are local, or their client has its own checks.

    Parameters
    ----------
    uri : str
        The tracking URI, e.g. ``mlflow.get_tracking_uri()``.
    timeout : float
        Seconds to wait for the TCP connection.

    Raises
    ------
    TrackingUnreachableError
        Naming the URI, the reason and the ways out.

    Examples
    --------
    >>> probe("sqlite:///mlflow.db", timeout=1.0)  # local: nothing to probe
    >>> probe("http://127.0.0.1:9", timeout=1.0)
    Traceback (most recent call last):
    ...
    skfair_measures_mlflow._session.TrackingUnreachableError: the MLflow tracking server at http://127.0.0.1:9 ...
    """
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return
    except OSError as exc:
        raise TrackingUnreachableError(
            f"the MLflow tracking server at {uri} did not accept a connection within {timeout:g} s "
            f"({type(exc).__name__}: {exc}). Start the server, set another tracking URI "
            "(mlflow.set_tracking_uri), or pass a larger timeout=."
        ) from exc


@contextlib.contextmanager
def bounded_http(timeout: float) -> Iterator[None]:
    """Bound MLflow's per-request timeout and retries while the block runs.

    MLflow reads ``MLFLOW_HTTP_REQUEST_TIMEOUT`` (default 120 s) and
    ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` (default 7, with exponential backoff: about
    four minutes against a dead server) at every request. Values the user set
    are left alone.
    """
    wanted = {
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, math.ceil(timeout))),
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": str(BOUNDED_RETRIES),
    }
    mine = {k: v for k, v in wanted.items() if k not in os.environ}
    os.environ.update(mine)
    try:
        yield
    finally:
        for k in mine:
            os.environ.pop(k, None)


class TrackingSession:
    """One protected conversation with the tracking server.

    Parameters
    ----------
    what : str
        What is being logged, for the warning (``"log_fairness"``, ``"cross_validate_fairness"``).
    timeout : float, default=DEFAULT_TIMEOUT
        Seconds per request to the tracking server (also the reachability probe).

    Attributes
    ----------
    error : BaseException or None
        The first failure; after it, :meth:`call` skips everything.
    stage : str or None
        What was being done when it failed.

    Examples
    --------
    >>> s = TrackingSession("an example", timeout=1.0)
    >>> s.call("add", lambda a, b: a + b, 1, 2)
    3
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     s.call("divide", lambda: 1 / 0), s.call("add again", lambda: 1 + 1)
    (None, None)
    >>> len(caught), s.stage, s.ok
    (1, 'divide', False)
    """

    def __init__(self, what: str, *, timeout: float | None = None) -> None:
        self.what = what
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        if not self.timeout > 0:
            raise ValueError(f"timeout={timeout!r} must be a positive number of seconds.")
        self.error: BaseException | None = None
        self.stage: str | None = None
        self._probed = False

    @property
    def ok(self) -> bool:
        """True while nothing has failed."""
        return self.error is None

    def _probe_once(self) -> None:
        if not self._probed:
            import mlflow

            self._probed = True
            probe(mlflow.get_tracking_uri(), self.timeout)

    def call(self, stage: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """``fn(*args, **kwargs)``, or None once anything has failed (warning once)."""
        if self.error is not None:
            return None
        try:
            with bounded_http(self.timeout):
                self._probe_once()
                return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - logging must never cost a computed result
            self.fail(stage, exc)
            return None

    def fail(self, stage: str, exc: BaseException) -> None:
        """Record the first failure and warn about it (later ones are silent: they follow from it)."""
        if self.error is not None:
            return
        self.error, self.stage = exc, stage
        warnings.warn(
            f"{self.what}: could not {stage} in MLflow ({type(exc).__name__}: {exc}). Nothing more is "
            "sent to MLflow by this call; every computed value is kept in the returned object.",
            FairnessLoggingWarning,
            stacklevel=_outside_stacklevel(),
        )


def _outside_stacklevel() -> int:
    """The stack level of the first frame outside this package (for the warning's location)."""
    import sys

    frame, level = sys._getframe(1), 1
    here = os.path.dirname(__file__)
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1
    return level
