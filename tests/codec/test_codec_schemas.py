"""The schema files themselves: namespaced, versioned, documented, evolvable, loadable."""
from __future__ import annotations

import json

import pytest

from craps_streams.codec import OUTPUT_KINDS, default_codec
from craps_streams.codec.schemas import NAMESPACE, default_schema_dir, load_dir, load_texts

FILES = sorted(default_schema_dir().glob("*.avsc"))
SOURCES = {p.name: json.loads(p.read_text()) for p in FILES}


def _records(schema):
    if isinstance(schema, list):
        for s in schema:
            yield from _records(s)
    elif isinstance(schema, dict):
        if schema.get("type") == "record":
            yield schema
            for f in schema["fields"]:
                yield from _records(f["type"])
        elif schema.get("type") == "array":
            yield from _records(schema["items"])
        elif schema.get("type") == "map":
            yield from _records(schema["values"])


def test_one_schema_per_record_kind():
    assert sorted(s["name"] for s in SOURCES.values()) == sorted(["TableEvent", *OUTPUT_KINDS])


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_namespaced_versioned_documented(name):
    schema = SOURCES[name]
    assert schema["namespace"] == NAMESPACE
    assert schema["schema_version"] == (2 if name == "table_event.avsc" else 1)  # v2: key_id, tag
    assert "schema_version" in schema["doc"]
    for record in _records(schema):
        assert record.get("doc"), record["name"]
        for field in record["fields"]:
            assert field.get("doc"), f"{record['name']}.{field['name']}"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_nullable_fields_default_to_null(name):
    for record in _records(SOURCES[name]):
        for field in record["fields"]:
            if isinstance(field["type"], list) and field["type"][0] == "null":
                assert "default" in field and field["default"] is None, f"{record['name']}.{field['name']}"


def test_no_avro_enums_for_kinds():
    """Kind values are strings so an unknown value is a rule rejection, not a decode failure."""
    assert '"enum"' not in "".join(p.read_text() for p in FILES)


def test_wire_contract_field_names():
    c = default_codec()
    assert [f["name"] for f in c.event_schema.source["fields"]] == ["table_id", "seq", "ts", "type", "body",
                                                                        "key_id", "tag"]
    assert {k: [s[0] for s in specs] for k, (_, specs, _) in c.kinds.items()} == {
        "TableOpened": ["table_kind", "rules"],
        "ShooterChanged": ["shooter_id", "position", "reason"],
        "DiceThrown": ["die1", "die2", "valid"],
        "WagerPlaced": ["wager_id", "position", "wager", "amount_cents"],
        "WagerChangeRequested": ["wager_id", "amount_cents"],
        "ComeBetsOnly": ["active"],
        "TableClosed": [],
    }
    assert {k: [s[0] for s in specs] for k, (_, _, specs, _) in c.outputs.items()} == {
        "WagerSettled": ["id", "wager_id", "table_id", "position", "wager", "outcome", "stake_cents", "won_cents",
                         "paytable", "detail", "seq", "ts", "placed_seq"],
        "MarkerPlaced": ["id", "table_id", "seq", "ts", "layout", "cohort", "marker", "count"],
        "MarkerCleared": ["id", "table_id", "seq", "ts", "layout", "cohort", "reason"],
        "SurveillanceAlerted": ["id", "table_id", "seq", "ts", "alert", "shooter_id", "message", "wager_ids"],
        "EventRejected": ["id", "table_id", "seq", "ts", "reason", "message", "event_json", "raw", "topic",
                          "partition", "offset"],
    }


def test_output_dataclass_fields_are_covered():
    """Every field of the core's output events has a wire field (EventRejected.event travels as
    event_json)."""
    from craps_streams.rules.events import INPUT_TYPES, OUTPUT_TYPES, field_names
    c = default_codec()
    for name, cls in OUTPUT_TYPES.items():
        wire = {s[0] for s in c.outputs[name][2]}
        names = set(field_names(cls)) - {"event"}
        assert names <= wire, (name, names - wire)
    for name, cls in INPUT_TYPES.items():
        wire = {s[0] for s in c._common} | {s[0] for s in c.kinds[name][1]}
        names = set(field_names(cls)) - {"rules_record"}
        assert names <= wire, (name, names - wire)


def test_cross_file_references_are_inlined(tmp_path):
    (tmp_path / "a.avsc").write_text(json.dumps(
        {"type": "record", "name": "Money", "namespace": "x.y", "fields": [{"name": "cents", "type": "long"}]}))
    (tmp_path / "b.avsc").write_text(json.dumps(
        {"type": "record", "name": "Pay", "namespace": "x.y", "fields": [
            {"name": "stake", "type": "Money"}, {"name": "won", "type": "x.y.Money"}]}))
    loaded = load_dir(tmp_path)
    pay = loaded["Pay"].source
    assert pay["fields"][0]["type"]["name"] == "Money" and pay["fields"][1]["type"] == "x.y.Money"
    assert load_texts({"b": (tmp_path / "b.avsc").read_text(), "a": (tmp_path / "a.avsc").read_text()})["b"] == pay
