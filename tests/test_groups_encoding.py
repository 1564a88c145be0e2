"""One group encoder: every door sees the same groups (categoricals, declared and absent groups, small groups)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import engines
from skfair_measures._groups import encode_groups, encode_known_groups
from skfair_measures._small_groups import SmallGroupWarning
from skfair_measures.groupwise import groupwise_metrics

rng = np.random.default_rng(7)
N = 400
SEX = rng.choice(["F", "M", "X"], N, p=[0.45, 0.45, 0.1])
Y = rng.integers(0, 2, N)
P = (rng.random(N) < np.where(SEX == "F", 0.4, 0.7)).astype(int)


def _filtered() -> pd.DataFrame:
    """What ``df[df.sex != "X"]`` leaves: a Categorical whose level 'X' is unused."""
    df = pd.DataFrame({"y": Y, "p": P, "sex": pd.Categorical(SEX)})
    return df[df.sex != "X"].reset_index(drop=True)


DF = _filtered()
# the right answer: the same rows with the sex column as plain strings (the groups that occur)
EXPECTED = sfm.msr("fairness.tpr")(DF.y, DF.p, sensitive_features=DF.sex.astype(str).to_numpy())


def _frame(kind: str):
    if kind == "pandas":
        return DF
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.from_pandas(DF)
    if kind == "polars_enum":
        pl = pytest.importorskip("polars")
        return pl.from_pandas(DF).with_columns(pl.col("sex").cast(pl.String).cast(pl.Enum(["F", "M", "X"])))
    if kind == "pyarrow":
        pa = pytest.importorskip("pyarrow")
        return pa.Table.from_pandas(DF)  # the Categorical becomes a dictionary column
    if kind == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        return duckdb.from_df(DF)
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(DF, npartitions=2)


def test_categorical_levels_are_not_groups():
    codes, groups = encode_groups(pd.Categorical(["b", "a", "b"], categories=["c", "b", "a"]))
    assert groups.tolist() == ["b", "a"]  # the categories' order, only those that occur
    assert codes.tolist() == [0, 1, 0]


def test_unused_category_gives_the_value_of_the_groups_that_occur():
    assert not np.isnan(EXPECTED)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no undefined group, no warning blaming y_true
        assert sfm.msr("fairness.tpr")(DF.y, DF.p, sensitive_features=DF.sex) == pytest.approx(EXPECTED)
        gm = groupwise_metrics(["tpr"], DF.y, DF.p, sensitive_features=DF.sex)
        assert gm.by_group.index.tolist() == ["F", "M"]
        assert gm.difference()["tpr"] == pytest.approx(EXPECTED)


@pytest.mark.parametrize("kind", ["pandas", "polars", "polars_enum", "pyarrow", "duckdb", "dask"])
def test_unused_category_is_the_same_in_every_engine(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("error", sfm.UndefinedGroupWarning)
        got = engines.compute_metrics(_frame(kind), "y", "p", "sex", ["fairness.tpr"])
    assert got["fairness.tpr"] == pytest.approx(EXPECTED)


def test_declared_groups_are_a_declaration():
    m = sfm.msr("fairness.tpr", groups=["F", "M", "X"])
    with pytest.warns(sfm.UndefinedGroupWarning, match="'X'"):
        assert np.isnan(m(DF.y, DF.p, sensitive_features=DF.sex))


def test_known_groups_name_the_culprit_and_allow_unknown_rows_when_asked():
    with pytest.raises(ValueError, match=r"sex holds value\(s\) \['z'\], not one of the declared groups"):
        encode_known_groups(["a", "z"], ["a", "b"], "sex")
    with pytest.raises(ValueError, match="sex has 1 missing value"):
        encode_known_groups(["a", None], ["a", "b"], "sex")
    assert encode_known_groups(["b", None, np.nan], ["a", "b"], "sex", missing=True).tolist() == [1, -1, -1]


# --- small groups merged while a declared group is absent ------------------------------------

SMALL = np.where(np.arange(N) < 12, "s", np.where(SEX == "F", "F", "M"))  # 's' has 12 rows
MERGE = {"min_group_size": 20, "small_groups": "merge"}


def _merged_without_declaration() -> float:
    with pytest.warns(SmallGroupWarning):
        return sfm.msr("fairness.tpr", **MERGE)(Y, P, sensitive_features=SMALL)


def test_merge_leaves_out_a_declared_group_absent_from_the_data():
    want = _merged_without_declaration()
    m = sfm.msr("fairness.tpr", groups=["F", "M", "s", "absent"], **MERGE)
    said = r"left out, with their rows: 'absent' \(0\); are merged into 'other' \(12 rows\): 's' \(12\)"
    with pytest.warns(SmallGroupWarning, match=said):
        res = m.evaluate(Y, P, sensitive_features=SMALL)
    assert res.by_group.index.tolist() == ["F", "M", "other"]
    assert res.value == pytest.approx(want)


def test_merge_with_only_absent_small_groups_adds_no_empty_other():
    m = sfm.msr("fairness.tpr", groups=["F", "M", "absent"], min_group_size=5, small_groups="merge")
    with pytest.warns(SmallGroupWarning, match=r"left out, with their rows: 'absent' \(0\)\.$"):
        res = m.evaluate(Y, P, sensitive_features=np.where(SEX == "F", "F", "M"))
    assert res.by_group.index.tolist() == ["F", "M"]
    assert not np.isnan(res.value)


def _row_bootstrap():
    """``sfm.bootstrap(measure, ...)``, also while the function still lives in its module."""
    return sfm.bootstrap if callable(sfm.bootstrap) else sfm.bootstrap.bootstrap


def test_merge_with_an_absent_declared_group_in_the_engines_and_the_bootstrap():
    two = np.where(SEX == "F", "F", "M")
    want = sfm.msr("fairness.tpr")(Y, P, sensitive_features=two)
    m = sfm.msr("fairness.tpr", groups=["F", "M", "absent"], min_group_size=5, small_groups="merge")
    frame = pd.DataFrame({"y": Y, "p": P, "g": two})
    with pytest.warns(SmallGroupWarning):
        assert engines.compute_metrics(frame, "y", "p", "g", [m]).iloc[0] == pytest.approx(want)
    with pytest.warns(SmallGroupWarning):
        boot = engines.poisson_bootstrap(frame, "y", "p", "g", m, n_boot=20, random_state=0)
    assert boot.value == pytest.approx(want)
    assert np.isfinite(boot.draws).all()
    with pytest.warns(SmallGroupWarning):
        rows = _row_bootstrap()(m, Y, P, sensitive_features=two, n_boot=20, random_state=0)
    assert rows.value == pytest.approx(want)
    assert np.isfinite(rows.draws).all()


# --- labels=: the classes of a multiclass measure, the same in every fold ------------------------

Y3 = np.array([0, 1, 0, 1, 1, 0, 0, 1])  # a fold of a 3-class task whose y_true misses class 2
P3 = np.array([0, 2, 0, 1, 2, 0, 1, 1])
A3 = np.array(list("aabbaabb"))


def test_a_fold_missing_a_class_is_scored_on_the_declared_classes():
    m = sfm.msr("fairness.acc", labels=[0, 1, 2])
    want = abs((P3 == Y3)[A3 == "a"].mean() - (P3 == Y3)[A3 == "b"].mean())
    assert m(Y3, P3, sensitive_features=A3) == pytest.approx(want)
    assert sfm.msr("fairness.acc")(Y3, P3, sensitive_features=A3) == pytest.approx(want)  # classes seen together
    gm = groupwise_metrics(["acc"], Y3, P3, sensitive_features=A3, labels=[0, 1, 2])
    assert gm.difference()["acc"] == pytest.approx(want)
    frame = pd.DataFrame({"y": Y3, "p": P3, "a": A3})
    assert engines.compute_metrics(frame, "y", "p", "a", [m]).iloc[0] == pytest.approx(want)


def test_declared_classes_decide_k_also_when_the_fold_is_binary():
    both = np.array([0, 1, 0, 1, 1, 0, 0, 1])
    tpr = sfm.msr("fairness.tpr", average="macro", labels=[0, 1, 2])
    assert tpr.evaluate(Y3, both, sensitive_features=A3).value == pytest.approx(
        sfm.msr("fairness.tpr", average="macro")(Y3, both, sensitive_features=A3)
    )
    with pytest.raises(ValueError, match="one-vs-rest rate; y_true and y_pred hold 3"):
        sfm.msr("fairness.tpr", labels=[0, 1, 2])(Y3, both, sensitive_features=A3)


def test_a_label_outside_the_declared_classes_names_labels():
    with pytest.raises(ValueError, match=r"label\(s\) \[2\] outside the declared classes labels=\[0, 1\]"):
        sfm.msr("fairness.acc", labels=[0, 1])(Y3, P3, sensitive_features=A3)
    with pytest.raises(ValueError, match=r"labels=\[0, 0\] repeats a class"):
        sfm.msr("fairness.acc", labels=[0, 0])
