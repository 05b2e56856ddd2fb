"""Schemas stay backward compatible with their last committed version, and the checker works."""
from __future__ import annotations

import copy
import io
import json
import subprocess

import avro.compatibility
import avro.schema
import fastavro
import pytest
from codec_strategies import ANY_EVENT, ANY_OUTPUT, wire_fields
from hypothesis import HealthCheck, given, settings

from tests.exploration import examples

from craps_streams.codec import default_codec
from craps_streams.codec.compatibility import (
    backward_problems,
    check_repo,
    main,
    previous_texts,
    sample_datums,
    sample_problems,
    static_problems,
)
from craps_streams.codec.schemas import default_schema_dir, load_texts

SCHEMA_DIR = default_schema_dir()
FILES = sorted(p.name for p in SCHEMA_DIR.glob("*.avsc"))
CURRENT = load_texts({name: (SCHEMA_DIR / name).read_text() for name in FILES})
_PREVIOUS = previous_texts(SCHEMA_DIR, "HEAD")
# a file new in the working tree is compared with itself
PREVIOUS = load_texts({name: _PREVIOUS.get(name, (SCHEMA_DIR / name).read_text()) for name in FILES})


def _git_show_head(name: str) -> str | None:
    r = subprocess.run(["git", "show", f"HEAD:craps_streams/schemas/{name}"], cwd=SCHEMA_DIR, capture_output=True, text=True,
                       check=False)
    return r.stdout if r.returncode == 0 else None


@pytest.mark.parametrize("name", FILES)
def test_previous_version_is_what_git_show_head_gives(name):
    shown = _git_show_head(name)
    assert _PREVIOUS.get(name) == shown


@pytest.mark.parametrize("name", FILES)
def test_backward_compatible_with_head(name):
    assert static_problems(PREVIOUS[name], CURRENT[name]) == []
    assert sample_problems(PREVIOUS[name], CURRENT[name]) == []


@pytest.mark.parametrize("name", FILES)
def test_apache_agrees_with_head(name):
    result = avro.compatibility.ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(CURRENT[name])), avro.schema.parse(json.dumps(PREVIOUS[name])))
    assert result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible


def _old_parsed(name):
    return fastavro.parse_schema(copy.deepcopy(PREVIOUS[name]), named_schemas={}, _force=True)


def _new_parsed(name):
    return fastavro.parse_schema(copy.deepcopy(CURRENT[name]), named_schemas={}, _force=True)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_EVENT)
def test_real_events_written_with_head_read_with_the_working_tree(record):
    name = next(n for n in FILES if CURRENT[n]["name"] == "TableEvent")
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _old_parsed(name), default_codec().event_datum(record))
    buf.seek(0)
    fastavro.schemaless_reader(buf, _old_parsed(name), _new_parsed(name))


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_OUTPUT)
def test_real_outputs_written_with_head_read_with_the_working_tree(record):
    name = next(n for n in FILES if CURRENT[n]["name"] == record["type"])
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _old_parsed(name), wire_fields(record))
    buf.seek(0)
    fastavro.schemaless_reader(buf, _old_parsed(name), _new_parsed(name))


def test_check_repo_and_cli(capsys):
    assert check_repo() == {name: [] for name in FILES}
    assert main([]) == 0
    assert "ok" in capsys.readouterr().out


# ---------------------------------------------------------------- the checker itself


TE = next(CURRENT[n] for n in FILES if CURRENT[n]["name"] == "TableEvent")


def _branch(schema, name):
    body = next(f for f in schema["fields"] if f["name"] == "body")
    return next(b for b in body["type"] if isinstance(b, dict) and b["name"] == name)


def _mutated(f):
    s = copy.deepcopy(TE)
    f(s)
    return s


