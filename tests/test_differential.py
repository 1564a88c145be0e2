"""One answer everywhere: every entry point gives the same outcome on hostile but valid inputs.

Hypothesis generates small samples with the edges users meet: pandas Categoricals with
unused levels, declared groups absent from the data, groups of one row, string, integer,
{-1, 1} and boolean labels with either ``pos_label``, three classes with a class missing
from ``y_true`` (a cross-validation fold), class means and declared ``labels=``, zero and
fractional weights, scores with ``threshold=`` (some exactly at it), small groups dropped
or merged, undefined groups propagated or dropped. ``DOORS`` maps each entry point to a
function from a case to its value and reason; :func:`_observe` turns that (or the door's
warnings, or its error) into an :class:`Outcome`. Every door must give what the reference
door, ``Measure.evaluate``, gives: the same value, or NaN for the same undefined groups
and reasons, or an error of the same class. A new entry point joins with one row of the
table.

Cases a door cannot express (the CLI has no weights, ``groupwise_metrics`` no declared
groups) raise :class:`Inapplicable` and are not compared. Known disagreements that are
being fixed elsewhere are listed in ``KNOWN``, recognised by their symptom: the property
excuses those, and a strict ``xfail`` test per entry shows the defect on one concrete
case, so a fix turns it into an unexpected pass and the entry must go.

The suite catches a broken door: summing the weights of a cell with ``max`` instead of
``sum`` in the engines' grouped aggregation made the DuckDB door disagree on the first
weighted case, and ``score > threshold`` instead of ``>=`` in the pandas/Dask engine
made the Dask door disagree on a score at the threshold.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import math
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import cross_validate

import skfair_measures as sfm
from skfair_measures import engines
from skfair_measures.cli import main as cli_main

# -- the cases ----------------------------------------------------------------------------
KEYS = (
    "fairness.tpr",
    "fairness.fpr",
    "fairness.ppv",
    "fairness.acc",
    "fairness.cv",
    "fairness.eod",
    "fairness.dp_ratio",
)
LABELS = {
    "int": (0, 1),
    "pm1": (-1, 1),
    "bool": (False, True),
    "str": ("no", "yes"),
    "3int": (0, 1, 2),  # multiclass: y_true may miss a class, as in a cross-validation fold
    "3str": ("cat", "dog", "emu"),
}
AVERAGED = {"fairness.tpr", "fairness.fpr", "fairness.ppv", "fairness.eod"}  # rates with a class mean
COMPANION = "classif.acc"  # evaluated beside the case's measure by evaluate_measures: it compares no groups
GROUP_NAMES = ("a", "b", "NA")  # "NA" is a group, not a missing value, in every door


@dataclass(frozen=True)
class Case:
    """One generated sample and one measure configuration."""

    key: str
    scheme: str
    y_true: tuple
    y_pred: tuple
    groups: tuple[str, ...]
    categories: tuple[str, ...] | None = None  # a pandas Categorical with these levels (some unused)
    pos_label: Any = None
    weights: tuple[float, ...] | None = None
    declared: tuple[str, ...] | None = None
    min_group_size: int | None = None
    small_groups: str = "drop"
    undefined: str = "propagate"
    average: str | None = None  # multiclass: "macro" or "weighted" instead of one class against the rest
    labels: tuple | None = None  # multiclass: the declared classes
    threshold: float | None = None  # binary: y_pred holds scores, predicted positive when score >= threshold

    def measure(self) -> sfm.Measure:
        """The measure of the case, configured through the public overrides."""
        m = sfm.msr(self.key) if self.average is None else sfm.msr(self.key, average=self.average)
        options: dict[str, Any] = {"undefined": self.undefined}
        if self.labels is not None:
            options["labels"] = list(self.labels)
        if self.threshold is not None:
            options["threshold"] = self.threshold
        if self.pos_label is not None:
            options["pos_label"] = self.pos_label
        if self.declared is not None:
            options["groups"] = list(self.declared)
        m = m.with_inputs(**options)
        if self.min_group_size is not None:
            m = m.with_inputs(min_group_size=self.min_group_size, small_groups=self.small_groups)
        return m

    def sensitive(self) -> pd.Series | np.ndarray:
        if self.categories is None:
            return np.asarray(self.groups, dtype=object)
        return pd.Series(pd.Categorical(self.groups, categories=list(self.categories)), name="s")

    def sample_weight(self) -> np.ndarray | None:
        return None if self.weights is None else np.asarray(self.weights, dtype=float)

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"y": list(self.y_true), "p": list(self.y_pred)})
        df["s"] = self.sensitive() if self.categories is not None else list(self.groups)
        if self.weights is not None:
            df["w"] = list(self.weights)
        return df

    @property
    def simple(self) -> bool:
        """No declared groups or classes, no small-group rule, no class mean: what the narrower doors can express."""
        return self.declared is None and self.min_group_size is None and self.labels is None and self.average is None


@st.composite
def cases(draw: st.DrawFn) -> Case:
    n = draw(st.integers(2, 14))
    scheme = draw(st.sampled_from(sorted(LABELS)))
    values = LABELS[scheme]
    present = values if len(values) == 2 else draw(st.sampled_from([values, values[:2], values[1:], values[::2]]))
    y_true = tuple(draw(st.lists(st.sampled_from(present), min_size=n, max_size=n)))
    threshold = None
    if len(values) == 2 and draw(st.integers(0, 3)) == 0:
        # scores on exact binary fractions (a CSV keeps them), some exactly at the threshold
        threshold = draw(st.sampled_from([0.25, 0.5]))
        y_pred = tuple(draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=n, max_size=n)))
    else:
        y_pred = tuple(draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)))
    names = draw(st.sampled_from([GROUP_NAMES[:2], GROUP_NAMES]))
    groups = tuple(draw(st.lists(st.sampled_from(names), min_size=n, max_size=n)))
    observed = sorted(set(groups))
    categories = None
    if draw(st.booleans()):
        categories = tuple(draw(st.permutations([*observed, "unused"])))
    # without pos_label, string classes imply no positive one: accuracy still has a value, a rate is refused
    pos_label = draw(st.sampled_from([None, *values]))
    key = draw(st.sampled_from(KEYS))
    average = labels = None
    if len(values) > 2:
        if pos_label is None and key in AVERAGED:
            average = draw(st.sampled_from([None, "macro", "weighted"]))
        labels = draw(st.sampled_from([None, values]))
    weights = None
    if draw(st.booleans()):
        weights = tuple(draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.5]), min_size=n, max_size=n)))
        if draw(st.booleans()):  # a group whose rows all weigh 0: undefined because of its weights
            weightless = draw(st.sampled_from(observed))
            weights = tuple(0.0 if g == weightless else w for g, w in zip(groups, weights, strict=True))
    declared = tuple([*observed, "absent"]) if draw(st.integers(0, 3)) == 0 else None
    min_group_size, small_groups = None, "drop"
    if draw(st.integers(0, 3)) == 0:
        min_group_size = draw(st.integers(2, 4))
        small_groups = draw(st.sampled_from(["drop", "merge"]))
    return Case(
        key=key,
        scheme=scheme,
        y_true=y_true,
        y_pred=y_pred,
        groups=groups,
        categories=categories,
        pos_label=pos_label,
        weights=weights,
        declared=declared,
        min_group_size=min_group_size,
        small_groups=small_groups,
        undefined=draw(st.sampled_from(["propagate", "drop"])),
        average=average,
        labels=labels,
        threshold=threshold,
    )


# -- outcomes -----------------------------------------------------------------------------
_UNDEFINED = re.compile(r"(\w+) is undefined for group\(s\) (\[.*?\]) \(([^)]*)\)")


def _fragments(text: str) -> frozenset[tuple[str, tuple[str, ...], str]]:
    """The (rate, groups, why) statements of an undefined-value reason or warning.

    The groups are compared as a set: doors may list them in another order (a
    Categorical's level order, or sorted).
    """
    found = _UNDEFINED.findall(text)
    return frozenset((rate, tuple(sorted(map(repr, ast.literal_eval(groups)))), why) for rate, groups, why in found)


@dataclass(frozen=True)
class Outcome:
    """What a door answered: a value (NaN with its reasons) or an error class."""

    value: float | None = None
    reasons: frozenset | None = None  # from the door's reason; None when it gives none (only warns)
    warned: frozenset | None = None  # from its warnings; None when it does not warn (prints, logs)
    error: str | None = None  # exception class name; "" when the door only says that it failed
    message: str = ""

    def describe(self) -> str:
        if self.error is not None:
            return f"error {self.error or '(unnamed)'}: {self.message[:300]}"
        reasons = None if self.reasons is None else sorted(self.reasons)
        warned = None if self.warned is None else sorted(self.warned)
        return f"value {self.value!r} reasons {reasons} warned {warned}"


class Inapplicable(Exception):
    """The door cannot express this case (not a disagreement)."""


def _observe(name: str, case: Case) -> Outcome:
    """Run a door, turning its value, reason (or warnings when it gives none) or error into an Outcome."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value, reason = DOORS[name](case)
        except Inapplicable:
            raise
        except _DoorError as e:
            return Outcome(error=e.error, message=str(e))
        except Exception as e:  # noqa: BLE001 - the class is the outcome
            return Outcome(error=type(e).__name__, message=str(e))
    value = float(value)
    if not math.isnan(value):
        return Outcome(value=value)
    # the warnings about this measure, not about the companion that a door may evaluate beside it
    mine = " ".join(str(w.message) for w in caught if COMPANION not in str(w.message))
    warned = None if name in SILENT else _fragments(mine)
    return Outcome(value=value, reasons=None if reason is None else _fragments(reason), warned=warned)


class _DoorError(Exception):
    """A door reports an error in its own terms (an exit status, a NaN with a warning).

    ``error`` is the class the door documents it stands for, or "" when it names none.
    """

    def __init__(self, message: str, error: str = ""):
        super().__init__(message)
        self.error = error


# -- the doors ----------------------------------------------------------------------------
def _result(res: Any) -> tuple[float, str | None]:
    return res.value, res.reason or ""


def door_evaluate(case: Case) -> tuple[float, str | None]:
    m = case.measure()
    return _result(
        m.evaluate(case.y_true, case.y_pred, sensitive_features=case.sensitive(), sample_weight=case.sample_weight())
    )


def door_call(case: Case) -> tuple[float, str | None]:
    m = case.measure()
    return m(case.y_true, case.y_pred, sensitive_features=case.sensitive(), sample_weight=case.sample_weight()), None


def door_evaluate_measures(case: Case) -> tuple[float, str | None]:
    m = case.measure()
    # a companion that compares no groups, sharing the sample: one pass serves both
    acc = sfm.msr(COMPANION).with_inputs(pos_label=case.pos_label, labels=case.labels, threshold=case.threshold)
    res = sfm.evaluate_measures(
        [m, acc],
        list(case.y_true),
        list(case.y_pred),
        sensitive_features=case.sensitive(),
        sample_weight=case.sample_weight(),
    )
    return _result(res[m.key])


# key -> (groupwise metric, reduction): the measures that are one base metric and one reduction
_GROUPWISE = {
    "fairness.tpr": ("tpr", "difference"),
    "fairness.fpr": ("fpr", "difference"),
    "fairness.ppv": ("ppv", "difference"),
    "fairness.acc": ("acc", "difference"),
    "fairness.cv": ("selection_rate", "difference"),
    "fairness.dp_ratio": ("selection_rate", "ratio"),
}


def door_groupwise(case: Case) -> tuple[float, str | None]:
    if (
        case.key not in _GROUPWISE
        or case.declared
        or case.min_group_size
        or case.undefined != "propagate"
        or case.threshold is not None
    ):
        raise Inapplicable
    metric, reduction = _GROUPWISE[case.key]
    gm = sfm.groupwise_metrics(
        [metric],
        list(case.y_true),
        list(case.y_pred),
        sensitive_features=case.sensitive(),
        sample_weight=case.sample_weight(),
        pos_label=case.pos_label,
        average=case.average,
        labels=case.labels,
    )
    (value,) = getattr(gm, reduction)()  # one metric (named after its class mean, if any)
    return value, None


class _FixedPredictions(ClassifierMixin, BaseEstimator):
    """Predicts the case's stored predictions (or scores) for the row numbers in X's column ``row``.

    Its classes are the case's label values, whatever a fold holds; ``predict_proba`` gives
    the stored score to the positive class (``pos_label``, by default the last class).
    """

    def __init__(self, predictions: tuple = (), classes: tuple = (), pos_label: Any = None):
        self.predictions = predictions
        self.classes = classes
        self.pos_label = pos_label

    def fit(self, X: Any, y: Any) -> _FixedPredictions:
        self.classes_ = np.asarray(sorted(self.classes))
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.asarray(self.predictions)[X["row"].to_numpy()]

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        score = self.predict(X).astype(float)
        pos = list(self.classes_).index(self.classes_[-1] if self.pos_label is None else self.pos_label)
        return np.column_stack([score if k == pos else 1.0 - score for k in range(len(self.classes_))])


def _cv_door(make_scorer: Callable[[sfm.Measure], Any]) -> Callable[[Case], tuple[float, str | None]]:
    """A scorer inside ``cross_validate`` with routing, on one fold that holds every row."""

    def door(case: Case) -> tuple[float, str | None]:
        m = case.measure()
        X = pd.DataFrame({"row": np.arange(len(case.y_true))})
        y = np.asarray(case.y_true)
        params: dict[str, Any] = {"sensitive_features": case.sensitive()}
        everything = np.arange(len(y))
        with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scorer = make_scorer(m)
            if case.weights is not None:
                scorer = scorer.set_score_request(sample_weight=True)
                params["sample_weight"] = case.sample_weight()
            model = _FixedPredictions(case.y_pred, LABELS[case.scheme], case.pos_label)
            cv = cross_validate(
                model, X, y, cv=[(everything, everything)], scoring=scorer, params=params, error_score="raise"
            )
        for w in caught:
            # docs/small_groups.md: a fold with fewer than two groups is NaN with this warning, not an error
            if ": NaN for this fold: " in str(w.message):
                raise _DoorError(str(w.message), "SingleGroupError")
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        score = float(cv[f"test_{m.key}" if f"test_{m.key}" in cv else "test_score"][0])
        return (score if m.greater_is_better else -score), None

    return door


def door_evaluate_measures_on_a_frame(case: Case) -> tuple[float, str | None]:
    """``sfm.evaluate_measures(..., data=frame)`` with column names, on polars: the engine path with a reason."""
    m = case.measure()
    res = sfm.evaluate_measures(
        [m],
        "y",
        "p",
        sensitive_features="s",
        data=_polars(case.frame()),
        sample_weight=None if case.weights is None else "w",
    )
    return _result(res[m.key])


def _engine_door(convert: Callable[[pd.DataFrame], Any]) -> Callable[[Case], tuple[float, str | None]]:
    def door(case: Case) -> tuple[float, str | None]:
        m = case.measure()
        data = convert(case.frame())
        out = engines.compute_metrics(data, "y", "p", "s", [m], sample_weight=None if case.weights is None else "w")
        return out[m.key], None

    return door


def _polars(df: pd.DataFrame) -> Any:
    import polars as pl

    return pl.from_pandas(df)


def _pyarrow(df: pd.DataFrame) -> Any:
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False)


