"""Every native path held to its Python specification in lockstep (tests/native/lockstep.py): the
same inputs through both, compared after every step, on every hostile floor; then what each run
must have met (so a comparison is never of nothing: the rejections, held events, forgeries,
alerts and odd lines were there, and the native side did carry the floor). After the floors, the
inputs no floor makes: hand-made odd events, every kind of forgery, generated events, odd text
and values, odd Avro records and changed bytes, pinned Chernoff lines, the crapssim play.

A path the extension adds is registered in `lockstep.PATHS`; `test_every_entry_point_has_a_path`
fails until it is."""
from __future__ import annotations

import random
import re
import sys

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from craps_streams.authenticity import KeyRing, signed
from craps_streams.odds import wager_odds
from craps_streams.accelerator import rules as native
from craps_streams.rules.events import (
    ComeBetsOnly,
    DiceThrown,
    ShooterChanged,
    TableClosed,
    TableOpened,
    WagerPlaced,
)
from craps_streams.rules.submission import DEFAULT_RULES, rules_from_record
from tests.authenticity.authenticity_events import ANY_TAGGED_EVENT
from tests.authenticity.authenticity_keys import key, ring_for
from tests.authenticity.test_canonical import _ODD, _with_odd_strings
from tests.native.lockstep import (
    AVRO_PATH,
    CORE_PATH,
    FLOORS,
    NOT_PATHS,
    PATHS,
    ROOT,
    TAGS_PATH,
    TAILS_PATH,
    WRITER_PATH,
    CoreSide,
    Divergence,
    Floor,
    container,
    events_of,
    floor_of,
    lockstep,
    native_keys,
    requires_accelerator,
)
from craps_streams.rules.table import apply as python_apply

T0 = 1_767_225_600_000


def ready(path) -> None:
    reason = path.in_use()
    if reason is not None:
        pytest.skip(f"{path.name}: {reason}")


# ---------------------------------------------------------------- the registry


def test_every_entry_point_has_a_path():
    """Every name the Python wrappers read from the extension (`_native.<name>` in craps_streams/), and
    every public name the built extension exposes, is held by a registered path (or is one of
    the facts checked at import)."""
    covered = set().union(*(p.entry_points for p in PATHS.values())) | NOT_PATHS
    used = set()
    for source in (ROOT / "craps_streams").rglob("*.py"):
        used |= set(re.findall(r"\b_native\.(?!pyi\b)([A-Za-z_]\w*)", source.read_text()))
    assert {"apply", "settle_quiet", "settle_lines", "chernoff_minimum", "TagKeys", "WatchConfig",
            "BlockReader", "LineWriter", "OutputWriter"} <= used, used  # the scan does find the wrappers' reads
    assert not used - covered, f"native entry points without a lockstep path: {sorted(used - covered)}"
    if native.PROBLEM is None:
        exposed = {n for n in dir(native._native) if not n.startswith("_")}
        assert not exposed - covered, f"native entry points without a lockstep path: {sorted(exposed - covered)}"
        assert not covered - exposed, f"registered entry points the extension lacks: {sorted(covered - exposed)}"


def test_a_divergence_names_its_step_input_and_both_results():
    """The harness fails on the first step whose results differ, saying where and what."""
    from dataclasses import replace

    skewed = replace(TAILS_PATH, native=lambda floor: (lambda call: "0x1.0p+0" if call == 3 else "same"),
                     python=lambda floor: (lambda call: "same"))
    with pytest.raises(Divergence) as failure:
        lockstep(skewed, [1, 2, 3, 4])
    message = str(failure.value)
    assert "step 2 diverges" in message and "input: 3" in message
    assert "python: 'same'" in message and "native: '0x1.0p+0'" in message
    assert lockstep(skewed, [1, 2])["steps"] == 2


# ---------------------------------------------------------------- every path on every floor

# What each run must have met, by (path, floor): `steps` and the sides' counts.
def _core(counts, floor):
    nat, py = counts["native"], counts["python"]
    assert py["outputs"] > (10 if floor == "contract-corpus" else 100), py  # the corpus: mostly refused lines
    if floor.startswith("bad-input"):
        assert py["rejected"] > 20 and py["duplicate"] > 0, py
        assert nat["native"] > 0.9 * counts["steps"], nat
    if floor == "delayed":
        assert py["held"] > 10 and py["released"] > 5, py
    if floor == "recovered":
        assert nat["recovered"] > 100 and py["duplicate"] > 0, (py, nat)
        assert nat["native"] > 0.5 * counts["steps"], nat
    if floor.startswith("rules-"):
        assert nat["native"] > 0.5 * counts["steps"], nat


