"""docs/architecture.md is written from the code: its package map names every top-level module of
craps_streams, and its layers line names the packages in the order the import contract has them."""
from __future__ import annotations

import re
import tomllib

from tests.conftest import ROOT

DOC = (ROOT / "docs" / "architecture.md").read_text()


def top_level_modules() -> set[str]:
    package = ROOT / "craps_streams"
    return {p.stem for p in package.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and not p.name.startswith("__"))}


def test_the_package_map_names_every_top_level_module():
    mapped = set(re.findall(r"`craps_streams/([a-z_]+)(?:/|\.py)`", DOC))
    assert top_level_modules() - mapped == set()
    assert mapped - top_level_modules() == set(), "the page names a module that is not there"


def test_the_layers_line_follows_the_contract():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    # Innermost first, as the page writes it: each layer's packages by their last name.
    contract = [sorted(re.findall(r"craps_streams\.([a-z_]+)", layer)) for layer in reversed(layers)]
    line = re.search(r"```\n(rules <- .*?)\n```", DOC, re.S).group(1)
    written = [sorted(re.findall(r"[a-z_]+", part)) for part in re.split(r"<-", line)]
    assert written == contract
