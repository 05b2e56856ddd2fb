"""The choice of rules core (craps_streams/accelerator/rules.py `rules_core`, `choose`): what each
choice gives, that the accelerator's paths follow the chosen core, and that the command line
refuses a choice it cannot have, saying why."""
from __future__ import annotations

import pytest

from craps_streams.accelerator import avro, lane, quiet, rules, tags, watch
from craps_streams.accelerator.rules import RulesCore, choose, chosen, rules_core
from craps_streams.rules.table import apply as python_apply


def test_python_is_the_python_core_and_no_note():
    core = rules_core("python")
    assert core == RulesCore("python", python_apply, None) and not core.native
    with pytest.raises(AttributeError):  # frozen
        core.name = "native"


def test_auto_is_the_accelerator_where_it_is_accepted_else_python_saying_why():
    core = rules_core("auto")
    if rules.PROBLEM is None:
        assert core == RulesCore("native", rules.apply, None) and core.native
    else:
        assert core == RulesCore("python", python_apply, rules.PROBLEM)


def test_native_is_the_accelerator_or_an_error_saying_why():
    if rules.PROBLEM is None:
        assert rules_core("native").apply is rules._native.apply
    else:
        with pytest.raises(RuntimeError, match="native accelerator"):
            rules_core("native")


def test_another_choice_is_refused():
    with pytest.raises(ValueError, match="auto, python, native"):
        rules_core("fast")


def test_the_paths_follow_the_chosen_core():
    """With the Python core chosen every path of the accelerator declines (its caller takes the
    Python path); with the native one chosen they serve."""
    was = chosen().name
    try:
        assert choose("python") is chosen() and not rules.in_use()
        assert avro.block_reader((), False) is None and avro.output_writer([]) is None
        assert tags.tag_keys([], []) is None and watch.chernoff_minimum() is None
        assert quiet.settle_quiet(None, False) is None and lane.settle_lines(None, False) is None
        assert lane.line_writer([]) is None
        if rules.PROBLEM is None:
            choose("native")
            assert rules.in_use() and watch.chernoff_minimum() is rules._native.chernoff_minimum
            assert quiet.settle_quiet(None, False) is not None and lane.line_writer([]) is not None
    finally:
        choose(was)


def test_the_command_line_refuses_a_core_it_cannot_have(monkeypatch, capsys):
    from craps_streams import cli

    was = chosen()
    monkeypatch.setenv("CRAPS_CORE", "fast")
    assert cli.main(["replay", "nothing.jsonl"]) == cli.EXIT_USAGE
    said = capsys.readouterr().err
    assert "CRAPS_CORE='fast' is not valid" in said and "'auto', 'python' or 'native'" in said
    assert chosen() is was  # nothing chosen
