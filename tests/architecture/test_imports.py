"""The rules core, the odds and the surveillance books import only the standard library and msgspec
(the core's events are msgspec Structs: the README, "The core's one outside import"), and each
other, inward; imports point inward."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


# The one library the pure packages may import (frozen Structs, JSON decoding of the contract).
ALLOWED_LIBRARIES = ("msgspec",)
# Each pure package may import the pure packages below it.
PURE_BELOW = {"rules": ("streams.rules",), "odds": ("streams.rules", "streams.odds"),
              "surveillance": ("streams.rules", "streams.odds", "streams.surveillance")}


@pytest.mark.parametrize("package", sorted(PURE_BELOW))
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
                allowed = top in sys.stdlib_module_names or top == "__future__" or \
                    top in ALLOWED_LIBRARIES or name.startswith(PURE_BELOW[package])
                if not allowed:
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []


def test_import_linter_contracts_hold():
    """The import-linter contracts configured in pyproject.toml (layers and forbidden imports)."""
    result = subprocess.run(["lint-imports", str(ROOT / "pyproject.toml")], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
