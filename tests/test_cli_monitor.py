"""``skfair monitor`` end to end on a folder of Parquet files and on a DuckDB table: runs, resumes, alarms."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from skfair_measures.cli import main
from skfair_measures.monitor import FairnessMonitor


def _day(rng, day, gap, n=1000):
    g = rng.choice(["F", "M"], n)
    y = rng.binomial(1, 0.5, n)
    yhat = np.where(y == 1, rng.binomial(1, np.where(g == "F", 0.6, 0.6 - gap)), rng.binomial(1, 0.3, n))
    return pd.DataFrame(
        {
            "sex": g,
            "label": y,
            "prediction": yhat,
            "ts": pd.Timestamp(day) + pd.to_timedelta(rng.integers(0, 86_400, n), unit="s"),
        }
    )


@pytest.fixture
def log(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "log"
    folder.mkdir()
    days = pd.date_range("2026-03-01", periods=10, freq="D")
    frames = [_day(rng, d, 0.05 if i < 4 else 0.35) for i, d in enumerate(days)]
    for d, f in zip(days, frames, strict=True):
        f.to_parquet(folder / f"{d.date()}.parquet")
    return folder, frames


ARGS = ["--sensitive", "sex", "--label", "label", "--measures", "fairness.tpr", "fairness.cv", "--eps", "0.1"]


def test_a_folder_of_files_is_monitored_and_a_second_run_resumes(log, tmp_path, capsys):
    folder, frames = log
    state = tmp_path / "state.json"
    files = sorted(folder.glob("*.parquet"))
    for f in files[6:]:  # the last days are not written yet
        f.rename(f.with_suffix(".later"))
    assert main(["monitor", str(folder), "--state", str(state), *ARGS]) == 0
    first = capsys.readouterr().out
    assert "6 new batch(es); 6 in all" in first
    for f in files[6:]:
        f.with_suffix(".later").rename(f)
    assert main(["monitor", str(folder), "--state", str(state), *ARGS, "--fail-on-alarm"]) == 1
    out = capsys.readouterr().out
    assert "4 new batch(es); 10 in all" in out and "ALARM fairness.tpr" in out
    # the resumed state equals one run over all files
    whole = FairnessMonitor(["fairness.tpr", "fairness.cv"], eps=0.1)
    for f in frames:
        whole.update(f["prediction"], sensitive_features=f["sex"], y_true=f["label"])
    resumed = FairnessMonitor.load(state)
    cols = ["value", "lower", "upper", "alarm", "alarm_step", "changed_since", "overall_value", "n_rows"]
    pd.testing.assert_frame_equal(resumed.status()[cols], whole.status()[cols])
    assert json.loads(state.read_text())["meta"]["done"] == [f.name for f in files]
    assert main(["monitor", str(folder), "--state", str(state), *ARGS]) == 0  # nothing new
    assert "0 new batch(es); 10 in all" in capsys.readouterr().out


def test_a_duckdb_table_is_batched_by_day(log, tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb")
    _, frames = log
    db = tmp_path / "log.duckdb"
    con = duckdb.connect(str(db))
    allrows = pd.concat(frames, ignore_index=True)  # noqa: F841 - read by DuckDB by name
    con.execute("CREATE TABLE preds AS SELECT * FROM allrows")
    con.close()
    state = tmp_path / "state.json"
    assert main(["monitor", str(db), "--table", "preds", "--time-column", "ts", "--state", str(state), *ARGS]) == 0
    out = capsys.readouterr().out
    assert "10 new batch(es)" in out and "2026-03-10" in out
    assert FairnessMonitor.load(state).times[0].startswith("2026-03-01")


def test_bad_invocations_name_the_flag(log, tmp_path, capsys):
    folder, _ = log
    state = tmp_path / "state.json"
    assert main(["monitor", str(folder), "--state", str(state), "--sensitive", "sex"]) == 2
    assert "pass --measures and --eps" in capsys.readouterr().err
    assert main(["monitor", str(folder), "--state", str(state), *ARGS, "--time-column", "when"]) == 2
    assert "--time-column 'when' is not a column" in capsys.readouterr().err
    assert main(["monitor", str(folder), "--state", str(state), *ARGS, "--alpha", "0.1"]) == 2
    assert "--alpha is now --prob, the level: pass --prob 0.9" in capsys.readouterr().err
    assert main(["monitor", str(folder), "--state", str(state), *ARGS, "--prob", "1.5"]) == 2
    assert "prob=1.5" in capsys.readouterr().err and not state.exists()
    assert main(["monitor", str(folder), "--state", str(state), *ARGS, "--prob", "0.9"]) == 0
    assert FairnessMonitor.load(state).settings["prob"] == 0.9
    capsys.readouterr()
    state.unlink()
    state.write_text("{")
    assert main(["monitor", str(folder), "--state", str(state), *ARGS]) == 2
    assert "truncated" in capsys.readouterr().err
