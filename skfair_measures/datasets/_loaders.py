"""Loaders for the fairness datasets that ship inside the package.

Every loader reads one or two gzip-compressed files from the ``data/`` folder next to this module
(through :mod:`importlib.resources`, so it also works from a zipped install) and never touches the
network. The shipped files keep the original records; all cleaning happens here, in code, so it can
be read and reviewed (German credit's code-to-label table is the small ``data/german_codes.csv``).
Provenance, licences and checksums are in ``data/README.md``.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from typing import Literal, overload

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

__all__ = ["load_adult", "load_compas", "load_german"]

XYA = tuple[pd.DataFrame, pd.Series, pd.DataFrame]


# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------


def _data_file(name: str) -> Traversable:
    """Return the packaged data file ``name`` (a file inside this package's ``data/`` folder)."""
    return resources.files(__package__).joinpath("data", name)


def _descr(name: str) -> str:
    """The description of a dataset (source, licence, cleaning), from the packaged ``data/<name>``."""
    return _data_file(name).read_text(encoding="utf-8")


def _read_gz_csv(name: str, **read_csv_kwargs) -> pd.DataFrame:
    """Read a packaged gzip-compressed text table with :func:`pandas.read_csv`."""
    with _data_file(name).open("rb") as fh:
        return pd.read_csv(fh, compression="gzip", **read_csv_kwargs)


def _as_category(values: pd.Series, categories: list[str] | None = None, *, ordered: bool = False) -> pd.Categorical:
    """Categorical copy of ``values``: categories sorted, or the given ones that occur."""
    present = set(values.dropna().unique())
    categories = sorted(present) if categories is None else [c for c in categories if c in present]
    return pd.Categorical(values, categories=categories, ordered=ordered)


def _finish(
    data: pd.DataFrame, target: pd.Series, sensitive: pd.DataFrame, descr: str, return_X_y_A: bool
) -> Bunch | XYA:
    """Reset indices, then return a Bunch or the ``(X, y, A)`` triple."""
    data, sensitive = data.reset_index(drop=True), sensitive.reset_index(drop=True)
    target = target.reset_index(drop=True).astype("int64")
    if return_X_y_A:
        return data, target, sensitive
    names = {"feature_names": list(data.columns), "target_name": str(target.name)}
    return Bunch(data=data, target=target, sensitive=sensitive, DESCR=descr, **names)


# ---------------------------------------------------------------------------------------------
# Adult
# ---------------------------------------------------------------------------------------------

_ADULT_COLUMNS = (
    "age workclass fnlwgt education education_num marital_status occupation relationship race sex capital_gain "
    "capital_loss hours_per_week native_country income"
).split()
_ADULT_SUBSETS = ("train", "test", "all")


def _read_adult_file(name: str, skiprows: int) -> pd.DataFrame:
    text = {"skipinitialspace": True, "na_values": ["?"], "keep_default_na": False}  # "?": missing, nothing else
    frame = _read_gz_csv(name, header=None, names=_ADULT_COLUMNS, skiprows=skiprows, **text)
    frame["income"] = frame["income"].str.rstrip(".")
    return frame


@overload
def load_adult(*, subset: Literal["train", "test", "all"] = ..., return_X_y_A: Literal[False] = ...) -> Bunch: ...
@overload
def load_adult(*, subset: Literal["train", "test", "all"] = ..., return_X_y_A: Literal[True]) -> XYA: ...
def load_adult(*, subset: Literal["train", "test", "all"] = "all", return_X_y_A: bool = False) -> Bunch | XYA:
    """Load the UCI Adult (census income) dataset, bundled with the package.

    The data are read from files shipped inside the package; no network access is needed.
    Rows with missing values are dropped (45,222 rows for ``subset="all"``).

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        Which part of UCI's original train/test split to return: ``"train"`` (adult.data,
        30,162 rows), ``"test"`` (adult.test, 15,060 rows) or ``"all"`` (both, train first).
    return_X_y_A : bool, default=False
        If True, return the tuple ``(data, target, sensitive)`` instead of a Bunch.

    Returns
    -------
    dataset : sklearn.utils.Bunch
        With attributes

        - ``data`` : DataFrame of shape (n_samples, 14), the features, including the
          sensitive columns ``sex`` and ``race``; categorical columns have ``category`` dtype.
        - ``target`` : Series of int64 0/1, named ``income_over_50k`` (1 = income >50K).
        - ``sensitive`` : DataFrame with the columns ``sex`` and ``race``.
        - ``feature_names`` : list of str, the columns of ``data``.
        - ``target_name`` : str, ``"income_over_50k"``.
        - ``DESCR`` : str, source, licence, cleaning and row count.
    (data, target, sensitive) : tuple
        If ``return_X_y_A`` is True.

    See Also
    --------
    load_compas, load_german

    Examples
    --------
    >>> from skfair_measures import datasets
    >>> ds = datasets.load_adult()
    >>> ds.data.shape
    (45222, 14)
    >>> ds.target.value_counts().sort_index().to_dict()
    {0: 34014, 1: 11208}
    >>> list(ds.sensitive.columns)
    ['sex', 'race']
    >>> X, y, A = datasets.load_adult(subset="test", return_X_y_A=True)
    >>> len(X), len(y), len(A)
    (15060, 15060, 15060)
    """
    if subset not in _ADULT_SUBSETS:
        raise ValueError(
            f"The 'subset' parameter of load_adult must be one of {_ADULT_SUBSETS}; got {subset!r} instead."
        )
    train = _read_adult_file("adult.data.gz", skiprows=0)
    test = _read_adult_file("adult.test.gz", skiprows=1)  # first line is "|1x3 Cross validator"
    frame = pd.concat([train, test], keys=["train", "test"], names=["subset", None]).dropna()
    # every text column but the target is categorical; categories come from the full (train + test) data,
    # so the subsets share them
    for col in frame.select_dtypes(exclude="number").columns.drop("income"):
        frame[col] = _as_category(frame[col])
    if subset != "all":
        frame = frame.xs(subset, level="subset")

    target = (frame.pop("income") == ">50K").rename("income_over_50k")
    descr = _descr("adult.rst").format(n_rows=f"{len(frame):,}", subset=subset)
    return _finish(frame, target, frame[["sex", "race"]].copy(), descr, return_X_y_A)


# ---------------------------------------------------------------------------------------------
# COMPAS
# ---------------------------------------------------------------------------------------------

_COMPAS_FEATURES = (
    "sex age age_cat race juv_fel_count juv_misd_count juv_other_count priors_count c_charge_degree "
    "decile_score score_text"
).split()
_COMPAS_FILTER_COLUMNS = ["days_b_screening_arrest", "is_recid", "two_year_recid"]


@overload
def load_compas(*, return_X_y_A: Literal[False] = ...) -> Bunch: ...
@overload
def load_compas(*, return_X_y_A: Literal[True]) -> XYA: ...
def load_compas(*, return_X_y_A: bool = False) -> Bunch | XYA:
    """Load ProPublica's COMPAS two-year recidivism dataset, bundled with the package.

    The data are read from files shipped inside the package; no network access is needed.
    ProPublica's standard row filter is applied (6,172 rows).

    Parameters
    ----------
    return_X_y_A : bool, default=False
        If True, return the tuple ``(data, target, sensitive)`` instead of a Bunch.

    Returns
    -------
    dataset : sklearn.utils.Bunch
        With attributes

        - ``data`` : DataFrame of shape (6172, 11): sex, age, age_cat, race, juv_fel_count,
          juv_misd_count, juv_other_count, priors_count, c_charge_degree, decile_score and
          score_text. ``decile_score`` and ``score_text`` are COMPAS's own prediction.
        - ``target`` : Series of int64 0/1, named ``two_year_recid`` (1 = re-offended within
          two years).
        - ``sensitive`` : DataFrame with the columns ``race`` and ``sex``.
        - ``feature_names`` : list of str, the columns of ``data``.
        - ``target_name`` : str, ``"two_year_recid"``.
        - ``DESCR`` : str, source, licence, cleaning and row count.
    (data, target, sensitive) : tuple
        If ``return_X_y_A`` is True.

    See Also
    --------
    load_adult, load_german

    Examples
    --------
    >>> from skfair_measures import datasets
    >>> ds = datasets.load_compas()
    >>> ds.data.shape
    (6172, 11)
    >>> ds.target.value_counts().sort_index().to_dict()
    {0: 3363, 1: 2809}
    >>> ds.sensitive["race"].value_counts().head(2).to_dict()
    {'African-American': 3175, 'Caucasian': 2103}
    """
    raw = _read_gz_csv("compas-scores-two-years.csv.gz", usecols=_COMPAS_FEATURES + _COMPAS_FILTER_COLUMNS)
    keep = (
        raw["days_b_screening_arrest"].between(-30, 30)  # NaN -> False
        & (raw["is_recid"] != -1)
        & (raw["c_charge_degree"] != "O")
        & raw["score_text"].notna()  # pandas reads the string 'N/A' as missing
        & (raw["score_text"] != "N/A")
    )
    raw = raw.loc[keep]
    data = raw[_COMPAS_FEATURES].copy()
    for col in ("sex", "race", "c_charge_degree"):
        data[col] = _as_category(data[col])
    data["age_cat"] = _as_category(data["age_cat"], ["Less than 25", "25 - 45", "Greater than 45"], ordered=True)
    data["score_text"] = _as_category(data["score_text"], ["Low", "Medium", "High"], ordered=True)

    target = raw["two_year_recid"].rename("two_year_recid")
    descr = _descr("compas.rst").format(n_rows=f"{len(data):,}")
    return _finish(data, target, data[["race", "sex"]].copy(), descr, return_X_y_A)


# ---------------------------------------------------------------------------------------------
# German credit
# ---------------------------------------------------------------------------------------------


def _german_codes() -> dict[str, dict[str, str] | None]:
    """Attribute name -> ``{UCI code: label}`` in german.data's column order; None for a numeric attribute.

    The table is the packaged ``data/german_codes.csv`` (labels paraphrasing UCI's german.doc).
    """
    with _data_file("german_codes.csv").open("rb") as fh:
        rows = pd.read_csv(fh, dtype=str, keep_default_na=False)
    by = rows.groupby("attribute", sort=False)
    return {a: dict(zip(g["code"], g["label"], strict=True)) if g["code"].iat[0] else None for a, g in by}


_GERMAN_SEX = {"A91": "male", "A92": "female", "A93": "male", "A94": "male", "A95": "female"}
_GERMAN_YOUNG_MAX_AGE = 25


@overload
def load_german(*, return_X_y_A: Literal[False] = ...) -> Bunch: ...
@overload
def load_german(*, return_X_y_A: Literal[True]) -> XYA: ...
def load_german(*, return_X_y_A: bool = False) -> Bunch | XYA:
    """Load the UCI Statlog German credit dataset, bundled with the package.

    The data are read from files shipped inside the package; no network access is needed.

    Parameters
    ----------
    return_X_y_A : bool, default=False
        If True, return the tuple ``(data, target, sensitive)`` instead of a Bunch.

    Returns
    -------
    dataset : sklearn.utils.Bunch
        With attributes

        - ``data`` : DataFrame of shape (1000, 21): the 20 UCI attributes (coded values
          decoded to labels, ``category`` dtype; ``age`` numeric, in years) plus ``sex``,
          derived from ``personal_status``.
        - ``target`` : Series of int64 0/1, named ``good_credit`` (1 = good credit risk).
        - ``sensitive`` : DataFrame with the columns ``sex`` ('female'/'male') and ``age``,
          the age group: 'young' (age <= 25) or 'old' (age > 25).
        - ``feature_names`` : list of str, the columns of ``data``.
        - ``target_name`` : str, ``"good_credit"``.
        - ``DESCR`` : str, source, licence, cleaning and row count.
    (data, target, sensitive) : tuple
        If ``return_X_y_A`` is True.

    See Also
    --------
    load_adult, load_compas

    Examples
    --------
    >>> from skfair_measures import datasets
    >>> ds = datasets.load_german()
    >>> ds.data.shape
    (1000, 21)
    >>> ds.target.value_counts().sort_index().to_dict()
    {0: 300, 1: 700}
    >>> import pandas as pd
    >>> pd.crosstab(ds.sensitive["sex"], ds.sensitive["age"])
    age     young  old
    sex
    female    105  205
    male       85  605
    """
    attributes = _german_codes()
    raw = _read_gz_csv("german.data.gz", sep=" ", header=None, names=[*attributes, "credit"])

    data = pd.DataFrame(index=raw.index)
    for name, codes in attributes.items():
        if codes is None:
            data[name] = raw[name].astype("int64")
        else:
            data[name] = _as_category(raw[name].map(codes), list(codes.values()))
        if name == "personal_status":
            data["sex"] = _as_category(raw[name].map(_GERMAN_SEX), ["female", "male"])

    age_group = pd.Series(np.where(data["age"] <= _GERMAN_YOUNG_MAX_AGE, "young", "old"), index=data.index)
    sensitive = pd.DataFrame({"sex": data["sex"], "age": _as_category(age_group, ["young", "old"], ordered=True)})
    target = (raw["credit"] == 1).rename("good_credit")
    descr = _descr("german.rst").format(n_rows=f"{len(data):,}")
    return _finish(data, target, sensitive, descr, return_X_y_A)