def _duckdb(df: pd.DataFrame) -> Any:
    import duckdb

    return duckdb.from_arrow(_pyarrow(df))


def _dask(df: pd.DataFrame) -> Any:
    import dask.dataframe as dd

    return dd.from_pandas(df, npartitions=2)


_SPARK: dict[str, Any] = {}  # the session of the Spark door (set by test_spark_door_agrees)


def _spark(df: pd.DataFrame) -> Any:
    """A Spark frame built from plain rows: levels become strings, as a Categorical written to Parquet reads back."""
    types = {"b": "boolean", "i": "bigint", "f": "double"}
    schema = ", ".join(f"{c} {types.get(df[c].dtype.kind, 'string')}" for c in df)
    rows = [tuple(r) for r in df.astype(object).itertuples(index=False)]
    if "session" not in _SPARK:
        raise Inapplicable  # only test_spark_door_agrees starts (or reuses) the session
    return _SPARK["session"].createDataFrame(rows, schema=schema)


def door_bootstrap(case: Case) -> tuple[float, str | None]:
    res = sfm.bootstrap(
        case.measure(),
        case.y_true,
        case.y_pred,
        sensitive_features=case.sensitive(),
        sample_weight=case.sample_weight(),
        n_boot=3,
        random_state=0,
    )
    return res.estimate, res.reason or ""


