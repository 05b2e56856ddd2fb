"""The command line's start and exit: a command named on the line gets its group's parser alone,
which parses it as the whole parser does; the program that ends at once after a replay
(`cli.console`) has written every byte; the collector paused for the CLI's imports runs again."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from craps_streams.cli import GROUPS, _command_of, _debug_everywhere, build_parser
from tests.conftest import ROOT


def _subcommands(parser: argparse.ArgumentParser) -> dict:
    return {name: sub for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def _options(parser: argparse.ArgumentParser) -> list:
    return [(a.dest, tuple(a.option_strings), a.default, a.nargs, a.help, repr(a.choices), a.required)
            for a in parser._actions]


@pytest.mark.parametrize("group", GROUPS)
def test_a_group_named_command_parses_as_the_whole_parser_does(group):
    whole = build_parser()
    _debug_everywhere(whole)
    alone = build_parser(group)
    _debug_everywhere(alone)
    commands = _subcommands(alone)
    if group not in _subcommands(whole):  # a group that holds no command of its name: the whole parser
        assert commands.keys() == _subcommands(whole).keys()
        return
    assert group in commands and set(commands) <= set(_subcommands(whole))
    for name, sub in commands.items():
        assert _options(sub) == _options(_subcommands(whole)[name]), name
        assert sub.format_help() == _subcommands(whole)[name].format_help(), name


def test_anything_but_a_command_gets_the_whole_parser():
    every = set(_subcommands(build_parser()))
    for argv in ([], ["--help"], ["--debug"], ["no-such-command"]):
        assert set(_subcommands(build_parser(_command_of(argv)))) == every, argv
    assert _command_of(["--debug", "replay", "x.jsonl", "-o", "-"]) == "replay"


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    # Buffered standard streams, as a program's are by default (PYTHONUNBUFFERED would flush every write).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-m", "craps_streams.cli", *args], cwd=cwd, capture_output=True,
                          env={**env, "PYTHONPATH": str(ROOT)}, timeout=120)


@pytest.mark.parametrize("lines", [None, 40])
def test_a_replay_that_ends_at_once_has_written_every_byte(tmp_path, lines):
    """The replay's outputs through a pipe (stdout) and into a file are the same bytes, whole, and
    the summary is on stderr: the program's quick exit lost nothing, neither of outputs larger
    than a pipe and a buffer hold, nor of a few lines that sit in the stream's buffer to the end."""
    made = _cli("simulate", "--tables", "2", "--hours", "1", "--seed", "5", "--no-tags", "-o", "floor.jsonl",
                cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    if lines is not None:
        floor = (tmp_path / "floor.jsonl").read_text().splitlines(keepends=True)
        (tmp_path / "floor.jsonl").write_text("".join(floor[:lines]))
    common = ("replay", "floor.jsonl", "--no-progress", "--accept-untagged")
    piped = _cli(*common, cwd=tmp_path)
    filed = _cli(*common, "-o", "out.jsonl", cwd=tmp_path)
    assert piped.returncode == filed.returncode == 0, (piped.stderr, filed.stderr)
    written = (tmp_path / "out.jsonl").read_bytes()
    assert (len(written) > 65_536 if lines is None else 0 < len(written) < 8_192) and written.endswith(b"\n")
    assert piped.stdout == written
    assert piped.stderr == filed.stderr and b"events read " in piped.stderr and piped.stderr.endswith(b"push\n")
    missing = _cli("replay", "none.jsonl", "--accept-untagged", cwd=tmp_path)
    assert missing.returncode == 3 and b"none.jsonl" in missing.stderr


def test_the_collector_runs_again_after_the_cli_is_imported():
    code = "import gc; import craps_streams.cli; print(gc.isenabled(), gc.get_threshold()[0] > 0)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.split() == ["True", "True"], r.stderr


@pytest.mark.parametrize("given", [None, "2"])
def test_numpy_loaded_by_a_command_starts_no_blas_threads_unless_told(given):
    """A command imports numpy for the tails' transforms alone; its BLAS would start a thread per
    core as it loads (spinning on the other core): one thread, unless the environment names a
    number, which is kept."""
    code = ("import os, sys; from craps_streams.cli import main; main(['odds', '--format', 'json']); "
            "import numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')), "
            "file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**env, "PYTHONPATH": str(ROOT)})
    setting, threads = r.stderr.split()[-2:]
    assert r.returncode == 0 and setting == (given or "1"), r.stderr
    if given is None:
        assert threads == "1", "numpy's import started threads"