def _watch(counts, floor):
    assert counts["native"]["python watches"] == 0, counts  # the native watch never declined
    if floor != "contract-corpus":  # throws' settlements booked natively, held to `HoldWatch.watch`
        assert counts["native"]["booked natively"] > 10, counts
    if floor == "faults":
        assert counts["python"]["dice_bias"] >= 1 and counts["python"]["position_anomaly"] >= 1, counts


def _touchy_watch(counts, floor):
    _watch(counts, floor)
    if floor == "faults-busy":
        assert min(counts["python"][k] for k in ("dice_bias", "hold_anomaly", "position_anomaly")) >= 5, counts


def _tags(counts, floor):
    py, nat = counts["python"], counts["native"]
    assert py["authentic"] > 0.5 * counts["steps"], py
    if floor != "contract-corpus":  # honest events of odd but valid text are the reference's
        # Natively authentic: every event the reference finds authentic but the openings.
        assert nat["authentic"] == py["authentic"] - py["opened"], (py, nat)


def _quiet_runs_settled_most(counts, floor):
    quiet = sum(1 for e in events_of(floor_of(floor).lines) if type(e) in (WagerPlaced, ShooterChanged))
    if floor != "contract-corpus":  # the corpus: mostly refused lines, few quiet runs
        assert counts["native"]["settled"] > quiet // 2, (counts, quiet)  # the run did settle most of them


def _replay(counts, floor):
    f, nat = floor_of(floor), counts["native"]
    _quiet_runs_settled_most(counts, floor)
    if floor in HOSTILE_HISTORIES:
        # The forged, misbound, copied and untagged events were there, and met the tag check.
        assert nat["rejected bad_signature"] > 10, nat
        assert (nat["untagged"] > 0) == f.accept_untagged, nat
        assert nat["alert forged_event"] > 0 and nat["alert sequence_gap"] > 0, nat
    if floor.startswith("odd-lines"):
        # The odd lines met the contract's checks, in the plain path's words; the same event
        # written otherwise was applied once, then a duplicate.
        for reason in ("invalid_id", "field_too_long", "malformed"):
            assert nat[f"rejected {reason}"] > 0, (reason, nat)
        assert nat["duplicates"] > 0, nat


HOSTILE_HISTORIES = ("forged-tags", "untagged-accepted", "untagged-accepted-2", "odd-lines", "odd-lines-untagged")


def _quiet(counts, floor):
    _replay(counts, floor)
    if floor != "contract-corpus":
        assert counts["native"]["throws_finished"] > 100, counts  # throws booked and watched in the run


def _lane(counts, floor):
    _replay(counts, floor)
    if floor != "contract-corpus":
        assert counts["native"]["throws_native"] > 100, counts  # throws applied natively
        assert counts["native"]["throws_finished"] > 100, counts  # and booked and watched in the lane
    if floor.startswith("odd-lines"):
        assert counts["native"]["throws_python"] > 0, counts  # and some the Python core's


def _worker_batch(counts, floor):
    _quiet_runs_settled_most(counts, floor)
    if floor in HOSTILE_HISTORIES:
        assert counts["native"]["rejected"] > 10, counts  # forged and untagged events met the tag check


