"""The monitor's state: whatever update() accepts, save() writes and load() reads back; refused batches change nothing.

Round trips over generated values (hypothesis): group labels and ids that are text,
integers, dates, datetimes with and without a time zone, UUIDs, categoricals. Time:
batches out of order or zoned unlike the earlier ones are refused before anything is
committed. Files that are not a state are refused naming the path. A process killed
while saving leaves the previous state whole.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skfair_measures as sfm
from skfair_measures.monitor import FairnessMonitor

MEASURES = ["fairness.tpr", "fairness.cv"]

_zones = st.integers(-12 * 4, 14 * 4).map(lambda q: dt.timezone(dt.timedelta(minutes=15 * q)))
_naive = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))
VALUES = {
    "text": st.text(min_size=1, max_size=8).filter(lambda s: s.strip() and s.lower() not in {"nan", "none", "null"}),
    "int": st.integers(-(2**40), 2**40),
    "date": st.dates(),
    "naive datetime": _naive,
    "aware datetime": st.builds(lambda d, z: d.replace(tzinfo=z), _naive, _zones),
    "uuid": st.uuids(),
}


@st.composite
def batches(draw: st.DrawFn) -> dict:
    group_kind = draw(st.sampled_from([*VALUES, "categorical"]))
    values = VALUES["text" if group_kind == "categorical" else group_kind]
    groups = draw(st.lists(values, min_size=2, max_size=3, unique=True))
    id_kind = draw(st.sampled_from(sorted(VALUES)))
    n = 24
    ids = draw(st.lists(VALUES[id_kind], min_size=2 * n, max_size=2 * n, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    g = [groups[i % len(groups)] for i in range(n)]
    sens = pd.Categorical(g) if group_kind == "categorical" else pd.Series(g, dtype=object)
    return {"sens": sens, "ids": ids, "rng": rng, "n": n}


def _feed(mon: FairnessMonitor, b: dict) -> None:
    rng, n = b["rng"], b["n"]
    mon.update(rng.integers(0, 2, n), sensitive_features=b["sens"], y_true=rng.integers(0, 2, n))
    mon.update(rng.integers(0, 2, n), sensitive_features=b["sens"], ids=b["ids"][:n])


def _same(a: FairnessMonitor, b: FairnessMonitor) -> None:
    pd.testing.assert_frame_equal(a.status(), b.status())
    ga, gb = a.group_status(), b.group_status()
    assert list(ga.index) == list(gb.index)
    pd.testing.assert_frame_equal(ga.reset_index(drop=True), gb.reset_index(drop=True))
    assert a.n_pending == b.n_pending


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_everything_update_accepts_saves_and_loads_back(tmp_path_factory, b):
    path = tmp_path_factory.mktemp("state") / "monitor.json"
    mon = FairnessMonitor(MEASURES, eps=0.1)
    _feed(mon, b)
    mon.save(path)
    back = FairnessMonitor.load(path)
    _same(mon, back)
    labels = b["rng"].integers(0, 2, b["n"])
    for m in (mon, back):  # the rows waiting for labels join by the loaded ids as by the original ones
        assert m.add_labels(labels, ids=b["ids"][: b["n"]]) == b["n"]
    _same(mon, back)
    mon.save(path)  # and the state after the join saves again
    _same(mon, FairnessMonitor.load(path))


def _batch(rng: np.random.Generator, n: int = 50) -> dict:
    return {"y_pred": rng.integers(0, 2, n), "sensitive_features": rng.choice(["a", "b"], n)}


def test_a_late_batch_is_refused_and_not_pooled_into_a_later_window():
    rng = np.random.default_rng(0)
    mon = FairnessMonitor("fairness.cv", eps=0.1, window="2D")
    mon.update(**_batch(rng), time="2026-01-01")
    mon.update(**_batch(rng), time="2026-01-05")
    before = mon.to_dict()
    with pytest.raises(ValueError, match=r"time=2026-01-02T00:00:00 is before the last batch's time 2026-01-05"):
        mon.update(**_batch(rng), time="2026-01-02")
    assert mon.to_dict() == before  # nothing committed
    mon.update(**_batch(rng), time="2026-01-06")  # and the monitor goes on
    assert mon.step == 3


@pytest.mark.parametrize(
    ("first", "second", "words"),
    [
        (pd.Timestamp("2026-01-01", tz="UTC"), pd.Timestamp("2026-01-02"), "without a time zone"),
        (pd.Timestamp("2026-01-01"), pd.Timestamp("2026-01-02", tz="Europe/Paris"), "with a time zone"),
        (pd.Timestamp("2026-01-01"), pd.NaT, "is missing"),
        (pd.Timestamp("2026-01-01"), "next tuesday", "is not a date or time"),
    ],
)
def test_mixed_zones_and_missing_times_are_refused_before_the_step_is_committed(first, second, words):
    rng = np.random.default_rng(1)
    mon = FairnessMonitor("fairness.cv", eps=0.1, window="3D")
    mon.update(**_batch(rng), time=first)
    before = mon.to_dict()
    with pytest.raises(ValueError, match=words):
        mon.update(**_batch(rng), time=second)
    assert mon.to_dict() == before
    mon.update(**_batch(rng), time=first + pd.Timedelta("1D"))  # not locked: the next good batch counts
    assert mon.status()["n_rows"].iloc[0] == 100


def test_an_id_the_state_cannot_keep_is_refused_before_anything_changes(tmp_path):
    rng = np.random.default_rng(2)
    mon = FairnessMonitor(MEASURES, eps=0.1)
    mon.update(rng.integers(0, 2, 4), sensitive_features=list("abab"), y_true=[0, 1, 0, 1])
    before = mon.to_dict()
    with pytest.raises(TypeError, match=r"ids value <object object at .*> \(object\) cannot be kept"):
        mon.update([1, 0, 1, 0], sensitive_features=list("abab"), ids=[object() for _ in range(4)])
    assert mon.to_dict() == before
    with pytest.raises(ValueError, match=r"ids has shape \(4, 1\); pass one value per row"):
        mon.update([1, 0, 1, 0], sensitive_features=list("abab"), ids=[[1], [2], [3], [4]])
    mon.save(tmp_path / "s.json")


def _saved(tmp_path) -> str:
    rng = np.random.default_rng(3)
    mon = FairnessMonitor(MEASURES, eps=0.1)
    mon.update(rng.integers(0, 2, 40), sensitive_features=rng.choice(["a", "b"], 40), y_true=rng.integers(0, 2, 40))
    path = str(tmp_path / "monitor.json")
    mon.save(path)
    return path


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda p: open(p, "wb").write(b"\x89PNG\r\n\x1a\n\x00\xff"), "not whole JSON text"),
        (lambda p: open(p, "w").write('{"format": "skfair-measures monitor state", "version": 2'), "may be truncated"),
        (lambda p: _edit(p, lambda s: s.pop("needs")), r"lacks \['needs'\]"),
        (lambda p: _edit(p, lambda s: s["settings"].pop("eps")), r"lacks \['settings.eps'\]"),
        (lambda p: _edit(p, lambda s: s.__setitem__("groups", 5)), "edited by hand"),
        (lambda p: open(p, "w").write("[1, 2]"), "is not a monitor state"),
    ],
)
def test_a_file_that_is_not_a_state_is_refused_naming_the_path(tmp_path, edit, words):
    path = _saved(tmp_path)
    edit(path)
    with pytest.raises(ValueError, match=words) as info:
        FairnessMonitor.load(path)
    assert path in str(info.value)


def _edit(path: str, change) -> None:
    with open(path) as f:
        state = json.load(f)
    change(state)
    with open(path, "w") as f:
        json.dump(state, f)


def test_load_with_other_measures_names_both_sets(tmp_path):
    path = _saved(tmp_path)
    with pytest.raises(ValueError, match=r"monitors the measures \['fairness.tpr', 'fairness.cv'\]; the measures "):
        FairnessMonitor.load(path, measures=["fairness.fpr"])


_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from skfair_measures.monitor import FairnessMonitor
    mon = FairnessMonitor.load(sys.argv[1])
    mon.meta["note"] = "x" * 2_000_000  # a bigger state: the new one differs from the saved one
    real_fsync = os.fsync
    def slow_fsync(fd):  # the file is written, not yet renamed over the old one: the parent kills us here
        real_fsync(fd)
        print("saving", flush=True)
        time.sleep(60)
    os.fsync = slow_fsync
    mon.save(sys.argv[1])
    """
)


