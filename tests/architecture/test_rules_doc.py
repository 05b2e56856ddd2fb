"""The repository carries its own rules document (docs/rules.md): code, tests and README point to
it, never outside the repository, and every section it cites is there."""
from __future__ import annotations

import pathlib
import re
import subprocess

from tests.architecture.test_imports import ROOT

RULES = ROOT / "docs" / "rules.md"
SECTIONS = ("601a.2", "623a.5", "623a.8", "623a.10", "623a.11", "623a.12", "623b.3", "623c.1", "623c.4")


def _tracked_text_files():
    names = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.toml", "*.yml", "*.sh", "*.html", "Makefile"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if (ROOT / n).exists()]


def test_nothing_points_outside_the_repository_for_the_rules():
    offenders = [str(p.relative_to(ROOT)) for p in _tracked_text_files()
                 if p.resolve() != pathlib.Path(__file__).resolve() and re.search(r"\.\./shared|/work/shared|(?<![/\w])RULES\.md", p.read_text(errors="replace"))]
    assert offenders == []


def test_every_cited_heading_of_the_rules_document_exists():
    text = RULES.read_text()
    titles = {m.lower() for m in re.findall(r"^#+ (.+)$", text, re.M)} | \
        {m.lower() for m in re.findall(r"\*\*([^*]+)\*\*", text)}
    cited = set()
    for p in _tracked_text_files():
        cited |= {m.lower() for m in re.findall(r"docs/rules\.md,? ([A-Z][a-z]+(?: [a-z]+)?)", p.read_text(errors="replace"))}
    missing = [c for c in cited if not any(t.startswith(c) or c in t for t in titles)]
    assert cited and missing == []


def test_the_rules_document_cites_every_section_the_engine_implements():
    text = RULES.read_text()
    assert [s for s in SECTIONS if f"§ {s}" not in text] == []