def door_bootstraps(case: Case) -> tuple[float, str | None]:
    """The joint bootstrap (shared replicates, for verdicts across measures) with accuracy parity beside.

    The companion (overall accuracy) reads the same groups (the joint bootstrap refuses
    others) and its own labelling (the classes, where the case's rate may read one class
    against the rest); it compares no groups, so it warns of none.
    """
    measure = case.measure()
    acc = dataclasses.replace(case, key=COMPANION, average=None).measure()
    res = sfm.bootstraps(
        [measure, acc],
        case.y_true,
        case.y_pred,
        sensitive_features=case.sensitive(),
        sample_weight=case.sample_weight(),
        n_boot=3,
        random_state=0,
    )[measure.key]
    return res.estimate, res.reason or ""


def door_cli(case: Case) -> tuple[float, str | None]:
    """``skfair audit`` on a CSV of the case, read from its printed table (four decimals)."""
    if case.weights is not None or not case.simple:
        raise Inapplicable
    if case.threshold is None and len(set(case.y_true) | set(case.y_pred)) > 2:
        # skfair audit reads binary outcomes (its intervals and posteriors are of 0/1 rates) and refuses a third
        # class naming --pos-label, where a measure call gives the multiclass accuracy (labels 1 and 2, all
        # predicted 0: hypothesis found it)
        raise Inapplicable
    argv = [
        "audit",
        "",
        "--sensitive",
        "s",
        "--label",
        "y",
        "--measures",
        case.key,
        "--undefined",
        case.undefined,
        "--no-progress",
    ]
    if case.threshold is None:
        argv += ["--prediction", "p"]
    else:  # no prediction column: the CLI predicts score >= --threshold
        argv += ["--score", "p", "--threshold", str(case.threshold)]
    if case.pos_label is not None:
        argv += ["--pos-label", str(case.pos_label)]
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as tmp:
        argv[1] = str(Path(tmp) / "case.csv")
        case.frame().to_csv(argv[1], index=False)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli_main(argv)
    if status != 0:
        raise _DoorError(err.getvalue())
    text = out.getvalue()
    # the table's row (the headline above it also starts with the key, followed by words)
    number = r"[-+]?(?:\d+\.\d*|nan|inf)"
    row = re.search(rf"^\s*{re.escape(case.key)}\s+(undefined \[(\d+)\]|{number})", text, flags=re.MULTILINE)
    assert row is not None, f"no row for {case.key} in:\n{text}"
    if row.group(2) is not None:  # undefined [k]: its reason is printed below the table as "[k] key: reason"
        reason = re.search(rf"^\[{row.group(2)}\] {re.escape(case.key)}: (.*)$", text, flags=re.MULTILINE)
        assert reason is not None, f"no reason [{row.group(2)}] in:\n{text}"
        return math.nan, reason.group(1)
    return float(row.group(1)), None


