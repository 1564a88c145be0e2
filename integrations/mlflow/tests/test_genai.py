"""Group disparities of GenAI evaluations: a real ``mlflow.genai.evaluate`` run, judges with human labels, pairs."""

import pandas as pd
import pytest
from _helpers import artifacts, metrics, read_json, tags
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.entities import AssessmentSource
from skfair_measures_mlflow import FairnessLoggingWarning
from skfair_measures_mlflow.genai import counterfactual_disparity, group_disparity, group_scorer

from skfair_measures._small_sample import newcombe
from skfair_measures.bayes import AsymptoticWarning

mlflow = pytest.importorskip("mlflow")


def _answer(question: str, name: str, pair: int = 0) -> str:
    """A deterministic 'assistant': refuses the questions of one group more often."""
    refuse = len(question) % 3 == 0 if name in ("Aisha", "Darnell") else len(question) % 5 == 0
    return "Sorry, I cannot help with that." if refuse else f"Sure, {name}: here is how."


NAMES = {"Emily": "group_a", "Greg": "group_a", "Aisha": "group_b", "Darnell": "group_b"}


@pytest.fixture(scope="module")
def evaluated(tracking):
    """One ``mlflow.genai.evaluate`` run over 24 prompts, 12 pairs that differ only in the name."""
    from mlflow.genai.scorers import scorer

    @scorer
    def refused(outputs) -> bool:
        return outputs.startswith("Sorry")

    questions = [f"How do I renew my {'x' * i} permit?" for i in range(12)]
    data = [
        {"inputs": {"question": q, "name": name, "pair": i}}
        for i, q in enumerate(questions)
        for name in (("Emily", "Aisha") if i % 2 else ("Greg", "Darnell"))
    ]
    tagger = group_scorer(lambda inputs: NAMES[inputs["name"]], name="name_group")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")  # 10 workers wait on sqlite's connection pool
        result = mlflow.genai.evaluate(data=data, predict_fn=_answer, scorers=[refused, tagger])
    expected = pd.DataFrame([d["inputs"] for d in data])
    expected["refused"] = [_answer(r.question, r.name).startswith("Sorry") for r in expected.itertuples()]
    expected["group"] = expected["name"].map(NAMES)
    return result.run_id, expected


def test_group_disparity_of_a_real_run_is_the_rate_difference_by_hand(evaluated):
    run_id, expected = evaluated
    rates = expected.groupby("group")["refused"].mean()
    result = group_disparity(run_id, assessment="refused", group="name_group")
    assert result.value == pytest.approx(rates["group_b"] - rates["group_a"])
    assert (
        result.groups == ("group_a", "group_b")
        and result.construction == "Newcombe hybrid score (continuity-corrected)"
    )
    k, n = expected.groupby("group")["refused"].sum(), expected.groupby("group").size()
    assert result.interval() == pytest.approx(newcombe(k["group_b"], n["group_b"], k["group_a"], n["group_a"], 0.05))
    lo, hi = result.interval()
    assert lo <= result.value <= hi
    logged = metrics(run_id)
    assert logged["refused/disparity_difference"] == pytest.approx(result.value)
    assert logged["refused/disparity_difference_lower"] == pytest.approx(lo)
    assert tags(run_id)["fairness.refused/disparity_difference.verdict"] == result.verdict(0.05)
    assert "fairness/refused_disparity_difference_by_group.json" in artifacts(run_id, "fairness")
    table = read_json(run_id, "fairness/refused_disparity_difference_by_group.json")
    assert [row[table["columns"].index("items")] for row in table["data"]] == [12, 12]
    # the same from an input key and from a function of the row, on the frame
    frame = mlflow.search_traces(run_id=run_id)
    by_input = group_disparity(frame, assessment="refused", group=lambda row: NAMES[row["request"]["name"]], log=False)
    assert by_input.value == pytest.approx(result.value)


def test_counterfactual_pairs_of_a_real_run(evaluated):
    run_id, expected = evaluated
    wide = expected.pivot(index="pair", columns="group", values="refused").astype(float)
    result = counterfactual_disparity(run_id, assessment="refused", pair="pair", group="name_group")
    assert result.value == pytest.approx((wide["group_b"] - wide["group_a"]).mean())
    assert result.test == "McNemar exact" and 0 <= result.p_value <= 1
    assert metrics(run_id)["refused/counterfactual_difference"] == pytest.approx(result.value)


