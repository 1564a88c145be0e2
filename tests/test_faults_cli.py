"""The ``skfair`` contract under faults: every write and read of a user's file fails in one line, with its exit code.

Exit codes (``_cli_contract.EXIT_CODES``): 2 a file that cannot be read, 3 a missing
optional dependency, 4 an output that cannot be written. Faults: a read-only folder, a
full disk (``/dev/full``), a folder where a file was expected, corrupt and binary files,
missing packages (simulated with ``sys.modules[name] = None``). What was printed before
the failure stays printed.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pandas as pd
import pytest

from skfair_measures._cli_contract import EXIT_CODES
from skfair_measures._optional import MissingDependencyError
from skfair_measures.cli import main


@pytest.fixture
def readonly(tmp_path):
    """A folder no file can be created in (root ignores permission bits: then sysfs, which refuses new files)."""
    if os.geteuid() == 0:
        yield "/sys"
        return
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    yield str(folder)
    folder.chmod(0o755)


@pytest.fixture
def csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    sex = rng.choice(["F", "M"], n)
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 + 0.4 * y + rng.normal(0, 0.2, n), 0.01, 0.99).round(3)
    frame = pd.DataFrame({"label": y.astype(float), "score": score, "prediction": (score >= 0.5).astype(int)})
    frame["sex"] = sex
    frame.loc[:59, "label"] = np.nan  # unlabeled rows (read by --posterior ppi)
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def logs(tmp_path):
    rng = np.random.default_rng(1)
    folder = tmp_path / "logs"
    folder.mkdir()
    for day in range(3):
        n = 200
        pd.DataFrame(
            {"prediction": rng.integers(0, 2, n), "label": rng.integers(0, 2, n), "sex": rng.choice(["F", "M"], n)}
        ).to_parquet(folder / f"2026-01-0{day + 1}.parquet")
    return folder


def _one_line(capsys, command: str) -> tuple[str, str]:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    assert captured.err.startswith(f"skfair {command}: error: ")
    return captured.out, captured.err


def test_help_and_docs_state_the_one_table_of_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "cli.md"), encoding="utf-8") as f:
        docs = f.read()
    for code, text in EXIT_CODES.items():
        assert re.search(rf"^\s+{code}\s+{re.escape(text)}$", out, re.M), (code, out)
        assert re.search(rf"^\| {code} \| ", docs, re.M)


@pytest.mark.parametrize("where", ["readonly", "/dev/full", "a file as folder"])
def test_audit_html_that_cannot_be_written_is_one_line_exit_4_and_the_table_stays_printed(
    csv, tmp_path, readonly, capsys, where
):
    target = {
        "readonly": os.path.join(readonly, "report.html"),
        "/dev/full": "/dev/full",
        "a file as folder": str(csv / "report.html"),
    }[where]
    assert main(["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "--html", target]) == 4
    out, err = _one_line(capsys, "audit")
    assert f"--html {target}: cannot write it (" in err
    assert "fairness.tpr" in out  # what was computed before the write is kept


@pytest.mark.parametrize("where", ["readonly", "/dev/full"])
def test_plan_json_that_cannot_be_written_is_one_line_exit_4(tmp_path, readonly, capsys, where):
    target = os.path.join(readonly, "plan.json") if where == "readonly" else "/dev/full"
    y_pred = np.random.default_rng(0).integers(0, 2, 1000)
    csv = tmp_path / "p.csv"
    pd.DataFrame({"sex": np.repeat(["a", "b"], 500), "score": np.where(y_pred == 1, 0.85, 0.15)}).to_csv(csv)
    argv = ["plan", str(csv), "--sensitive", "sex", "--measure", "fairness.acc", "--eps", "0.25", "--score", "score"]
    assert main([*argv, "--n-sim", "10", "--json", target]) == 4
    out, err = _one_line(capsys, "plan")
    assert f"--json {target}: cannot write it (" in err and "total" in out


def test_monitor_state_in_a_readonly_folder_is_one_line_exit_4(logs, readonly, capsys):
    state = os.path.join(readonly, "monitor.json")
    argv = ["monitor", str(logs), "--state", state, "--measures", "fairness.tpr", "--eps", "0.1", "--sensitive", "sex"]
    assert main([*argv, "--label", "label"]) == 4
    _, err = _one_line(capsys, "monitor")
    assert f"--state {state}: cannot write it (" in err


def test_monitor_a_corrupt_parquet_file_is_one_line_exit_2_and_the_batches_before_it_are_saved(logs, tmp_path, capsys):
    (logs / "2026-01-09.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")
    state = tmp_path / "monitor.json"
    argv = ["monitor", str(logs), "--state", str(state), "--measures", "fairness.tpr", "--eps", "0.1"]
    assert main([*argv, "--sensitive", "sex", "--label", "label"]) == 2
    out, err = _one_line(capsys, "monitor")
    assert "2026-01-09.parquet: cannot read it (" in err
    assert out.count(".parquet") == 3  # the three good batches were printed ...
    (logs / "2026-01-09.parquet").unlink()
    assert main([*argv, "--sensitive", "sex", "--label", "label"]) == 0  # ... and saved: the next run resumes
    assert "0 new batch(es); 3 in all" in capsys.readouterr().out


@pytest.mark.parametrize("content", [b"\x00\xff\xfe\x89PNG", b'{"format": "skfair-measures monitor state"'])
def test_monitor_a_state_file_that_is_not_one_is_one_line_exit_2(logs, tmp_path, capsys, content):
    state = tmp_path / "monitor.json"
    state.write_bytes(content)
    assert main(["monitor", str(logs), "--state", str(state), "--sensitive", "sex", "--label", "label"]) == 2
    _, err = _one_line(capsys, "monitor")
    assert str(state) in err and "is not a monitor state" in err


def test_monitor_missing_times_are_an_error_naming_the_column_or_skipped_with_their_count(tmp_path, capsys):
    rng = np.random.default_rng(2)
    folder = tmp_path / "logs"
    folder.mkdir()
    n = 600
    day = pd.Series(pd.Timestamp("2026-01-01") + pd.to_timedelta(rng.integers(0, 3, n), "D"))
    day[:60] = pd.NaT
    frame = pd.DataFrame({"prediction": rng.integers(0, 2, n), "label": rng.integers(0, 2, n), "ts": day})
    frame.assign(sex=rng.choice(["F", "M"], n)).to_parquet(folder / "all.parquet")
    argv = ["monitor", str(folder), "--state", str(tmp_path / "s.json"), "--measures", "fairness.tpr", "--eps", "0.1"]
    argv += ["--sensitive", "sex", "--label", "label", "--time-column", "ts"]
    assert main(argv) == 2
    _, err = _one_line(capsys, "monitor")
    assert "--time-column ts: 60 of 600 rows have no time" in err
    assert main([*argv, "--missing-time", "skip"]) == 0
    captured = capsys.readouterr()
    assert "60 rows have no time; left out" in captured.err and "3 new batch(es)" in captured.out


@pytest.mark.parametrize("content", [b"\x00\x01\xff\xfe" * 50, b"PAR1garbage"])
@pytest.mark.parametrize("command", ["audit", "plan", "label-next"])
def test_a_corrupt_input_file_is_one_line_exit_2(tmp_path, capsys, content, command):
    path = tmp_path / ("preds.parquet" if content.startswith(b"PAR1") else "preds.csv")
    path.write_bytes(content)
    extra = {"audit": [], "plan": ["--measure", "fairness.acc", "--eps", "0.2", "--score", "s"], "label-next": []}
    assert main([command, str(path), "--sensitive", "sex", *extra[command]]) == 2
    _, err = _one_line(capsys, command)
    assert f"{path}: cannot read it (" in err


def test_monitor_without_duckdb_names_the_extra_exit_3(logs, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "duckdb", None)
    argv = ["monitor", str(logs), "--state", str(tmp_path / "s.json"), "--measures", "fairness.tpr", "--eps", "0.1"]
    assert main([*argv, "--sensitive", "sex", "--label", "label"]) == 3
    _, err = _one_line(capsys, "monitor")
    assert "needs the package duckdb" in err and 'pip install "skfair-measures[engines]"' in err


def test_audit_posterior_bc_without_nutpie_names_the_extra_exit_3(csv, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "nutpie", None)
    argv = ["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "--posterior", "bc", "--quiet"]
    assert main(argv) == 3
    _, err = _one_line(capsys, "audit")
    assert "needs the package nutpie" in err and 'pip install "skfair-measures[bayes]"' in err


def test_audit_of_a_parquet_file_without_pyarrow_names_the_extra_exit_3(csv, tmp_path, monkeypatch, capsys):
    path = tmp_path / "preds.parquet"
    pd.read_csv(csv).to_parquet(path)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(["audit", str(path), "--sensitive", "sex"]) == 3
    _, err = _one_line(capsys, "audit")
    assert 'pip install "skfair-measures[engines]"' in err


def test_the_library_names_the_extra_too(monkeypatch):
    import skfair_measures as sfm
    from skfair_measures import bayes

    rng = np.random.default_rng(3)
    n = 200
    y, score, group = rng.integers(0, 2, n), rng.random(n), rng.choice(["a", "b"], n)
    monkeypatch.setitem(sys.modules, "nutpie", None)
    with pytest.raises(MissingDependencyError, match=r"'bc' posterior \(nutpie\) needs .*skfair-measures\[bayes\]"):
        bayes.posterior(
            sfm.msr("fairness.tpr"),
            y[:100],
            score[:100],
            sensitive_features=group[:100],
            unlabeled_scores=score[100:],
            unlabeled_sensitive=group[100:],
            method="bc",
        )


def test_every_optional_import_goes_through_the_one_door():
    """No module imports an optional package itself (type-only imports and the compiled kernels aside)."""
    import ast
    import pathlib

    import skfair_measures
    from skfair_measures._optional import EXTRAS

    # modules imported only after require() has found their package: numba's compiled kernels
    kernels = {"_count_kernel.py", "_bc_density.py"}
    package = pathlib.Path(skfair_measures.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        if path.name in kernels:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for stmt in node.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only or not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if node.__class__ is ast.ImportFrom and node.level:
                continue
            found += [f"{path.relative_to(package)}:{node.lineno} {n}" for n in names if n.split(".")[0] in EXTRAS]
    assert not found, found


def test_monitor_on_a_date_valued_sensitive_column_runs_and_resumes(tmp_path, capsys):
    rng = np.random.default_rng(5)
    folder = tmp_path / "logs"
    folder.mkdir()
    for day in range(2):
        n = 100
        born = pd.to_datetime(rng.choice(["1980-01-01", "1990-01-01"], n))
        frame = pd.DataFrame({"prediction": rng.integers(0, 2, n), "label": rng.integers(0, 2, n), "born": born})
        frame.to_parquet(folder / f"{day}.parquet")
    argv = ["monitor", str(folder), "--state", str(tmp_path / "s.json"), "--measures", "fairness.tpr", "--eps", "0.1"]
    assert main([*argv, "--sensitive", "born", "--label", "label"]) == 0
    assert main([*argv, "--sensitive", "born", "--label", "label"]) == 0  # the saved state loads back
    assert "0 new batch(es); 2 in all" in capsys.readouterr().out


_KILLED_MID_SAVE = """
import os, sys, time
real_fsync = os.fsync
def slow_fsync(fd):  # the new state is written to its temporary file, not yet renamed: the parent kills us here
    real_fsync(fd)
    print("saving", flush=True)
    time.sleep(60)
