"""The rules core, the odds and the surveillance books import only the standard library and msgspec
(the core's events are msgspec Structs: docs/architecture.md, "The core's one outside import"), and each
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
PURE_BELOW = {"rules": ("craps_streams.rules",), "odds": ("craps_streams.rules", "craps_streams.odds"),
              "surveillance": ("craps_streams.rules", "craps_streams.odds", "craps_streams.accelerator",
                               "craps_streams.surveillance"),
              "authenticity": ("craps_streams.rules", "craps_streams.accelerator", "craps_streams.authenticity"),
              "accelerator": ("craps_streams.rules", "craps_streams.accelerator")}


@pytest.mark.parametrize("package", sorted(PURE_BELOW))
def test_pure_packages_import_only_the_standard_library(package):
    offenders = []
    for path in sorted((ROOT / "craps_streams" / package).rglob("*.py")):
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


def _contract(name_start: str) -> dict:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["name"].startswith(name_start):
            return contract
    raise AssertionError(f"no import contract named {name_start!r}...")


def _top_level_modules() -> set[str]:
    return {f"craps_streams.{p.stem}" for p in (ROOT / "craps_streams").iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}


def test_every_module_but_the_kafka_adapter_is_kept_from_the_kafka_libraries():
    """A forbidden contract covers only the modules it lists: a new package must be listed."""
    contract = _contract("Only the Kafka adapter")
    assert set(contract["forbidden_modules"]) == {"aiokafka", "kafka"}
    assert set(contract["source_modules"]) == _top_level_modules() - {"craps_streams.kafka", "craps_streams.floor"}


def test_every_module_but_the_floor_view_is_kept_from_faust():
    contract = _contract("Only the floor view")
    assert set(contract["source_modules"]) == _top_level_modules() - {"craps_streams.floor"}


def test_no_module_outside_the_adapter_names_a_kafka_library():
    """Belt and braces beside import-linter: also catches an import inside a function or a string
    passed to importlib."""
    offenders = []
    for path in sorted((ROOT / "craps_streams").rglob("*.py")):
        if path.is_relative_to(ROOT / "craps_streams" / "kafka"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names
                          if n.split(".")[0] in ("aiokafka", "kafka")]
    assert offenders == []
