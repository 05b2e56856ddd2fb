"""The rules core and the odds import only the standard library (DESIGN.md); imports point inward."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["rules", "odds"])
def test_pure_packages_import_only_the_standard_library(package):
    offenders = []
    for path in sorted((ROOT / "streams" / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                allowed = top in sys.stdlib_module_names or top == "__future__" or (
                    name.startswith("streams.rules") or (package == "odds" and name.startswith("streams.odds")))
                if not allowed:
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []


def test_import_linter_contracts_hold():
    """The import-linter contracts configured in pyproject.toml (layers and forbidden imports)."""
    result = subprocess.run(["lint-imports", str(ROOT / "pyproject.toml")], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