MUTATIONS = {
    # name: (mutation, backward compatible?)
    "add field with default": (lambda s: s["fields"].append({"name": "x", "type": "string", "default": ""}), True),
    "add field without default": (lambda s: s["fields"].append({"name": "x", "type": "string"}), False),
    "add body field without default": (lambda s: _branch(s, "DiceThrown")["fields"].append(
        {"name": "z", "type": "int"}), False),
    "add body field with default": (lambda s: _branch(s, "DiceThrown")["fields"].append(
        {"name": "z", "type": "int", "default": 0}), True),
    "remove a field": (lambda s: _branch(s, "DiceThrown")["fields"].pop(), True),
    "int to long": (lambda s: _branch(s, "DiceThrown")["fields"][0].update(type="long"), True),
    "long to int": (lambda s: s["fields"][1].update(type="int"), False),
    "string to bytes": (lambda s: s["fields"][0].update(type="bytes"), True),
    "long to string": (lambda s: s["fields"][1].update(type="string"), False),
    "make nullable": (lambda s: s["fields"][0].update(type=["null", "string"]), True),
    "drop a union branch": (lambda s: s["fields"][4]["type"].remove(_branch(s, "ComeBetsOnly")), False),
    "append a union branch": (lambda s: s["fields"][4]["type"].append(
        {"type": "record", "name": "NewKind", "fields": []}), True),
    "rename a body record": (lambda s: _branch(s, "TableClosed").update(name="TableShut"), False),
    "rename with alias": (lambda s: _branch(s, "TableClosed").update(name="TableShut", aliases=["TableClosed"]), True),
    "rename a field": (lambda s: _branch(s, "DiceThrown")["fields"][0].update(name="first_die"), False),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_checker_on_mutations(mutation):
    f, compatible = MUTATIONS[mutation]
    new = _mutated(f)
    assert (static_problems(TE, new) == []) is compatible, static_problems(TE, new)
    if compatible:
        assert sample_problems(TE, new) == []
        assert backward_problems(TE, new) == []
    else:
        assert backward_problems(TE, new)


@pytest.mark.parametrize("mutation", sorted(m for m in MUTATIONS if m != "rename with alias"))
def test_apache_checker_agrees(mutation):
    """(apache's Python checker ignores aliases, hence the one exclusion)"""
    f, compatible = MUTATIONS[mutation]
    result = avro.compatibility.ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(json.dumps(_mutated(f))), avro.schema.parse(json.dumps(TE)))
    assert (result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible) is compatible


def test_enum_and_nested_rules():
    old = {"type": "record", "name": "R", "fields": [
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "int"}}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 4}},
        {"name": "again", "type": "E"},
    ]}
    assert backward_problems(old, old) == []
    fewer = copy.deepcopy(old)
    fewer["fields"][0]["type"]["symbols"] = ["A"]
    assert static_problems(old, fewer) and sample_problems(old, fewer)
    with_default = copy.deepcopy(fewer)
    with_default["fields"][0]["type"]["default"] = "A"
    assert backward_problems(old, with_default) == []
    wider = copy.deepcopy(old)
    wider["fields"][1]["type"]["values"]["items"] = "double"
    assert backward_problems(old, wider) == []
    resized = copy.deepcopy(old)
    resized["fields"][2]["type"]["size"] = 8
    assert static_problems(old, resized) and sample_problems(old, resized)
    samples = sample_datums(old)
    assert {s["e"] for s in samples} == {"A", "B"}


def test_samples_cover_every_body_branch():
    kinds = {d["body"][0].rpartition(".")[2] if d["body"] else None for d in sample_datums(TE)}
    assert kinds == {None, "TableOpened", "ShooterChanged", "DiceThrown", "WagerPlaced", "WagerChangeRequested",
                     "ComeBetsOnly", "TableClosed"}


def test_removed_schema_file_is_reported(tmp_path):
    # a throwaway repository: committed schema A, then removed and B added
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    d = tmp_path / "schemas"
    d.mkdir()
    (d / "a.avsc").write_text(json.dumps({"type": "record", "name": "A", "fields": [{"name": "x", "type": "long"}]}))
    git("add", "schemas/a.avsc")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    assert check_repo(d) == {"a.avsc": []}
    (d / "a.avsc").write_text(json.dumps({"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}))
    assert check_repo(d)["a.avsc"]
    assert main(["--schema-dir", str(d)]) == 1
    (d / "a.avsc").unlink()
    (d / "b.avsc").write_text(json.dumps({"type": "record", "name": "B", "fields": []}))
    result = check_repo(d)
    assert result["b.avsc"] == [] and "removed" in result["a.avsc"][0]
