"""The fast paths give the same numbers as the plain ones (correctness, not timings).

- Arrow-backed and categorical labels and groups are factorised without object
  conversion: every measure equals its value on plain NumPy inputs.
- Repeated calls reuse the validated sample only for the very same, unchanged
  objects: mutating an input in place, or passing new arrays, never returns a stale
  result.
- The weighted bootstrap draws the same replicates as resampling the rows (atoms), or
  replicates with the same standard error (continuous weights: per-cell compound draws).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import _reuse
from skfair_measures._stats import check_inputs
from skfair_measures.registry import MLR3_KEYS

pytest.importorskip("pyarrow")

N = 3_000
KEYS = [k for k in MLR3_KEYS if k != "fairness.mse"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    _reuse.clear()
    yield
    _reuse.clear()


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, N)
    p = np.where(rng.random(N) < 0.75, y, 1 - y)
    g = rng.integers(0, 4, N)
    return y, p, g


def _values(measures, y_true, y_pred, groups, weights=None):
    res = sfm.evaluate_measures(measures, y_true, y_pred, sensitive_features=groups, sample_weight=weights)
    return np.array([res[m.key].value for m in measures])


STRING_KINDS = {
    "object": lambda a: a,
    "str": lambda a: pd.Series(a, dtype="str"),
    "string[pyarrow]": lambda a: pd.Series(a, dtype="string[pyarrow]"),
    "arrow string": lambda a: pd.Series(a, dtype=pd.ArrowDtype(__import__("pyarrow").large_string())),
    "category": lambda a: pd.Series(a, dtype="category"),
    "Categorical": pd.Categorical,
}


@pytest.mark.parametrize("kind", list(STRING_KINDS))
def test_string_labels_and_groups_match_integer_codes(data, kind):
    y, p, g = data
    names = np.array(["no", "yes"], dtype=object)
    groups = np.array(["a", "b", "c", "d"], dtype=object)
    conv = STRING_KINDS[kind]
    plain = [sfm.msr(k) for k in KEYS]
    with_pos = [sfm.msr(k, pos_label="yes") for k in KEYS]
    expected = _values(plain, y, p, g)
    got = _values(with_pos, conv(names[y]), conv(names[p]), conv(groups[g]))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    by_group = sfm.msr("fairness.tpr", pos_label="yes").groupwise(
        conv(names[y]), conv(names[p]), sensitive_features=conv(groups[g])
    )
    assert by_group.index.tolist() == ["a", "b", "c", "d"]


def test_arrow_labels_keep_errors_and_pos_label_checks(data):
    y, p, g = data
    names = np.array(["no", "yes"], dtype=object)
    yt = pd.Series(names[y], dtype="str")
    with pytest.raises(ValueError, match="pos_label"):
        sfm.msr("fairness.tpr")(yt, yt, sensitive_features=g)
    three = yt.copy()
    three.iloc[0] = "maybe"
    with pytest.raises(ValueError, match="3 distinct labels"):
        sfm.msr("fairness.tpr")(three, three, sensitive_features=g)
    missing = pd.Series(names[y], dtype="str")
    missing.iloc[3] = None
    with pytest.raises(ValueError, match="missing"):
        sfm.msr("fairness.tpr", pos_label="yes")(missing, yt, sensitive_features=g)


def test_repeated_calls_reuse_the_sample_from_the_third_call(data):
    y, p, g = data
    first = check_inputs(y, p, g)
    second = check_inputs(y, p, g)
    third = check_inputs(y, p, g)
    assert first is not second
    assert third is second
    assert check_inputs(y, p, g) is second


def test_new_but_equal_arrays_are_validated_again(data):
    y, p, g = data
    for _ in range(3):
        kept = check_inputs(y, p, g)
    fresh = check_inputs(y.copy(), p, g)
    assert fresh is not kept
    assert check_inputs(list(y), list(p), list(g)) is not check_inputs(list(y), list(p), list(g))


@pytest.mark.parametrize("what", ["y_true", "y_pred", "groups", "weights"])
def test_mutating_a_numpy_input_in_place_is_never_stale(data, what):
    y, p, g = data
    w = np.linspace(0.5, 2.0, N)
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.fpr")]
    arrays = {"y_true": y, "y_pred": p, "groups": g, "weights": w}
    for _ in range(3):
        _values(ms, y, p, g, w)
    target = arrays[what]
    target[:400] = (target[:400] + 1) % 2 if what != "weights" else 5.0
    got = _values(ms, y, p, g, w)
    reference = _values(ms, y.copy(), p.copy(), g.copy(), w.copy())
    np.testing.assert_array_equal(got, reference)


def test_mutating_pandas_inputs_in_place_is_never_stale(data):
    y, p, g = data
    names = np.array(["a", "b", "c", "d"], dtype=object)
    m = sfm.msr("fairness.tpr")
    kinds = {
        "str": pd.Series(names[g], dtype="str", name="sex"),
        "category": pd.Series(names[g], dtype="category", name="sex"),
        "numeric": pd.Series(g, name="sex"),
        "frame": pd.DataFrame({"sex": names[g], "race": g % 2}),
    }
    for kind, groups in kinds.items():
        _reuse.clear()
        for _ in range(3):
            m(y, p, sensitive_features=groups)
        if kind == "frame":
            groups.loc[: N // 2, "race"] = 0
        else:
            groups.iloc[: N // 2] = groups.iloc[0]
        fresh = groups.copy(deep=True)
        assert m(y, p, sensitive_features=groups) == m(y, p, sensitive_features=fresh), kind
        pd.testing.assert_series_equal(
            m.groupwise(y, p, sensitive_features=groups), m.groupwise(y, p, sensitive_features=fresh)
        )


def test_object_strings_changed_to_another_type_are_seen(data):
    y, p, g = data
    groups = np.array(["1", "2"], dtype=object)[g % 2]
    m = sfm.msr("fairness.tpr")
    for _ in range(3):
        m(y, p, sensitive_features=groups)
    groups[:10] = 1  # the integer 1 is a different group from the string "1"
    assert m.groupwise(y, p, sensitive_features=groups).index.tolist() == [1, "1", "2"]


def test_a_renamed_series_gives_renamed_groups(data):
    y, p, g = data
    s = pd.Series(g, name="sex")
    m = sfm.msr("fairness.tpr")
    for _ in range(3):
        m(y, p, sensitive_features=s)
    s.name = "race"
    assert m.groupwise(y, p, sensitive_features=s).index.name == "race"


def test_declared_groups_are_part_of_the_key(data):
    y, p, g = data
    m = sfm.msr("fairness.tpr")
    declared = m.with_inputs(groups=[0, 1, 2, 3, 4])
    for _ in range(3):
        m(y, p, sensitive_features=g)
    with pytest.warns(sfm.UndefinedGroupWarning):
        assert np.isnan(declared(y, p, sensitive_features=g))
    assert not np.isnan(m(y, p, sensitive_features=g))


# --- the weighted bootstrap -------------------------------------------------------------


def _boot(measure, y, p, g, w, n_boot=2_000, seed=3):
    return sfm.bootstrap(measure, y, p, sensitive_features=g, sample_weight=w, n_boot=n_boot, random_state=seed).draws


def test_unit_weights_draw_exactly_the_unweighted_replicates(data):
    y, p, g = data
    m = sfm.msr("fairness.eod")
    np.testing.assert_array_equal(_boot(m, y, p, g, np.ones(N)), _boot(m, y, p, g, None))


@pytest.mark.parametrize("key", ["fairness.eod", "fairness.acc_eod=.05", "fairness.mse"])
def test_atoms_and_row_resampling_agree_in_distribution(data, key, monkeypatch):
    from skfair_measures import _bootstrap as boot

    y, p, g = data
    w = np.array([0.5, 1.0, 3.0])[np.random.default_rng(1).integers(0, 3, N)]
    m = sfm.msr(key)
    atoms = _boot(m, y, p, g, w)
    monkeypatch.setattr(boot._Atoms, "cheaper_than_rows", lambda self, n: False)
    rows = _boot(m, y, p, g, w, seed=4)
    se = np.sqrt((atoms.var() + rows.var()) / atoms.size)
    assert abs(atoms.mean() - rows.mean()) < 5 * se + 1e-12
    assert 0.85 < atoms.std() / rows.std() < 1.15
    # weights matter: the unweighted spread differs, so the comparison can fail
    assert not np.allclose(_boot(m, y, p, g, w), _boot(m, y, p, g, None))


def test_atoms_reproduce_the_observed_statistics_on_average(data):
    from skfair_measures._bootstrap import _Atoms, _RowCells

    y, p, g = data
    w = np.array([0.25, 2.0])[y]
    sample = check_inputs(y, p, g, w)
    cells = _RowCells(sample, None, "confusion")
    atoms = _Atoms(cells)
    expected = (atoms.n[:, None] * atoms.p)[..., None] * atoms.values  # mean draw x values per atom
    per_cell = np.zeros((sample.n_groups, 4))
    for grp in range(sample.n_groups):
        np.add.at(per_cell[grp], atoms.cell[grp], expected[grp, :, 0])
    np.testing.assert_allclose(per_cell.reshape(-1, 2, 2), sample.confusion().counts, rtol=1e-12)


@pytest.mark.parametrize("key", ["fairness.eod", "fairness.tpr", "fairness.ppv"])
def test_continuous_weights_compound_se_within_10_percent_of_the_row_bootstrap(key, monkeypatch):
    from skfair_measures import _bootstrap as boot

    rng = np.random.default_rng(11)
    n = 20_000
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.8, y, 1 - y)
    g = rng.integers(0, 4, n)
    g[:60] = 4  # a group of 60 rows: its cells (about 15 rows each) are drawn row by row
    w = rng.lognormal(0.0, 1.0, n)  # continuous and skewed: every row is its own atom
    m = sfm.msr(key)

    def no_rows(*args):
        raise AssertionError("continuous weights on confusion counts must not resample rows")

    monkeypatch.setattr(boot, "_resampled_sums", no_rows)
    compound = _boot(m, y, p, g, w, n_boot=3_000, seed=1)
    monkeypatch.undo()
    monkeypatch.setattr(boot, "_compound_sums", boot._resampled_sums)
    rows = _boot(m, y, p, g, w, n_boot=3_000, seed=2)
    assert 0.9 < compound.std() / rows.std() < 1.1
    se = np.sqrt((compound.var() + rows.var()) / compound.size)
    assert abs(compound.mean() - rows.mean()) < 5 * se


def test_compound_sums_keep_the_cell_means_and_draw_small_cells_from_their_rows():
    from skfair_measures._bootstrap import _compound_sums, _RowCells

    rng = np.random.default_rng(5)
    n = 4_000
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    g = np.where(np.arange(n) < 2, 2, rng.integers(0, 2, n))
    y[:2], p[:2] = 1, 1
    w = rng.random(n) + 0.5
    w[:2] = [1.0, 10.0]  # group 2 is one cell of two rows: its sums are j * 1 + k * 10 with j + k = 2
    sample = check_inputs(y, p, g, w)
    cells = _RowCells(sample, None, "confusion")
    sums = _compound_sums(cells, 4_000, np.random.default_rng(0))[..., 0].reshape(4_000, 3, 2, 2)
    assert set(np.unique(sums[:, 2, 1, 1])) == {2.0, 11.0, 20.0}
    observed = sample.confusion().counts
    spread = sums.std(axis=0) / np.sqrt(sums.shape[0])
    assert (np.abs(sums.mean(axis=0) - observed) <= 5 * spread + 1e-9).all()
    assert (sums >= 0).all()


def test_weighted_bootstrap_with_a_declared_absent_group(data):
    y, p, g = data
    w = np.where(y == 1, 2.0, 1.0)
    m = sfm.msr("fairness.tpr", groups=[0, 1, 2, 3, 9], undefined="drop")
    with pytest.warns(sfm.UndefinedGroupWarning):
        res = sfm.bootstrap(m, y, p, sensitive_features=g, sample_weight=w, n_boot=200, random_state=0)
    assert np.isfinite(res.draws).all()
    lo, hi = res.interval()
    assert lo <= res.value <= hi


def test_numeric_categorical_labels_stay_numbers(data):
    y, p, g = data
    t, q = pd.Series(y, dtype="category"), pd.Series(p, dtype="category")
    assert sfm.msr("fairness.mse")(t, q, sensitive_features=g) == sfm.msr("fairness.mse")(y, p, sensitive_features=g)
    assert sfm.msr("fairness.tpr")(t, q, sensitive_features=g) == sfm.msr("fairness.tpr")(y, p, sensitive_features=g)


# --- one compiled pass for weighted counts, and the routes of the weighted bootstrap -----------

BIG = 250_000  # above _stats._COMPILED_ROWS: the compiled kernels run when numba is installed


def _big(seed=8, n_groups=5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, BIG)
    return y, np.where(rng.random(BIG) < 0.8, y, 1 - y), rng.integers(0, n_groups, BIG), rng


@pytest.mark.parametrize("weights", ["continuous", "class", "multiclass"])
def test_compiled_weighted_cells_equal_the_bincounts_to_the_last_bit(weights, monkeypatch):
    from skfair_measures import _stats

    y, p, g, rng = _big()
    if weights == "multiclass":
        y, p = rng.integers(0, 4, BIG), rng.integers(0, 4, BIG)
    w = np.array([0.5, 2.0])[y % 2] if weights == "class" else rng.random(BIG) + 0.5
    compiled = check_inputs(y, p, g, w)
    counts, moments = compiled.confusion().counts, compiled.cell_moments()
    monkeypatch.setattr(_stats, "_compiled_kernel", lambda: None)  # numba not installed
    plain = check_inputs(y.copy(), p.copy(), g.copy(), w.copy())
    np.testing.assert_array_equal(counts, plain.confusion().counts)
    np.testing.assert_array_equal(moments, plain.cell_moments())
    np.testing.assert_array_equal(compiled.confusion().rows, np.bincount(g).astype(float))
    k = counts.shape[-1]
    t_codes, p_codes = _stats.class_codes(y, p, compiled.classes())
    cell = (g * k + t_codes) * k + p_codes
    np.testing.assert_allclose(moments[:, 2], np.bincount(cell, weights=w * w, minlength=moments.shape[0]))
    # rows unlike their cell's first weight: none for class weights (a weight per true class)
    assert (moments[:, 3] == 0).all() == (weights == "class")


def test_level_atoms_count_rows_per_cell_and_weight_or_refuse_an_unknown_weight(monkeypatch):
    from skfair_measures import _stats
    from skfair_measures._bootstrap import _RowCells

    y, p, g, rng = _big(9)
    levels = np.array([0.5, 1.0, 3.0])
    w = levels[rng.integers(0, 3, BIG)]
    cells = _RowCells(check_inputs(y, p, g, w), None, "confusion")
    expected = np.bincount(cells.flat * 3 + np.searchsorted(levels, w), minlength=cells.flat.max() * 3 + 3)
    compiled = cells.level_atoms(levels)
    np.testing.assert_array_equal(compiled.ravel(), expected)
    assert cells.level_atoms(levels[:2]) is None  # a weight of 3.0 is not a level
    monkeypatch.setattr(_stats, "_compiled_kernel", lambda: None)
    monkeypatch.setattr("skfair_measures._bootstrap._compiled_kernel", lambda: None)
    np.testing.assert_array_equal(cells.level_atoms(levels).ravel(), expected)
    assert cells.level_atoms(levels[:2]) is None


def test_class_weights_draw_exact_cell_sums_without_atoms(monkeypatch):
    from skfair_measures import _bootstrap as boot

    y, p, g, _ = _big(10)
    w = np.array([0.5, 2.0])[y]  # class weights: every cell holds one weight
    monkeypatch.setattr(boot, "_Atoms", None)  # the route must not look for atoms
    m = sfm.msr("fairness.tpr")
    sample = check_inputs(y, p, g, w)
    cells = boot._RowCells(sample, None, "confusion")
    sums = boot._compound_sums(cells, 200, np.random.default_rng(0))[..., 0]
    per_row = sums / np.array([0.5, 0.5, 2.0, 2.0] * 5)  # each cell's sum is its drawn rows times its weight
    np.testing.assert_array_equal(per_row, np.round(per_row))
    np.testing.assert_array_equal(per_row.reshape(200, 5, 4).sum(axis=-1), np.broadcast_to(np.bincount(g), (200, 5)))
    assert np.isfinite(sfm.bootstrap(m, y, p, sensitive_features=g, sample_weight=w, n_boot=50).draws).all()


# --- object strings: one factorisation finds the missing values, the distinct labels and the codes -----


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
def test_object_labels_with_a_missing_value_are_refused_naming_its_position(missing):
    y = np.array(["no", "yes", "yes", "no"], dtype=object)
    p = y.copy()
    p[2] = missing
    with pytest.raises(ValueError, match=r"y_pred has 1 missing value\(s\) \(NaN/None\), first at position 2"):
        sfm.msr("fairness.tpr", pos_label="yes")(y, p, sensitive_features=[0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"y_true has 1 missing value\(s\).*position 2"):
        sfm.msr("classif.acc")(p, y, sensitive_features=[0, 0, 1, 1])  # K x K counts of the classes


@pytest.mark.parametrize("missing", [None, np.nan])
def test_object_groups_with_a_missing_value_are_refused(missing):
    g = np.array(["a", "b", missing, "b"], dtype=object)
    with pytest.raises(ValueError, match=r"sensitive feature .* has 1 missing value\(s\)"):
        sfm.msr("fairness.acc")([0, 1, 1, 0], [0, 1, 0, 0], sensitive_features=g)


def test_object_strings_give_the_counts_groups_and_classes_of_their_categorical():
    rng = np.random.default_rng(12)
    names = np.array(["b", "a", "c", "d"], dtype=object)
    t, p, g = names[rng.integers(0, 3, 500)], names[rng.integers(0, 4, 500)], names[rng.integers(0, 4, 500)]
    plain = check_inputs(t, p, g)
    cat = check_inputs(*(pd.Categorical(x) for x in (t, p, g)))
    assert plain.groups.tolist() == ["a", "b", "c", "d"] and plain.groups.equals(cat.groups)
    np.testing.assert_array_equal(plain.group_codes, cat.group_codes)
    assert plain.classes().tolist() == cat.classes().tolist() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(plain.multiclass().counts, cat.multiclass().counts)
    np.testing.assert_array_equal(plain.confusion("c").counts, cat.confusion("c").counts)
    expected = np.zeros((4, 2, 2))
    is_c = [(x == "c").astype(int) for x in (t, p)]
    np.add.at(expected, (pd.Index(names[[1, 0, 2, 3]]).get_indexer(g), *is_c), 1)
    np.testing.assert_array_equal(plain.confusion("c").counts, expected)


@pytest.mark.parametrize("labels", [(0, 1), (-1, 1), (3, 7)])
def test_weighted_integer_path_gives_the_general_counts_for_every_positive_label(labels, monkeypatch):
    from skfair_measures import _stats

    y, p, g, rng = _big(13, n_groups=4)
    y, p = np.array(labels)[y], np.array(labels)[p]
    w = rng.random(BIG) + 0.5
    w[g == 3] = 0.0  # a group whose rows all weigh 0: present, weightless
    fast = check_inputs(y, p, g, w)
    assert ("moments", "classes") in fast._cache  # counted with the groups, in one compiled pass
    poss = [labels[0], labels[1]] + ([None] if labels != (3, 7) else [])
    got = {pos: fast.confusion(pos) for pos in poss}
    monkeypatch.setattr(_stats, "_compiled_kernel", lambda: None)
    plain = check_inputs(y.copy(), p.copy(), g.copy(), w.copy())
    for pos in poss:
        np.testing.assert_array_equal(got[pos].counts, plain.confusion(pos).counts)
        np.testing.assert_array_equal(got[pos].rows, plain.confusion(pos).rows)
    np.testing.assert_array_equal(fast.weightless(), [False, False, False, True])
    np.testing.assert_array_equal(fast.multiclass().counts, plain.multiclass().counts)