def test_judge_with_human_labels_is_prediction_powered_and_logged(evaluated):
    """The code scorer is the judge on every trace; a reviewer labels every other trace (and disagrees twice)."""
    run_id, expected = evaluated
    frame = mlflow.search_traces(run_id=run_id)
    human = AssessmentSource(source_type="HUMAN", source_id="reviewer")
    for trace_id, request in zip(frame["trace_id"], frame["request"], strict=True):
        if request["pair"] % 2 == 0:  # 6 pairs: 6 traces per group
            value = _answer(**request).startswith("Sorry") != (request["pair"] in (2, 4) and request["name"] == "Greg")
            mlflow.log_feedback(trace_id=trace_id, name="human_refused", value=value, source=human)
    with pytest.warns(AsymptoticWarning, match="6 labelled item"):
        result = group_disparity(run_id, assessment="human_refused", judge="refused", group="name_group")
    assert result.construction == "prediction-powered (PPI++)" and result.n == 24
    assert result.by_group["labelled"].tolist() == [6, 6] and result.by_group["items"].tolist() == [12, 12]
    lo, hi = result.interval()
    assert lo <= result.value <= hi
    assert metrics(run_id)["human_refused/disparity_difference"] == pytest.approx(result.value)


def test_errors_name_the_argument():
    frame = pd.DataFrame(
        {
            "trace_id": ["t1", "t2", "t3"],
            "request": [{"g": "a"}, {"g": "b"}, {"g": "c"}],
            "assessments": [[{"assessment_name": "ok", "feedback": {"value": v}}] for v in (1, 0, 2)],
        }
    )
    with pytest.raises(ValueError, match=r"assessment='ok' is 2 on trace t3"):
        group_disparity(frame, assessment="ok", group="g", log=False)
    with pytest.raises(ValueError, match=r"assessment='nope': no trace"):
        group_disparity(frame, assessment="nope", group="g", log=False)
    frame["assessments"] = [[{"assessment_name": "ok", "feedback": {"value": "yes"}}]] * 3
    with pytest.raises(ValueError, match="group has 3 value"):
        group_disparity(frame, assessment="ok", group="g", log=False)
    with pytest.raises(ValueError, match="group='h' is neither"):
        group_disparity(frame, assessment="ok", group="h", log=False)
    with pytest.raises(TypeError, match="run id or the frame"):
        group_disparity(3, assessment="ok", group="g")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "y"]), st.booleans(), st.booleans(), st.booleans()), min_size=2))
def test_frame_reading_takes_the_latest_valid_assessment(rows):
    """Each trace: a group, its latest valid value, an older value and an overridden (invalid) newer one."""

    def items(value, older, overridden):
        return [
            {"assessment_name": "ok", "feedback": {"value": older}, "last_update_time": "2026-01-01T00:00:00Z"},
            {"assessment_name": "ok", "feedback": {"value": value}, "last_update_time": "2026-02-01T00:00:00Z"},
            {"assessment_name": "ok", "feedback": {"value": overridden}, "valid": False, "last_update_time": "2026-03"},
            {"assessment_name": "other", "feedback": {"value": "text"}},
        ]

    frame = pd.DataFrame(
        {
            "trace_id": [f"t{i}" for i in range(len(rows))],
            "request": [{"g": g} for g, *_ in rows],
            "assessments": [items(v, o, x) for _, v, o, x in rows],
        }
    )
    truth = pd.DataFrame({"g": [r[0] for r in rows], "v": [float(r[1]) for r in rows]}).groupby("g")["v"].mean()
    if len(truth) < 2:
        with pytest.raises(ValueError, match="group has 1 value"):
            group_disparity(frame, assessment="ok", group="g", log=False)
        return
    result = group_disparity(frame, assessment="ok", group="g", log=False)
    assert result.value == pytest.approx(truth["y"] - truth["x"])


def test_a_dead_server_costs_the_logging_not_the_result(dead_server, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    frame = pd.DataFrame(
        {
            "trace_id": ["t1", "t2", "t3", "t4"],
            "request": [{"g": g} for g in "aabb"],
            "trace_metadata": [{"mlflow.sourceRun": "r1"}] * 4,
            "assessments": [[{"assessment_name": "ok", "feedback": {"value": v}}] for v in (1, 0, 1, 1)],
        }
    )
    with pytest.warns(FairnessLoggingWarning, match="log ok/disparity_difference to run r1: could not"):
        result = group_disparity(frame, assessment="ok", group="g")
    assert result.value == pytest.approx(0.5)
    with pytest.raises(ValueError, match="log=True, but the traces come from 0 runs"):
        group_disparity(frame.drop(columns="trace_metadata"), assessment="ok", group="g")


def test_reading_a_run_from_a_dead_server_fails_in_seconds_naming_it(dead_server):
    # found by the held-out fault suite: group_disparity(run_id) read the traces outside the package's timeout policy,
    # so MLflow's own retries (7, with back-off) left it without an answer for over 3 minutes
    import time

    from skfair_measures_mlflow._session import TrackingUnreachableError

    start = time.monotonic()
    with pytest.raises(TrackingUnreachableError, match="127.0.0.1:9 did not accept a connection"):
        group_disparity("0" * 32, assessment="ok", group="g")
    assert time.monotonic() - start < 5
