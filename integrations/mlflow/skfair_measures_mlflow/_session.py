"""The one timeout-and-retry policy of every call this package makes to MLflow.

Every entry point (``log_fairness``, ``log_monitor``, ``log_active_trajectory``,
``cross_validate_fairness``, the ``fairness`` evaluator) talks to the tracking service
through one :class:`TrackingSession`, which

- probes an HTTP tracking server once, with the timeout, before the first call (a dead
  port is found in milliseconds instead of after MLflow's four minutes of retries);
- bounds each request to the timeout with one retry while it runs (MLflow's
  ``MLFLOW_HTTP_REQUEST_TIMEOUT`` / ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``; values the user set
  win), so a server that accepts and never answers costs about twice the timeout;
- makes the client inside the protection too (a read-only ``file:`` store fails there);
- turns the first failure into one :class:`FairnessLoggingWarning` and skips every later
  call, so a failure costs the logging, never a computed value.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

__all__ = ["DEFAULT_TIMEOUT", "FairnessLoggingWarning", "TrackingSession", "TrackingUnreachableError", "probe"]

#: Seconds to wait for the tracking server, per request (settable per call with ``timeout=``).
DEFAULT_TIMEOUT = 10.0
#: MLflow's HTTP retries while a session runs, unless the user set ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``.
BOUNDED_RETRIES = 1
#: The experiment kind of classical model development, set on experiments we log into unless one is set.
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")

T = TypeVar("T")


class FairnessLoggingWarning(UserWarning):
    """Logging to MLflow failed (or was partial); the computed values are kept."""


class TrackingUnreachableError(ConnectionError):
    """The tracking server did not answer within the timeout."""


def probe(uri: str, timeout: float) -> None:
    """Check that an HTTP(S) tracking server accepts connections; raise if not (other URIs are not probed).

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
        with socket.create_connection((parts.hostname, port), timeout):
            return
    except OSError as exc:
        raise TrackingUnreachableError(
            f"the MLflow tracking server at {uri} did not accept a connection within {timeout:g} s "
            f"({type(exc).__name__}: {exc}). Start the server, set another tracking URI "
            "(mlflow.set_tracking_uri), or pass a larger timeout=."
        ) from exc


@contextlib.contextmanager
def bounded_http(timeout: float) -> Iterator[None]:
    """MLflow's per-request timeout and retries bounded while the block runs (the user's settings win)."""
    wanted = {"MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, math.ceil(timeout)))}
    wanted["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(BOUNDED_RETRIES)
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
        The entry point, for the warning (``"log_fairness"``).
    timeout : float, default=DEFAULT_TIMEOUT
        Seconds per request (and for the reachability probe).

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
        self._client: Any = None
        self._kinds: set[str] = set()

    @property
    def ok(self) -> bool:
        """True while nothing has failed."""
        return self.error is None

    def call(self, stage: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """``fn(*args, **kwargs)``, or None once anything has failed (warning once)."""
        if self.error is not None:
            return None
        try:
            with bounded_http(self.timeout):
                if not self._probed:
                    import mlflow

                    self._probed = True
                    probe(mlflow.get_tracking_uri(), self.timeout)
                return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - logging must never cost a computed result
            self.fail(stage, exc)
            return None

    @property
    def client(self) -> Any:
        """The ``MlflowClient``, made under the policy (None once anything has failed)."""
        if self._client is None:
            from mlflow.tracking import MlflowClient

            self._client = self.call("connect to the tracking store", MlflowClient)
        return self._client

    def run(self, run_id: str | None) -> Any:
        """The run ``run_id`` (default the active run, or a new one, as ``mlflow.log_metric`` does), or None.

        The run's experiment is tagged as classical model development unless it has a kind.
        """
        import mlflow

        def resolve() -> Any:
            if run_id is None:
                return mlflow.get_run((mlflow.active_run() or mlflow.start_run()).info.run_id)
            return self.client.get_run(run_id)

        run = self.call("start or find the run", resolve)
        if run is not None:
            self.tag_experiment(run.info.experiment_id)
        return run

    def tag_experiment(self, experiment_id: str) -> None:
        """Set ``mlflow.experimentKind`` on the experiment unless it is set (MLflow 3 then shows runs, not GenAI)."""
        if experiment_id in self._kinds or self.client is None:
            return
        self._kinds.add(experiment_id)
        exp = self.call("read the experiment", self.client.get_experiment, experiment_id)
        if exp is not None and EXPERIMENT_KIND[0] not in exp.tags:
            self.call("tag the experiment", self.client.set_experiment_tag, experiment_id, *EXPERIMENT_KIND)

    def fail(self, stage: str, exc: BaseException) -> None:
        """Record the first failure and warn about it (later ones follow from it)."""
        if self.error is not None:
            return
        self.error, self.stage = exc, stage
        warnings.warn(
            f"{self.what}: could not {stage} in MLflow ({type(exc).__name__}: {exc}). Nothing more is "
            "sent to MLflow by this call; every computed value is kept in the returned object.",
            FairnessLoggingWarning,
            stacklevel=_outside(),
        )


def _outside() -> int:
    """The stack level of the first frame outside this package (where the warning points)."""
    frame, level, here = sys._getframe(1), 1, os.path.dirname(__file__)
    while frame is not None and os.path.dirname(frame.f_code.co_filename) == here:
        frame, level = frame.f_back, level + 1
    return level