def test_a_process_killed_mid_save_leaves_the_previous_state_loadable(tmp_path):
    path = _saved(tmp_path)
    with open(path) as f:
        old = f.read()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, path], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert child.stdout.readline().strip() == "saving"
        assert any(p.name.endswith(".tmp") for p in tmp_path.iterdir())  # mid-save: the temporary file exists
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    with open(path) as f:
        assert f.read() == old
    assert FairnessMonitor.load(path).step == 1


def test_a_process_killed_at_random_while_saving_in_a_loop_never_leaves_a_broken_state(tmp_path):
    path = _saved(tmp_path)
    loop = "import sys\nfrom skfair_measures.monitor import FairnessMonitor\nm = FairnessMonitor.load(sys.argv[1])\n"
    loop += "m.meta['pad'] = 'y' * 500_000\nprint('go', flush=True)\nwhile True:\n    m.save(sys.argv[1])\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    rng = np.random.default_rng(4)
    for _ in range(2):
        child = subprocess.Popen([sys.executable, "-c", loop, path], stdout=subprocess.PIPE, env=env, text=True)
        assert child.stdout.readline().strip() == "go"
        time.sleep(float(rng.uniform(0.05, 0.3)))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert FairnessMonitor.load(path).step == 1


def test_group_status_rows_are_named_by_the_rate_and_a_latched_alarm_keeps_its_evidence():
    rng = np.random.default_rng(6)
    mon = FairnessMonitor(["fairness.tpr", "fairness.cv", sfm.msr("fairness.fpr", pos_label=1)], eps=0.05)
    for step in range(12):
        n = 2000
        g = rng.choice(["a", "b"], n)
        y = rng.integers(0, 2, n)
        score = np.clip(rng.random(n) + np.where((g == "a") & (step < 6), 0.4, 0.0), 0, 1)
        mon.update((score >= 0.5).astype(int), sensitive_features=g, y_true=y)
    rates = sorted(set(mon.group_status().index.get_level_values("rate")))
    assert rates == ["fpr (pos_label=1)", "selection_rate", "tpr"]
    st = mon.status()
    row = st.loc["fairness.tpr"]
    assert row["alarm"] and row["alarm_e_value"] >= 1 / mon.alpha
    assert row["alarm_step"] < mon.step  # raised earlier, still raised
    hist = mon.history()
    raised = hist[(hist["key"] == "fairness.tpr") & (hist["step"] == row["alarm_step"])]
    assert float(raised["e_value"].iloc[0]) == pytest.approx(row["alarm_e_value"])


def test_a_missing_id_is_refused_before_anything_changes():
    mon = FairnessMonitor(MEASURES, eps=0.1)
    before = mon.to_dict()
    with pytest.raises(ValueError, match=r"ids has 1 missing value\(s\)"):
        mon.update([1, 0, 1, 0], sensitive_features=list("abab"), ids=["u1", None, "u3", "u4"])
    assert mon.to_dict() == before
