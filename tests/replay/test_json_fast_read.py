"""The JSON Lines fast paths against the plain ones they stand for.

Reading: msgspec's decoding straight into core events (`craps_streams.replay.jsonread`) must give, line
by line, what `json.loads` + `record_to_event` give: the same event for every line it decodes, and
for every other line the plain path's item. Writing: `output_lines` (msgspec, a batch at a time)
must give the text of `dumps(output_to_record(o))`, output by output (the native writer: the
`writer` path of tests/native/test_lockstep.py).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from craps_streams.replay.engine import Replay, json_lines
from craps_streams.replay.jsonread import json_line_batches, line_item
from craps_streams.replay.run import LINE_OF, OutputFile, _general_line, native_writer, output_lines
from craps_streams.rules import ContractError, record_to_event
from craps_streams.rules.events import (
    INPUT_TYPES,
    EventRejected,
    MarkerCleared,
    MarkerPlaced,
    SurveillanceAlerted,
    WagerSettled,
    settlement_id,
)
from craps_streams.sim.floor import floor_events

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from contract_corpus import corpus_bytes  # noqa: E402


def plain(record):
    """The plain path's verdict on a record: its event, or the ContractError's reason and message."""
    if type(record) is str:
        return ("torn", record)
    try:
        return record_to_event(record)
    except ContractError as e:
        return (e.reason, e.message)


def assert_same_as_plain(lines: list[str]) -> int:
    """Both readers over the same text; returns how many lines took the fast path."""
    fast = [x for batch in json_line_batches(lines, "f") for x in batch]
    slow = list(json_lines(lines, "f"))
    assert len(fast) == len(slow)
    decoded = 0
    for item, (record, where) in zip(fast, slow):
        if type(item) is tuple:
            assert item == (record, where) or (item[1] == where and item[0] != item[0])  # NaN != NaN
        else:
            decoded += 1
            assert type(item) in INPUT_TYPES.values()
            assert plain(record) == item, where
    return decoded


def floor_lines(bad_rate: float) -> list[str]:
    dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    return [r if type(r) is str else dumps(r) for r in floor_events(6, 2, 3, bad_rate)]


def test_a_floor_with_bad_input_reads_the_same_both_ways():
    lines = floor_lines(0.05)
    decoded = assert_same_as_plain([line + "\n" for line in lines])
    assert decoded > 0.8 * len(lines)  # the fast path does carry the floor


def test_the_hostile_corpus_reads_the_same_both_ways():
    text = corpus_bytes().decode("utf-8", errors="replace")
    import io

    assert_same_as_plain(list(io.StringIO(text, newline=None)))


ODD = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-2, 20), st.floats(allow_nan=False),
                st.text(max_size=4), st.sampled_from(["T1", "w1", "fire", "table_open", "", "live"]),
                st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
NAMES = ["type", "table_id", "seq", "ts", "die1", "die2", "valid", "shooter_id", "position", "reason",
         "wager_id", "wager", "amount_cents", "active", "table_kind", "rules", "extra"]


@st.composite
def records(draw):
    kind = draw(st.sampled_from([*INPUT_TYPES, "Nope"]))
    good = {"type": kind, "table_id": "T1", "seq": 3, "ts": 0, "die1": 2, "die2": 5, "valid": False,
            "shooter_id": "S", "position": 4, "reason": "seven_out", "wager_id": "w", "wager": "fire",
            "amount_cents": 500, "active": True, "table_kind": "live"}
    own = {"TableOpened": ["table_kind"], "ShooterChanged": ["shooter_id", "position", "reason"],
           "DiceThrown": ["die1", "die2", "valid"], "WagerPlaced": ["wager_id", "position", "wager", "amount_cents"],
           "WagerChangeRequested": ["wager_id", "amount_cents"], "ComeBetsOnly": ["active"]}.get(kind, [])
    record = {k: good[k] for k in ["type", "table_id", "seq", "ts", *own]}
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=3)):
        if draw(st.booleans()):
            record.pop(name, None)
        else:
            record[name] = draw(ODD)
    return record


@settings(max_examples=400)
@given(records())
@example({"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": 1, "die2": 1, "valid": None})
@example({"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": True, "die2": 1})
@example({"type": "DiceThrown", "table_id": "T1", "seq": 1, "ts": 0, "die1": 1.0, "die2": 1})
@example({"type": "TableClosed", "table_id": "T1", "seq": 2**64, "ts": 0})
def test_a_decoded_line_is_the_event_the_contract_builds(record):
    line = json.dumps(record)
    event = line_item(line)
    if event is not None:
        assert plain(record) == event


# ---------------------------------------------------------------- writing

ODD_TEXT = ["plain", "é", "\x7f", "\x00", "\n", '"', "\\", "\u2028", "\ud800", "😀", "</script>", ""]


def outputs_with(text: str) -> list:
    return [
        WagerSettled(f"w{text}", "T1", 3, "fire", "win", 500, 12_000, "fire-623a.5", f"points={text}", 40, 9, 3,
                     settlement_id("T1", 40, f"w{text}")),
        MarkerPlaced(f"T1/40/{text}", "T1", 40, 9, "fire", f"fire-{text}", "point-4", 1),
        MarkerCleared("T1/40/1", f"T{text}", 40, 9, "fire", "fire-3", "seven_out"),
        SurveillanceAlerted("T1/40/2", "T1", 40, 9, "large_win", "S1", f"won {text}", ("w1", text)),
        EventRejected("T1/41/rejected", "T1", 41, 9, "malformed", f"bad {text}", {"x": [1.5, text, None, 1e16]}),
    ]


def test_output_lines_are_the_json_modules_text(monkeypatch):
    """msgspec's lines (the native writer set aside: tests/native/test_lockstep.py holds it to the
    same text, the `writer` path)."""
    from craps_streams.replay import run

    monkeypatch.setattr(run, "_NATIVE_LINES", None)
    replay = Replay()
    outputs = []
    for record, where in json_lines(floor_lines(0.05), "f"):
        outputs += replay.feed_record(record, where)
    assert {type(o) for o in outputs} >= {WagerSettled, MarkerPlaced, MarkerCleared, EventRejected}
    expected = "".join(_general_line(o) + "\n" for o in outputs)
    assert output_lines(outputs) == expected
    settlements = [o for o in outputs if type(o) is WagerSettled]  # a batch with no rejection
    assert output_lines(settlements) == "".join(_general_line(o) + "\n" for o in settlements)
    for text in ODD_TEXT:
        batch = outputs_with(text)
        assert output_lines(batch) == "".join(_general_line(o) + "\n" for o in batch), repr(text)
        assert output_lines(batch[:4]) == "".join(_general_line(o) + "\n" for o in batch[:4]), repr(text)
        for o in batch:
            assert LINE_OF[type(o)](o) == _general_line(o), (repr(text), type(o).__name__)
    # Values msgspec's batch leaves to the json module (an int beyond 64 bits, a None where text
    # belongs, a list where a tuple belongs), alone and beside plain ones.
    s = outputs_with("x")[0]
    for odd in (msgspec.structs.replace(s, won_cents=2 ** 70), msgspec.structs.replace(s, detail=None),
                msgspec.structs.replace(outputs_with("x")[3], wager_ids=["w1", "w2"])):
        for batch in ([odd], [s, odd, s]):
            assert output_lines(batch) == "".join(_general_line(o) + "\n" for o in batch)


def output_batches() -> list:
    """Batches as a replay writes them: a floor's settlements and markers (the native writer's to
    take), then batches of odd text and rejections (the text stream's), in turn."""
    replay = Replay()
    outputs = []
    for record, where in json_lines(floor_lines(0.05), "f"):
        outputs += replay.feed_record(record, where)
    plain = [o for o in outputs if type(o) is not EventRejected]
    batches = [plain[k:k + 50] for k in range(0, 400, 50)]
    for i, text in enumerate(ODD_TEXT):
        batches.insert(2 * i + 1, outputs_with(text))
    return batches + [outputs, []]


@pytest.mark.parametrize("only", [None, frozenset({WagerSettled}), frozenset({MarkerPlaced, EventRejected})])
def test_an_output_file_writes_what_output_lines_gives(tmp_path, only):
    """`OutputFile` writes a batch the native writer takes straight to the file's descriptor and
    any other through the text stream: the file holds `output_lines`' text of every batch, in
    order, whichever way each went."""
    batches = output_batches()
    expected = "".join(output_lines(b, only) for b in batches)
    path = tmp_path / "out.jsonl"
    with open(path, "w", encoding="utf-8") as fo:
        out = OutputFile(fo)
        assert (out.fd is not None) == (native_writer() is not None)
        for batch in batches:
            out.put(batch, only)
    assert path.read_bytes() == expected.encode("utf-8")
    if native_writer() is not None:  # both ways were taken
        taken = [native_writer().lines(b) is not None for b in batches]
        assert any(taken) and not all(taken)


def test_a_failed_write_is_an_error(tmp_path):
    """A descriptor that refuses the lines (here one open for reading) raises, whichever way the
    batch goes: no line is dropped without a word."""
    path = tmp_path / "read-only.jsonl"
    path.write_text("")
    with open(path, encoding="utf-8") as fo:
        with pytest.raises(OSError):
            OutputFile(fo).put(output_batches()[0])
            fo.flush()


def test_an_output_file_without_a_descriptor_writes_text():
    """A stream with no file under it (a StringIO), or in an encoding the native writer's bytes are
    not, gets `output_lines`' text through the stream."""
    import io

    batches = output_batches()
    sink = io.StringIO()
    out = OutputFile(sink)
    assert out.fd is None
    for batch in batches:
        out.put(batch)
    assert sink.getvalue() == "".join(output_lines(b) for b in batches)
    wide = io.TextIOWrapper(io.BytesIO(), encoding="utf-16")
    assert OutputFile(wide).fd is None


def test_the_settlement_id_is_the_contracts():
    s = outputs_with("x")[0]
    assert json.loads(output_lines([s]))["id"] == "T1/40/settle/wx" == s.id
    assert msgspec.json.decode(output_lines([s]))["type"] == "WagerSettled"


ODD_IDS = ["w1", "w-1", "T.1_x", "w 1", "wé", "٣", "w<script>", "w\u0000", "x" * 32, "x" * 33, "", "w1\n"]


@pytest.mark.parametrize("other", ODD_IDS)
@pytest.mark.parametrize("table_id", ["T1", "T-1", "T 1", "Té", "", "T" * 33])
def test_ids_are_checked_as_the_contract_checks_them(table_id, other):
    """The fast path checks the ids' characters after msgspec (`jsonread._ids_valid`): letters and
    digits by two string tests, anything else by the contract's pattern, a table id remembered once
    valid. Every line reads as the plain path reads it, twice over (the second time the table id
    is remembered, or must not be)."""
    wager = json.dumps({"type": "WagerPlaced", "table_id": table_id, "seq": 3, "ts": 0, "wager_id": other,
                        "position": 1, "wager": "fire", "amount_cents": 500})
    shooter = json.dumps({"type": "ShooterChanged", "table_id": table_id, "seq": 2, "ts": 0, "shooter_id": other,
                          "position": 1, "reason": "table_open"})
    throw = json.dumps({"type": "DiceThrown", "table_id": table_id, "seq": 4, "ts": 0, "die1": 1, "die2": 2})
    decoded = assert_same_as_plain([line + "\n" for line in (wager, shooter, throw) * 2])
    if table_id == "T1" and other in ("w1", "w-1", "T.1_x", "x" * 32):
        assert decoded == 6  # the fast path carries valid ids
