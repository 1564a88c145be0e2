"""What a published library promises: public names only, ``py.typed``, a wheel that installs and runs."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_exposes_only_public_names():
    code = (
        "import skfair_measures as s; "
        "print(sorted(n for n in vars(s) if not n.startswith('_'))); print(sorted(set(dir(s)) - set(s.__all__)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.splitlines() == ["[]", "['__version__']"]


def test_every_public_name_resolves():
    import skfair_measures as sfm

    assert all(getattr(sfm, name) is not None for name in sfm.__all__)


def test_py_typed_is_shipped():
    import tomllib

    assert (ROOT / "skfair_measures" / "py.typed").exists()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["skfair_measures"]
    assert "__init__.pyi" in data["skfair_measures"]  # the public names' types, read at run time to load them


@pytest.mark.slow
def test_wheel_builds_installs_and_runs_in_a_fresh_venv(tmp_path):
    """``python -m build`` makes a wheel; a fresh virtual environment installs it and computes a measure."""
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", tmp_path, ROOT], check=True)
    (wheel,) = tmp_path.glob("skfair_measures-*.whl")
    venv.create(tmp_path / "venv", with_pip=True)
    py = tmp_path / "venv" / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], check=True)
    code = (
        "import pathlib, skfair_measures as s; "
        "assert (pathlib.Path(s.__file__).parent / 'py.typed').exists(); "
        "print(s.msr('fairness.tpr')([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list('aabb')))"
    )
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert out.strip() == "0.5"
