"""``skfair plan`` end to end: the printed plan is the plan of ``sfm.plan_labels`` on the same inputs."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures.cli import main


@pytest.fixture
def predictions(tmp_path):
    rng = np.random.default_rng(0)
    group = np.repeat(["a", "b"], [600, 400])
    y_pred = rng.integers(0, 2, group.size)
    score = np.where(y_pred == 1, 0.85, 0.15)
    path = tmp_path / "p.csv"
    pd.DataFrame({"sex": group, "score": score, "prediction": y_pred}).to_csv(path, index=False)
    return path, group, score


def _printed(out: str) -> dict[str, list[str]]:
    """The plan table's rows as printed: group -> its cells."""
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] in ("a", "b", "total"):
            rows[cells[0]] = cells[1:]
    return rows


def test_scores_plan_prints_and_writes_the_library_plan(predictions, tmp_path, capsys):
    path, group, score = predictions
    out_json = tmp_path / "plan.json"
    status = main(
        [
            "plan",
            str(path),
            "--sensitive",
            "sex",
            "--measure",
            "fairness.acc",
            "--eps",
            "0.25",
            "--score",
            "score",
            "--n-sim",
            "10",
            "--random-state",
            "3",
            "--json",
            str(out_json),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    plan = sfm.plan_labels(
        sfm.msr("fairness.acc"), eps=0.25, scores=score, sensitive_features=group, n_sim=10, random_state=3
    )
    printed = _printed(out)
    assert {g: int(cells[1]) for g, cells in printed.items()} == plan["labels"].to_dict()
    assert {g: int(cells[0]) for g, cells in printed.items()} == plan["rows"].to_dict()
    assert f"simulated power {plan.attrs['power']:.2f}" in out
    assert "at level 95% with power 0.8" in out and f"decision is {plan.attrs['decision']!r}" in out
    assert max(map(len, out.splitlines())) < 120
    written = json.loads(out_json.read_text())
    assert {g: v["labels"] for g, v in written["plan"].items()} == plan["labels"].to_dict()
    assert written["power"] == plan.attrs["power"] and written["measure"] == "fairness.acc"


def test_rates_plan_counts_group_sizes_in_the_file(predictions, capsys):
    path, group, _ = predictions
    status = main(
        [
            "plan",
            str(path),
            "--sensitive",
            "sex",
            "--measure",
            "fairness.tpr",
            "--eps",
            "0.3",
            "--rates",
            "a=0.9",
            "b=0.85",
            "--denominator-share",
            "a=0.5",
            "b=0.4",
            "--prob",
            "0.9",
            "--allocation",
            "proportional",
            "--n-sim",
            "10",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    plan = sfm.plan_labels(
        sfm.msr("fairness.tpr"),
        eps=0.3,
        group_sizes={"a": 600, "b": 400},
        rates={"a": 0.9, "b": 0.85},
        denominator_share={"a": 0.5, "b": 0.4},
        prob=0.9,
        allocation="proportional",
        n_sim=10,
    )
    printed = _printed(out)
    assert {g: int(cells[1]) for g, cells in printed.items()} == plan["labels"].to_dict()
    assert [float(printed[g][2]) for g in ("a", "b")] == [0.9, 0.85]
    assert "at level 90%" in out and f"simulated power {plan.attrs['power']:.2f}" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], r"pass --score COL .* or --rates GROUP=RATE"),
        (["--rates", "a:0.9", "b=0.8"], r"--rates a:0.9: write GROUP=NUMBER, e.g. --rates a=0.8"),
        (["--rates", "a=0.9"], r"--rates names the groups \['a'\]; the file's groups are \['a', 'b'\]"),
        (["--score", "nope"], r"--score nope: no such column"),
        (["--score", "score", "--rates", "a=0.9", "b=0.8"], r"pass one or the other"),
        (["--score", "score", "--eps", "0"], r"--eps 0: pass a positive tolerance"),
        (["--score", "score", "--power", "1.2"], r"--power 1.2: pass a probability"),
        (["--score", "score", "--n-sim", "3"], r"--n-sim 3: pass at least 10"),
        (["--score", "score", "--measure", "fairness.nope"], r"--measure fairness.nope: .*`skfair measures`"),
        (["--rates", "a=0.8", "b=0.8", "--measure", "fairness.tpr"], r"pass --denominator-share"),
        (["--score", "score", "--eps", "0.01"], r"raise --eps, lower --power or --prob, or give --score"),
        (["--score", "score", "--alpha", "0.1"], r"--alpha is now --prob, .*: pass --prob 0.9"),
        (["--score", "score", "--prob", "1"], r"--prob 1: pass a probability"),
    ],
)
def test_a_bad_flag_is_named_with_its_fix(predictions, capsys, extra, message):
    path, _, _ = predictions
    argv = ["plan", str(path), "--sensitive", "sex", "--measure", "fairness.acc", "--eps", "0.25", "--n-sim", "10"]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("skfair plan: error: ") and re.search(message, err), err


def test_an_empty_group_cell_is_refused_as_skfair_audit_refuses_it(tmp_path, capsys):
    frame = pd.DataFrame({"sex": ["a", "b"] * 300, "prediction": [1, 0] * 300})
    frame.loc[7, "sex"] = None
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    argv = ["plan", str(path), "--sensitive", "sex", "--measure", "fairness.acc", "--eps", "0.25"]
    assert main([*argv, "--rates", "a=0.9", "b=0.8"]) == 2
    assert "--sensitive sex: 1 row(s)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="sensitive_features has 1 missing value"):
        sfm.plan_labels(
            sfm.msr("fairness.acc"), eps=0.2, scores=np.full(4, 0.5), sensitive_features=["a", "b", np.nan, "a"]
        )


def test_label_column_checks_the_scores_calibration(tmp_path, capsys):
    rng = np.random.default_rng(1)
    sex = np.repeat(["a", "b"], 500)
    y = (rng.uniform(size=1000) < np.where(sex == "a", 0.9, 0.7)).astype(float)
    frame = pd.DataFrame({"sex": sex, "score": np.where(sex == "a", 0.55, 0.45), "label": y})
    frame.loc[rng.uniform(size=1000) < 0.8, "label"] = np.nan
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    argv = ["plan", str(path), "--sensitive", "sex", "--measure", "fairness.acc", "--eps", "0.3", "--n-sim", "10"]
    assert main([*argv, "--score", "score", "--label", "label"]) == 0
    out = capsys.readouterr().out
    assert "calibration check:" in out and "recalibrated" in out and "a normal approximation would ask" in out
    assert main([*argv, "--score", "score", "--label", "nope"]) == 2
    assert "--label nope: no such column" in capsys.readouterr().err
