"""The plugin builds on skfair_measures' public API only."""

import ast
import pathlib

import skfair_measures_mlflow

PLUGIN = pathlib.Path(skfair_measures_mlflow.__file__).parent


def _imported_modules(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []


def test_no_private_module_or_name_of_the_library_is_imported():
    private = []
    for path in PLUGIN.rglob("*.py"):
        for module, names in _imported_modules(path):
            if module.split(".")[0] != "skfair_measures":
                continue
            parts = module.split(".")[1:] + names
            private += [f"{path.name}: {module} {names}" for part in parts if part.startswith("_")]
    assert not private, private
