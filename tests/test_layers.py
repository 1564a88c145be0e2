"""Imports run one way: no module imports a layer above its own, and no modules import each other in a circle.

Every import is read, at module level and inside functions alike; an import inside a
function is still an arrow from one module to another. Imports under
``if TYPE_CHECKING:`` are left out: they never run. Importing a submodule also runs its
package's ``__init__``; that arrow is not drawn (a package gathers its own modules).
"""

from __future__ import annotations

import ast
import pathlib

import skfair_measures as sfm

PACKAGE = pathlib.Path(sfm.__file__).parent

#: Layers, bottom up. A module belongs to the first entry that is its name or a package holding it.
LAYERS: dict[str, int] = {
    # 0: the measure core, and modules that import nothing of ours
    **dict.fromkeys(
        [
            "_stats",
            "_arrays",
            "_counts",
            "_groups",
            "_labels",
            "_small_groups",
            "_reuse",
            "_count_kernel",
            "base",
            "operations",
            "results",
            "measures",
            "_inputs",
            "_protocol",
            "_undefined",
            "_together",
            "_progress",
            "_optional",
            "_files",
            "datasets",
            "uncertainty",  # the result type of an estimate with its uncertainty: every door builds on it
        ],
        0,
    ),
    # 1: measure kinds and per-group tools built on the core
    # (_betting: confidence sequences by betting, shared by bayes' guaranteed intervals and the monitor;
    # _verdicts: the simultaneous verdicts of every result with joint draws, the bootstrap's and bayes')
    **dict.fromkeys(
        [
            "regression",
            "ranking",
            "multiclass",
            "groups",
            "groupwise",
            "unaware",
            "_betting",
            "_verdicts",
            "_small_sample",
        ],
        1,
    ),
    # 2: keys to measures
    "registry": 2,
    # 3: what is computed from measures
    **dict.fromkeys(
        ["_bootstrap", "scoring", "selection", "thresholds", "engines", "bayes", "active", "monitor", "outcomes"], 3
    ),
    # 4: applications and the package's face
    # (record: the sink-neutral record of a run, which the MLflow plugin writes)
    **dict.fromkeys(
        [
            "benchmark",
            "report",
            "record",
            "plots",
            "audits",
            "cli",
            "_cli_contract",
            "_cli_bias_audit",
            "_cli_label",
            "_cli_monitor",
            "_cli_plan",
            "",
        ],
        4,
    ),
}

#: Upward imports that stay, each with its reason: (importer, imported) -> why.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _module_name(path: pathlib.Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


MODULES = {_module_name(p)[0]: p for p in PACKAGE.rglob("*.py")}


def _not_run(tree: ast.Module) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` (never executed)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool) -> list[str]:
    """The modules of ours an import statement loads (a ``from pkg import module`` names the module)."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    if isinstance(node, ast.ImportFrom) and node.level:
        base = package[: len(package) - node.level + 1]
        target = ".".join([*base, *([node.module] if node.module else [])])
    elif isinstance(node, ast.ImportFrom):
        if not (node.module or "").startswith("skfair_measures"):
            return []
        target = node.module.removeprefix("skfair_measures").lstrip(".")
    else:
        return [
            a.name.removeprefix("skfair_measures").lstrip(".")
            for a in node.names
            if a.name.startswith("skfair_measures")
        ]
    subs = [f"{target}.{a.name}" if target else a.name for a in node.names]
    return [s if s in MODULES else target for s in subs]


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, at any depth of its code."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        skip = _not_run(tree)
        is_package = path.name == "__init__.py"
        graph[name] = {
            t
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skip
            for t in _targets(node, name, is_package)
            if t != name and t in MODULES
        }
    return graph


def layer(module: str) -> int:
    head = module.split(".")[0]
    if module in LAYERS:
        return LAYERS[module]
    if head in LAYERS:
        return LAYERS[head]
    raise KeyError(f"module {module!r} has no layer; add it to LAYERS in tests/test_layers.py")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def upward(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
        for a, targets in graph.items()
        for b in targets
        if layer(b) > layer(a) and (a, b) not in ALLOWED_UPWARD
    )


def test_every_module_has_a_layer():
    for module in MODULES:
        layer(module)


def test_no_import_runs_upward():
    assert upward(import_graph()) == []


def test_the_allowed_upward_imports_exist_and_say_why():
    graph = import_graph()
    for (a, b), why in ALLOWED_UPWARD.items():
        assert b in graph[a] and layer(b) > layer(a) and why, (a, b)


def test_no_module_circle():
    assert circles(import_graph()) == []


def test_the_core_imports_nothing_above_it():
    graph = import_graph()
    core = [m for m in graph if layer(m) == 0]
    assert {b for a in core for b in graph[a] if layer(b) > 0} == set()


def test_an_added_upward_import_is_found():
    graph = {m: set(t) for m, t in import_graph().items()}
    graph["measures"].add("scoring")  # what Measure.as_scorer did
    assert "measures (layer 0) imports scoring (layer 3)" in upward(graph)
    assert any("measures" in c and "scoring" in c for c in circles(graph))


def test_function_level_and_type_checking_imports_are_read(tmp_path, monkeypatch):
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from .scoring import FairnessScorer\n"
        "def f():\n    from .bayes import posterior\n    return posterior\n"
    )
    monkeypatch.setitem(MODULES, "measures", tmp_path / "measures.py")
    (tmp_path / "measures.py").write_text(code)
    graph = import_graph()
    assert graph["measures"] == {"bayes"}  # the function's import counts; TYPE_CHECKING's does not


def test_every_public_name_resolves_lazily():
    """``__all__`` and the lazy table agree: every name loads (a second ``__getattr__`` would shadow the first)."""
    source = (PACKAGE / "__init__.py").read_text()
    assert source.count("def __getattr__") == 1
    missing = [name for name in sfm.__all__ if getattr(sfm, name, None) is None]
    assert not missing
