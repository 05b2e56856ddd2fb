"""Every command's --help names every option it takes, with its default, and the environment it
reads; `craps-streams --version` says the version and the rules core."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

from craps_streams.cli import _debug_everywhere, build_parser
from tests.conftest import ROOT


def commands(parser: argparse.ArgumentParser, path=("craps-streams",)):
    """(path, parser) of the top-level parser and every subcommand, nested ones too."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, path + (name,))


def parser() -> argparse.ArgumentParser:
    p = build_parser()
    _debug_everywhere(p)
    return p


def test_every_option_of_every_command_has_help_and_says_its_default():
    missing, no_default = [], []
    for path, p in commands(parser()):
        for action in p._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            name = "/".join(action.option_strings) or action.dest
            if not action.help or action.help == argparse.SUPPRESS or not action.help.strip():
                missing.append(f"{' '.join(path)} {name}")
                continue
            shown = action.default not in (None, False, argparse.SUPPRESS)
            if action.option_strings and shown and "default" not in action.help:
                no_default.append(f"{' '.join(path)} {name} (default {action.default!r})")
    assert not missing, "options without help: " + ", ".join(missing)
    assert not no_default, "help that does not say the default: " + ", ".join(no_default)


def test_every_command_has_a_description():
    bare = [" ".join(path) for path, p in commands(parser()) if not p.description]
    assert not bare, "commands without a description: " + ", ".join(bare)


def test_the_help_names_every_setting():
    """Every setting (craps_streams/settings.py) appears in some command's help, and every CRAPS_*
    name the code mentions is a setting (none read behind the settings' back)."""
    from craps_streams.settings import env_names

    settings = set(env_names())
    shown = "\n".join(p.format_help() for _, p in commands(parser()))
    assert settings <= set(re.findall(r"\bCRAPS_[A-Z_]+\b", shown)), \
        sorted(settings - set(re.findall(r"\bCRAPS_[A-Z_]+\b", shown)))
    named = set()
    for path in (ROOT / "craps_streams").rglob("*.py"):
        named |= set(re.findall(r"\bCRAPS_[A-Z_]+\b", path.read_text()))
    assert named - {"CRAPS_NATIVE_SOURCE", "CRAPS_EXPLORE_SCALE"} <= settings, sorted(named - settings)
    assert ".run/floor.env" in shown and ".secrets/table-keys.json" in shown


def test_the_help_renders_the_settings_table():
    """The worker's --help lists its settings from the table, with their defaults."""
    text = "\n".join(p.format_help() for path, p in commands(parser()) if path[-1] == "worker")
    assert "CRAPS_SESSION_TIMEOUT_MS" in text and "(default 10000)" in text
    assert "docs/operating/settings.md" in text


def test_no_library_code_reads_the_environment():
    """os.environ only in the settings, and where a line says why (a child's environment)."""
    offenders = []
    for path in sorted((ROOT / "craps_streams").rglob("*.py")):
        if path.name == "settings.py" and path.parent.name == "craps_streams":
            continue
        if path.is_relative_to(ROOT / "craps_streams" / "rules"):
            continue  # the rules core's choice (CRAPS_CORE) is read there, before the settings exist
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if ("os.environ" in line or "getenv" in line) and "#" not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert offenders == []


def test_version_says_the_rules_core():
    from craps_streams.accelerator.rules import chosen

    r = subprocess.run([sys.executable, "-m", "craps_streams.cli", "--version"], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"craps-streams \d+\.\d+\.\d+.*", lines[0]) and lines[1].startswith(f"rules core: {chosen().name}")
    r = subprocess.run([sys.executable, "-m", "craps_streams.cli", "--version"], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "CRAPS_CORE": "python"}, timeout=60)
    assert r.stdout.splitlines()[1] == "rules core: python"