def _avro(counts, floor):
    assert counts["native"]["blocks read natively"] > (0 if floor == "contract-corpus" else counts["steps"] // 4), counts


def _writer(counts, floor):
    assert counts["native"]["written"] > (0 if floor == "contract-corpus" else counts["steps"] // 2), counts


def _messages(counts, floor):
    assert counts["native"]["written natively"] > (0 if floor == "contract-corpus" else counts["steps"] // 2), counts


def _output_reader(counts, floor):
    if floor != "contract-corpus":  # its outputs are rejections, which the plain path reads
        assert counts["native"]["read natively"] > counts["steps"] * 16, counts


def _report(counts, floor):
    if floor != "contract-corpus":  # its events' times are anyone's: few are the period's
        assert counts["native"]["lines"] > 0 and counts["native"]["before"] > 0, counts
        assert counts["native"]["series"] > 0, counts


def _seqs(counts, floor):
    # the moved seqs make both findings on every floor
    assert counts["native"]["gap"] > 0 and counts["native"]["duplicate"] > 0, counts


def _distinct(counts, floor):
    # the repeated settlements make a False on every floor; the runs check most settlements
    assert counts["native"][True] > 0 and counts["native"][False] > 0, counts
    assert counts["native"]["checked natively"] > 0, counts


EXPECT = {"distinct-ids": _distinct, "seq-walk": _seqs, "report-books": _report, "core": _core, "watch": _watch, "watch-touchy": _touchy_watch, "tags": _tags, "quiet-run": _quiet,
          "worker-batch": _worker_batch, "json-lane": _lane, "avro-reader": _avro, "writer": _writer,
          "avro-writer": _messages, "avro-output-reader": _output_reader, "chernoff-minimum": lambda c, f: None}


@pytest.mark.parametrize("floor", FLOORS)
@pytest.mark.parametrize("name", list(PATHS))
def test_every_path_on_every_floor(name, floor):
    path = PATHS[name]
    ready(path)
    f = floor_of(floor)
    counts = lockstep(path, path.inputs(f), f)
    assert counts["steps"] > 0 or name == "chernoff-minimum", counts
    EXPECT[name](counts, floor)


# ---------------------------------------------------------------- the core: inputs no floor makes


@pytest.mark.parametrize("recover", [1.0, 0.02])
def test_core_on_tables_recovered_before_every_event_or_rarely(recover):
    """A worker that takes a partition over settles on tables read back from the changelog as
    TableStates: the native core goes on from them exactly as from its own tables, whether they
    come back before every event or rarely (the `recovered` floor: now and then)."""
    ready(CORE_PATH)
    f = floor_of("recovered")
    counts = lockstep(CORE_PATH, CORE_PATH.inputs(f), Floor(recover=recover))
    assert counts["native"]["recovered"] > 100 and counts["python"]["duplicate"] > 0, counts
    if recover < 1:
        assert counts["native"]["native"] > 0.5 * counts["steps"], counts


def test_core_on_the_crapssim_play():
    ready(CORE_PATH)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from crapssim_compare import dice_of_hands, our_records

    counts = lockstep(CORE_PATH, events_of(our_records(dice_of_hands(3000, 15), 8)))
    assert counts["python"]["outputs"] == 113_260
    # Natively: everything but the opening and the closing.
    assert counts["native"]["native"] == counts["steps"] - 2, counts


def test_core_on_odd_events_built_by_hand():
    """Events a decoder never makes: non-ASCII ids, bools for ints, huge numbers, a non-bool
    validity; the native core passes them to the Python core or, for ids that are not ASCII,
    builds the same ids itself."""
    ready(CORE_PATH)
    rules = rules_from_record({"large_win_alert_cents": 1000})
    t = "Tablé-ü"
    events = [TableOpened(t, 1, 0, "hybrid", rules, {"large_win_alert_cents": 1000}),
              ShooterChanged(t, 2, 5, "tireur-é", 3, "table_open")]
    seq = 2
    for wid, kind, amount, pos in [("wé1", "fire", 500, 1), ("w2", "all_small", 2500, True),
                                   ("w3", "hot_roller", 2**70, 2), ("w4", "all_tall", 500, 1.0),
                                   ("w5", "hot_shooter", 500, 4), ("w6", "all_or_nothing", 1000, 16),
                                   ("w7", "hot_roller", 500, 5), ("w8", "fire", 300, 6)]:
        seq += 1
        events.append(WagerPlaced(t, seq, 10 * seq, wid, pos, kind, amount))
    rng = random.Random(3)
    for _ in range(400):
        seq += 1
        valid = rng.choice([True, True, True, True, False, 1, None])
        events.append(DiceThrown(t, seq, 10 * seq, rng.randint(1, 6), rng.randint(0, 7), valid))
        if rng.random() < 0.05:
            seq += 1
            events.append(ShooterChanged(t, seq, 10 * seq, f"s{seq}", rng.randint(0, 17),
                                         rng.choice(["seven_out", "voluntary", "compulsory", "x"])))
        if rng.random() < 0.2:
            seq += 1
            events.append(WagerPlaced(t, seq, 10 * seq, f"wé{seq}", rng.randint(1, 16),
                                      rng.choice(["fire", "all_small", "all_tall", "all_or_nothing",
                                                  "hot_roller", "hot_shooter"]), 500))
    counts = lockstep(CORE_PATH, events)
    assert counts["python"]["outputs"] > 50, counts


# ---------------------------------------------------------------- the tag check: inputs no floor makes


def test_tags_on_every_kind_of_forgery():
    ready(TAGS_PATH)
    ring = KeyRing((key("k-A", {"A"}, T0, T0 + 1000), key("k-B", {"B"})))
    a = ring.get("k-A")
    honest = signed(a, DiceThrown("A", 5, T0 + 10, 3, 4))
    replace = msgspec.structs.replace
    forged = [
        replace(honest, die1=4),  # altered dice
        replace(honest, seq=6), replace(honest, ts=T0 + 11), replace(honest, valid=False),
        replace(honest, table_id="B"),  # moved to another table
        replace(honest, key_id="k-B"),  # presented under another key
        replace(honest, key_id="k-C"),  # an unknown key
        replace(honest, tag=honest.tag[:-1] + ("A" if honest.tag[-1] != "A" else "B")),
        replace(honest, tag=honest.tag + "="), replace(honest, tag=honest.tag[:42]),
        replace(honest, tag=None), replace(honest, key_id=None), replace(honest, key_id=None, tag=None),
        replace(honest, tag=honest.tag.lower() if honest.tag != honest.tag.lower() else honest.tag.upper()),
        signed(a, DiceThrown("A", 5, T0 + 1000, 3, 4)),  # signed after the key's retirement
        signed(a, DiceThrown("A", 5, T0 - 1, 3, 4)),  # before it is valid
        signed(a, DiceThrown("B", 5, T0 + 10, 3, 4)),  # a key signing for a table not its own
        # the tag of one kind presented on another with the same fields' text
        replace(signed(a, ComeBetsOnly("A", 5, T0 + 10, True)), key_id="k-A", tag=honest.tag),
        DiceThrown("A", 5, T0 + 10, 3, 4, True, key_id="k-A", tag="A" * 43),
    ]
    counts = lockstep(TAGS_PATH, [honest, *forged], Floor(ring=ring))
    assert counts["native"]["authentic"] == counts["python"]["authentic"] == 1, counts  # the honest one only
    from craps_streams.authenticity import TagCheck

    assert all(TagCheck(ring).problem(f) is not None for f in forged)


def test_tags_on_odd_text_and_numbers():
    """Every ASCII character and some beyond, in every string field of every kind; numbers at
    and beyond 64 bits; bools for ints. The native code writes the canonical bytes of printable
    ASCII (json's own text there) and leaves the rest to Python: never different bytes."""
    ready(TAGS_PATH)
    ring = ring_for(["T1"])
    odd = list(_with_odd_strings())
    counts = lockstep(TAGS_PATH, odd, Floor(ring=ring))
    printable = sum(1 for c in _ODD if len(c) == 1 and 0x20 <= ord(c) <= 0x7e)
    assert counts["native"]["written"] == (6 * 2 + 5) * printable
    assert counts["steps"] - counts["native"]["written"] == (6 * 2 + 5) * (len(_ODD) - printable)
    keys = native_keys(ring)
    numbers = []
    for v in (0, -1, 2**63 - 1, -(2**63), 2**64, -(2**70), True, False):
        for event in (DiceThrown("T1", 2, 3, v, 5, key_id="k"), WagerPlaced("T1", 2, 3, "w", 1, "fire", v, key_id="k"),
                      ShooterChanged("T1", 2, v, "s", 1, "voluntary", key_id="k"), TableClosed("T1", v, 3, key_id="k")):
            fits = type(v) is int and -(2**63) <= v < 2**63
            assert (keys.canonical_bytes(event) is not None) == fits, (v, event)
            numbers.append(event)
    lockstep(TAGS_PATH, numbers, Floor(ring=ring))


@requires_accelerator
@settings(max_examples=300, deadline=None)
@given(ANY_TAGGED_EVENT, st.booleans())
@example(DiceThrown("A", 5, T0, 3, 4, key_id="k-A", tag="x" * 43), True)
def test_tags_on_generated_events(event, sign):
    """On any contract-valid event, signed honestly or carrying a random tag: the native check
    says authentic exactly when the reference does, but for the kinds and text it leaves to the
    reference (then it says no, and TagCheck asks the reference)."""
    k = key(f"k-{event.table_id}", {event.table_id})
    if sign:
        event = signed(k, event)
    lockstep(TAGS_PATH, [event], Floor(ring=KeyRing((k,))))


# ---------------------------------------------------------------- the Avro reader: inputs no floor makes


def test_avro_reader_on_odd_records_and_changed_bytes():
    """The odd records of tests/replay/test_fast_read.py (every kind, odd values, ids, lengths of
    two-byte varints, unknown kinds, tags) in one block, many blocks and deflated; every byte of a
    stretch of a block changed by three masks; containers cut inside a block, and bytes of its
    records changed."""
    ready(AVRO_PATH)
    from tests.replay.test_fast_read import records

    rs = records()
    containers = [container(rs, "deflate", 64_000), container(rs, "deflate", 300), container(rs, "null", 300)]
    counts = lockstep(AVRO_PATH, containers)
    assert counts["native"]["blocks read natively"] > 0, counts
    small = [r for r in rs if r["table_id"] in ("T1", "Tä€😀")][:40]
    data = container(small)
    start = data.index(b"T1")
    changed = [data[:offset] + bytes([data[offset] ^ mask]) + data[offset + 1:]
               for offset in range(start, min(len(data) - 20, start + 900)) for mask in (0x80, 0x01, 0xFF)]
    lockstep(AVRO_PATH, changed)
    dice = container([r for r in rs if r["type"] == "DiceThrown"] * 50, "null", 1_000)
    header = dice.index(b"T1")
    flipped = [dice[:offset] + bytes([dice[offset] ^ 0x85]) + dice[offset + 1:]
               for offset in range(header, header + 400, 3)]
    counts = lockstep(AVRO_PATH, [dice[:len(dice) - 40], dice[:len(dice) // 2], *flipped])
    assert counts["native"]["blocks read natively"] > 0, counts


# ---------------------------------------------------------------- the writer: inputs no floor makes


def test_writer_on_odd_text_and_values():
    """Text the native writer must escape as the json module does (non-ASCII, controls, quotes,
    lone surrogates, script) in every output kind; values it leaves to msgspec (an int beyond
    64 bits, a None where text belongs, a list where a tuple belongs), alone and beside plain ones."""
    ready(WRITER_PATH)
    from tests.replay.test_json_fast_read import ODD_TEXT, outputs_with

    batches = []
    for text in ODD_TEXT:
        batch = outputs_with(text)
        batches += [batch, batch[:4], *([o] for o in batch)]
    s = outputs_with("x")[0]
    for odd in (msgspec.structs.replace(s, won_cents=2 ** 70), msgspec.structs.replace(s, detail=None),
                msgspec.structs.replace(outputs_with("x")[3], wager_ids=["w1", "w2"])):
        batches += [[odd], [s, odd, s]]
    counts = lockstep(WRITER_PATH, batches)
    # Both ways met: batches the native writer wrote, and batches it left (rejections, text beyond
    # printable ASCII, values it does not write).
    assert counts["native"]["written"] >= 5 and counts["native"]["left"] > len(ODD_TEXT), counts


# ---------------------------------------------------------------- the Chernoff minimum: pinned lines


@pytest.mark.parametrize("kind", ("fire", "all_small", "all_or_nothing", "hot_roller", "hot_shooter"))
def test_chernoff_minimum_on_pinned_lines(kind):
    """Pinned random lines (many stakes, long lines, house wins from the far tail to the mean,
    ints and floats for h), bit for bit; and the surveillance uses the native minimum."""
    ready(TAILS_PATH)
    from craps_streams.surveillance.tails import unit_distribution

    unit = unit_distribution(wager_odds(kind, DEFAULT_RULES))
    draw = random.Random(f"chernoff-{kind}")  # pinned: the same lines every run
    calls = []
    for _ in range(300):
        stakes = {draw.choice((100, 250, 500, 1000, 2500, 10_000)) * draw.randint(1, 9): draw.randint(1, 400)
                  for _ in range(draw.randint(1, 60))}
        items = sorted(stakes.items())
        low = sum(s * c * unit.values[0] for s, c in items)
        mean = sum(s * c for s, c in items) * unit.mean
        h = draw.uniform(low, mean)
        if draw.random() < 0.5:
            h = int(h)
        calls.append((unit.floats, tuple(items), h, max(stakes)))
    counts = lockstep(TAILS_PATH, calls)
    assert counts["python"]["below one"] > 100  # most lines have a bound below 1 (not a comparison of zeros)
    if PATHS["watch"].in_use() is None:
        from craps_streams.surveillance import tails

        assert tails._chosen_minimum() is native._native.chernoff_minimum


def test_core_side_counts_what_the_native_core_judged():
    """The core's native side counts an event as native only when no fallback ran."""
    ready(CORE_PATH)
    events = list(events_of(floor_of("golden").lines))[:200]
    side = CoreSide(native.apply, is_native=True)
    for e in events:
        side(e)
    assert 0 < side.counts["native"] < len(events)  # the opening is the Python core's
    python = CoreSide(python_apply)
    python(events[0])
    assert python.counts["native"] == 0