os.fsync = slow_fsync
from skfair_measures.cli import main
main(sys.argv[1:])
"""


def test_skfair_monitor_killed_mid_save_leaves_the_previous_state(logs, tmp_path):
    import signal
    import subprocess

    state = tmp_path / "monitor.json"
    argv = ["monitor", str(logs), "--state", str(state), "--measures", "fairness.tpr", "--eps", "0.1"]
    argv += ["--sensitive", "sex", "--label", "label"]
    assert main(argv) == 0
    before = state.read_text()
    pd.DataFrame({"prediction": [0, 1] * 50, "label": [1, 1] * 50, "sex": ["F", "M"] * 50}).to_parquet(
        logs / "2026-01-04.parquet"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-c", _KILLED_MID_SAVE, *argv]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert child.stdout.readline().strip() == "saving"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert state.read_text() == before  # the old state, whole
    assert main(argv) == 0  # and the next run does the batch the killed one was saving


def test_monitor_rows_arriving_for_a_period_done_already_are_counted_in_a_warning(tmp_path, capsys):
    rng = np.random.default_rng(7)
    folder = tmp_path / "logs"
    folder.mkdir()

    def day_file(name: str, day: str, n: int) -> None:
        frame = pd.DataFrame({"prediction": rng.integers(0, 2, n), "label": rng.integers(0, 2, n)})
        frame.assign(sex=rng.choice(["F", "M"], n), ts=pd.Timestamp(day)).to_parquet(folder / name)

    day_file("a.parquet", "2026-01-01", 100)
    day_file("b.parquet", "2026-01-05", 100)
    argv = ["monitor", str(folder), "--state", str(tmp_path / "s.json"), "--measures", "fairness.cv", "--eps", "0.1"]
    argv += ["--sensitive", "sex", "--time-column", "ts"]
    assert main(argv) == 0
    day_file("late.parquet", "2026-01-01", 30)  # Jan 1 rows arriving after Jan 5 was monitored
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "30 rows arrived for periods monitored already (2026-01-01 00:00:00); left out" in captured.err
    assert "0 new batch(es); 2 in all" in captured.out


@pytest.mark.parametrize("where", ["readonly", "a file as folder"])
def test_bias_audit_out_that_cannot_be_written_is_one_line_exit_4(tmp_path, readonly, capsys, where):
    rng = np.random.default_rng(8)
    n = 400
    frame = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "race": rng.choice(["A", "B"], n)})
    frame.assign(selected=rng.integers(0, 2, n)).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "file").write_text("")
    out = os.path.join(readonly, "o") if where == "readonly" else str(tmp_path / "file" / "o")
    argv = ["bias-audit", str(tmp_path / "d.csv"), "--sex", "sex", "--race-ethnicity", "race", "--selected"]
    assert main([*argv, "selected", "--out", out]) == 4
    _, err = _one_line(capsys, "bias-audit")
    assert f"--out {out}: cannot write it (" in err


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero"])
def test_monitor_a_state_that_is_a_device_is_refused_unread(logs, capsys, device):
    # found by the held-out fault suite: --state /dev/full was read without end (json.load of an endless file) until
    # the kernel killed the process for memory; as root, save() would then have renamed a file over the device
    argv = ["monitor", str(logs), "--state", device, "--measures", "fairness.tpr", "--eps", "0.1", "--sensitive", "sex"]
    assert main(argv) == 2
    _, err = _one_line(capsys, "monitor")
    assert f"--state {device}: cannot read it (not a regular file)" in err


def test_every_output_is_written_whole_or_not_at_all(tmp_path, csv, monkeypatch, capsys):
    import skfair_measures._files as files

    html = tmp_path / "report.html"
    html.write_text("the previous report")

    def torn(fd, *args, **kwargs):  # the disk fills after the first bytes
        f = open(fd, *args, **kwargs)  # noqa: SIM115
        f.write = lambda data: (_ for _ in ()).throw(OSError(28, "No space left on device"))
        return f

    monkeypatch.setattr(files.os, "fdopen", torn)
    assert main(["audit", str(csv), "--sensitive", "sex", "--html", str(html), "--no-progress"]) == 4
    assert f"--html {html}: cannot write it (No space left on device)" in capsys.readouterr().err
    assert html.read_text() == "the previous report"
    assert {p.name for p in tmp_path.iterdir()} == {"report.html", "preds.csv"}  # no temporary file left behind
