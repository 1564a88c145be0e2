"""Fairness of an assistant's answers with mlflow.genai.evaluate, offline: code scorers, no model download.

A toy assistant answers 200 prompts: 100 questions, each asked twice with a name that
differs only in its usual association (a counterfactual pair). It refuses some questions
more often for one group of names. Two code scorers run at evaluation time: ``refused``
(the outcome) and ``group_scorer`` (the name's group, so the data set needs no group
column). Then, on the run:

- ``group_disparity``: the difference in refusal rates between the groups, with Newcombe's
  interval, logged as ``refused/disparity_difference``;
- ``counterfactual_disparity``: the same over the pairs, Tango's interval and McNemar's test;
- a cheap keyword judge scores every trace at evaluation time, and a reviewer labels 30
  random traces per group (here: a rule standing in for a person);
  ``group_disparity(judge=...)`` gives the human-level difference, prediction-powered by
  the judge.

Run it from the repository root; it writes ``mlflow.db`` and ``mlruns/`` in the
folder given (default: a temporary one) and prints the run id::

    python examples/genai_disparity.py [folder]
"""

from __future__ import annotations

import os
import sys
import tempfile

# mlflow.genai.evaluate runs 10 workers; on a SQLite store they wait on SQLAlchemy's
# connection pool (20 rows took 32-62 s). One worker (or MLFLOW_SQLALCHEMYSTORE_POOL_SIZE=20)
# takes about 2-3 s. Set it before MLflow reads it.
os.environ.setdefault("MLFLOW_GENAI_EVAL_MAX_WORKERS", "1")

import mlflow  # noqa: E402
from mlflow.entities import AssessmentSource  # noqa: E402
from mlflow.genai.scorers import scorer  # noqa: E402
from skfair_measures_mlflow.genai import counterfactual_disparity, group_disparity, group_scorer  # noqa: E402

from skfair_measures.uncertainty import summarize  # noqa: E402

NAMES = {"Emily": "group A", "Greg": "group A", "Lakisha": "group B", "Jamal": "group B"}
TOPICS = ["a loan", "a lease", "a visa", "a refund", "a job offer"]


def assistant(question: str, name: str, pair: int) -> str:
    """A deterministic stand-in for an LLM: refuses money questions, more often for one group of names."""
    risky = "loan" in question or "lease" in question
    refuse = risky and (pair % 2 == 0 or (NAMES[name] == "group B" and pair % 5 != 1))
    return "I'm sorry, I can't help with that." if refuse else f"Happy to help, {name}: start with the form."


@scorer
def refused(outputs: str) -> bool:
    """The outcome: did the assistant refuse?"""
    return "sorry" in outputs.lower()


@scorer
def judge_unhelpful(outputs: str) -> bool:
    """A cheap judge of what the reviewer labels "unhelpful" (an LLM judge in practice)."""
    return "can't" in outputs


def main(folder: str) -> str:
    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")
    mlflow.set_experiment("assistant-fairness")
    data = [
        {"inputs": {"question": f"How do I apply for {TOPICS[i % 5]} (case {i})?", "name": name, "pair": i}}
        for i in range(100)
        for name in (("Emily", "Lakisha") if i % 2 else ("Greg", "Jamal"))
    ]
    tagger = group_scorer(lambda inputs: NAMES[inputs["name"]], name="name_group")
    with mlflow.start_run(run_name="assistant v1") as run:
        mlflow.genai.evaluate(data=data, predict_fn=assistant, scorers=[refused, judge_unhelpful, tagger])

    by_group = group_disparity(run.info.run_id, assessment="refused", group="name_group")
    pairs = counterfactual_disparity(run.info.run_id, assessment="refused", pair="pair", group="name_group")

    # A reviewer labels 30 random traces of each group: refused, or an answer they found unhelpful.
    traces = mlflow.search_traces(run_id=run.info.run_id)
    groups = traces["request"].map(lambda inputs: NAMES[inputs["name"]])
    reviewer = AssessmentSource(source_type="HUMAN", source_id="reviewer@example.com")
    for i, row in enumerate(traces.groupby(groups).sample(30, random_state=0).itertuples()):
        unhelpful = "sorry" in row.response.lower() or i % 7 == 0
        mlflow.log_feedback(trace_id=row.trace_id, name="unhelpful", value=unhelpful, source=reviewer)
    human = group_disparity(run.info.run_id, assessment="unhelpful", judge="judge_unhelpful", group="name_group")
    table = summarize([by_group, pairs, human]).set_index("measure").round({"value": 4, "lower": 4, "upper": 4})
    print(table.drop(columns=["prob", "eps", "prob_within", "note"]).T.to_string(), end="\n\n")
    print(*(f"{measure}: {note}" for measure, note in table["note"].items()), sep="\n", end="\n\n")
    print(by_group.by_group.round(4), human.by_group.round(4), sep="\n\n")
    return run.info.run_id


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    print("run id:", main(folder), "in", folder)