_STORE: dict[str, str] = {}  # the MLflow file store of this module (set by the fixture below)


def door_mlflow(case: Case) -> tuple[float, str | None]:
    """``log_fairness`` of the measure's result into a file store, read back from the store."""
    import mlflow
    from skfair_measures_mlflow import log_fairness

    m = case.measure()
    res = m.evaluate(case.y_true, case.y_pred, sensitive_features=case.sensitive(), sample_weight=case.sample_weight())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the result already warned; the store is what is compared
        with mlflow.start_run(experiment_id=_STORE["experiment"]) as run:
            logged = log_fairness(res)
    assert logged.logged, logged.error
    (key,) = [k for k, v in logged.key_map.items() if v.get("quantity") == "value" and v["result"] == m.key]
    data = mlflow.MlflowClient().get_run(run.info.run_id).data
    return data.metrics[key], data.tags.get(f"{key}.undefined", "")


@pytest.fixture(scope="module", autouse=True)
def mlflow_file_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A file store (``file:`` tracking URI) in a temporary folder for the MLflow door."""
    mlflow = pytest.importorskip("mlflow")
    old_env, old_uri = os.environ.get("MLFLOW_ALLOW_FILE_STORE"), mlflow.get_tracking_uri()
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3 refuses file stores otherwise
    mlflow.set_tracking_uri((tmp_path_factory.mktemp("mlruns") / "store").as_uri())
    _STORE["experiment"] = mlflow.create_experiment("differential")
    yield
    mlflow.set_tracking_uri(old_uri)
    if old_env is None:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE")
    else:
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = old_env


ENGINES = (
    "engine-pandas",
    "engine-polars",
    "engine-polars-lazy",
    "engine-pyarrow",
    "engine-duckdb",
    "engine-dask",
    "engine-spark",
    "evaluate_measures(data=polars)",
)
DOORS: dict[str, Callable[[Case], tuple[float, str | None]]] = {
    "evaluate": door_evaluate,  # the reference
    "call": door_call,
    "evaluate_measures": door_evaluate_measures,
    "groupwise_metrics": door_groupwise,
    # a scorer that returns a dict takes error_score itself (docs/scoring.md): "raise", as cross_validate's below
    "cross_validate(make_scorers)": _cv_door(lambda m: sfm.make_scorers([m], error_score="raise")),
    "cross_validate(fairness_scorer)": _cv_door(sfm.fairness_scorer),
    "engine-pandas": _engine_door(lambda df: df),
    "engine-polars": _engine_door(_polars),
    "engine-polars-lazy": _engine_door(lambda df: _polars(df).lazy()),
    "evaluate_measures(data=polars)": door_evaluate_measures_on_a_frame,
    "engine-pyarrow": _engine_door(_pyarrow),
    "engine-duckdb": _engine_door(_duckdb),
    "engine-dask": _engine_door(_dask),
    "engine-spark": _engine_door(_spark),
    "bootstrap": door_bootstrap,
    "bootstraps": door_bootstraps,
    "cli": door_cli,
    "mlflow": door_mlflow,
}


# -- comparing ----------------------------------------------------------------------------
def _same(ref: Outcome, got: Outcome, tol: float = 1e-9) -> bool:
    if (ref.error is None) != (got.error is None):
        return False
    if ref.error is not None:
        return not ref.error or not got.error or ref.error == got.error
    if math.isnan(ref.value) or math.isnan(got.value):
        if not (math.isnan(ref.value) and math.isnan(got.value)):
            return False
        same_reasons = ref.reasons is None or got.reasons is None or ref.reasons == got.reasons
        return same_reasons and (ref.warned is None or got.warned is None or ref.warned == got.warned)
    return math.isclose(ref.value, got.value, rel_tol=tol, abs_tol=tol)


@dataclass(frozen=True)
class Known:
    """A disagreement of one door that is known and routed, recognised by its symptom.

    ``symptom(case, reference, door)`` says whether a disagreement is this defect, and
    ``example`` shows it (a strict xfail test below).
    """

    doors: tuple[str, ...]
    defect: str
    symptom: Callable[[Case, Outcome, Outcome], bool]
    example: Case


#: Every door agrees today; a disagreement found later is routed here until it is fixed.
KNOWN: tuple[Known, ...] = ()


def check_door(name: str, case: Case, known: bool = True) -> None:
    """Assert that door ``name`` agrees with ``Measure.evaluate`` on ``case`` (unless ``known`` excuses it)."""
    try:
        got = _observe(name, case)
    except Inapplicable:
        return
    ref = _observe("evaluate", case)
    if _same(ref, got, TOLERANCE.get(name, 1e-9)):
        return
    if known and any(name in k.doors and k.symptom(case, ref, got) for k in KNOWN):
        return
    raise AssertionError(
        f"door {name!r} disagrees with Measure.evaluate on {case!r}:\n"
        f"  evaluate: {ref.describe()}\n  {name}: {got.describe()}"
    )


TOLERANCE = {"cli": 5e-5}  # the CLI prints four decimals
SILENT = {"cli", "mlflow"}  # doors that report in print or in a run, not in Python warnings

_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


SLOW_DOORS = {"engine-spark"}  # a job per case: fewer cases, in their own test


_Y = (1, 1, 0, 1, 0, 0, 1, 1)
_P = (1, 0, 0, 1, 1, 0, 1, 0)
_G = ("a", "a", "a", "b", "b", "b", "NA", "NA")
# issue 18's cases, run on every door every time (hypothesis adds its own around them)
ISSUE_CASES = (
    # the normal result of df[df.sex != "X"]: a Categorical with an unused level
    Case("fairness.tpr", "int", _Y[:6], _P[:6], _G[:6], categories=("b", "X", "a")),
    Case("fairness.eod", "int", _Y[:6], _P[:6], _G[:6], categories=("a", "b", "X"), weights=(1, 0.5, 0, 2.5, 1, 1)),
    # small groups merged, a declared group absent (left out, not an empty "other")
    Case(
        "fairness.tpr", "int", _Y, _P, _G, declared=("a", "b", "NA", "absent"), min_group_size=3, small_groups="merge"
    ),
    # a 3-class model on a fold whose y_true holds two classes, the classes declared
    Case("fairness.tpr", "3int", (0, 1, 0, 1, 1, 0), (0, 2, 0, 1, 1, 2), _G[:6], average="macro", labels=(0, 1, 2)),
    # TPR with no positive label anywhere: undefined in every group
    Case("fairness.tpr", "int", (0,) * 6, (0, 1, 0, 1, 1, 0), _G[:6]),
    # a group whose sample weights are all 0: its reason names the weights, not its labels
    Case("fairness.tpr", "int", _Y[:6], _P[:6], _G[:6], weights=(1, 0.5, 2, 0, 0, 0)),
    Case("fairness.acc", "int", _Y[:6], _P[:6], _G[:6], weights=(0, 0, 0, 1, 1, 2)),
    # string labels, the positive class the first one; a score exactly at the threshold
    Case(
        "fairness.fpr",
        "str",
        ("no", "yes", "yes", "no", "no", "yes"),
        (0.5, 0.25, 0.75, 0.5, 0.0, 1.0),
        _G[:6],
        pos_label="no",
        threshold=0.5,
    ),
    # string labels without pos_label: accuracy does not depend on which class is positive
    Case(
        "fairness.acc", "str", ("no", "yes", "yes", "no", "no", "yes"), ("no", "no", "yes", "yes", "no", "yes"), _G[:6]
    ),
    Case(
        "fairness.tpr", "str", ("no", "yes", "yes", "no", "no", "yes"), ("no", "no", "yes", "yes", "no", "yes"), _G[:6]
    ),
    # three classes, pos_label the class a bootstrap replicate may not draw (all weights 0): the replicate
    # keeps the sample's classes instead of refusing pos_label=0 as "not one of the labels [1, 2]"
    Case(
        "fairness.tpr",
        "3int",
        (1, 0, 0, 1, 1, 1),
        (1, 0, 0, 1, 1, 2),
        ("a",) * 6,
        pos_label=0,
        weights=(0.0,) * 6,
        declared=("a", "absent"),
    ),
    # the only 2 is in a dropped small group: the classes are still those of every row ([0, 2], pos_label needed)
    # in memory as in the engines, which count before they drop
    Case(
        "fairness.tpr",
        "3int",
        (0,) * 6,
        (0, 2, 0, 0, 0, 0),
        ("b", "a", "b", "b", "NA", "NA"),
        declared=("NA", "a", "b", "absent"),
        min_group_size=2,
        small_groups="drop",
    ),
)


def _with_issue_cases(test: Callable) -> Callable:
    for case in ISSUE_CASES:
        test = example(case=case)(test)
    return test


@pytest.mark.parametrize("door", sorted(set(DOORS) - {"evaluate"} - SLOW_DOORS))
@_SETTINGS
@_with_issue_cases
@given(case=cases())
def test_door_agrees_with_measure_evaluate(door: str, case: Case) -> None:
    check_door(door, case)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a Spark job per case
@given(case=cases())
def test_spark_door_agrees(spark: Any, case: Case) -> None:
    _SPARK["session"] = spark
    check_door("engine-spark", case)


@pytest.mark.parametrize(
    "known", [pytest.param(k, id=k.doors[0], marks=pytest.mark.xfail(strict=True, reason=k.defect)) for k in KNOWN]
)
def test_known_disagreement_still_there(known: Known) -> None:
    """Each KNOWN defect on its example; when it is fixed this passes, the strict xfail fails: drop the entry."""
    for door in known.doors:
        check_door(door, known.example, known=False)
