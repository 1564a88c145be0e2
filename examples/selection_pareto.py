"""Regenerate docs/selection_pareto.png: the Pareto plot of docs/scoring.md (``python examples/selection_pareto.py``).

It runs the model-selection step of the demo (a decision tree on the Adult training split,
accuracy subject to fairness.eod <= 0.05) and saves its plot into docs/.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from sklearn.model_selection import train_test_split

import skfair_measures as sfm

sys.path.insert(0, str(Path(__file__).parent))
from demo import tune  # noqa: E402  (the demo's own selection step, so the docs show what it prints)


def main() -> int:
    import matplotlib

    matplotlib.use("Agg")
    warnings.filterwarnings("ignore", category=FutureWarning)
    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    X_train, _, y_train, _ = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    with tempfile.TemporaryDirectory() as tmp:
        tune(X_train, y_train, Path(tmp))
        target = Path(__file__).resolve().parent.parent / "docs" / "selection_pareto.png"
        shutil.copy(Path(tmp) / "pareto_front.png", target)
    print(f"written {target.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
