"""The floor's seq rule of `archive verify` (craps_streams/archive/verify.py `walk_seqs`), by itself
and with its native runs (`seq_walk`); tests/native/lockstep.py holds the two together on every
floor."""
from __future__ import annotations

import msgspec
import pytest

from craps_streams.archive.verify import seq_walk, walk_seqs
from craps_streams.rules import record_to_event
from craps_streams.sim.floor import floor_events
from craps_streams.rules.events import DiceThrown, TableOpened


def throw(table: str, seq: int) -> DiceThrown:
    return DiceThrown(table_id=table, seq=seq, ts=1_767_225_600_000 + seq, die1=1, die2=2)


ITEMS = [
    throw("T", 1),
    ({"table_id": "T", "seq": 2}, None),  # a record left to the contract check: walked as it reads
    ({"table_id": 5, "seq": 3}, None),  # no table id: the replay's to reject, not walked
    ("torn", None),
    throw("T", 4),  # a gap after 2
    throw("U", 3),  # a table's first seq is not 1: a gap from 0
    throw("T", 4),  # a duplicate: the last seq stands
    throw("T", 2),  # out of order
    throw("T", 5),
]
FOUND = [(4, "gap", "T", 4, 2), (5, "gap", "U", 3, 0), (6, "duplicate", "T", 4, 4), (7, "duplicate", "T", 2, 4)]


@pytest.mark.parametrize("walk", [walk_seqs, seq_walk()], ids=["rule", "with-native-runs"])
def test_gaps_and_duplicates_where_they_are(walk):
    last: dict = {}
    assert walk(ITEMS, last) == FOUND
    assert last == {"T": 5, "U": 3}
    # the next batch goes on from the last seqs
    assert walk([throw("T", 6), throw("U", 5)], last) == [(1, "gap", "U", 5, 3)] and last == {"T": 6, "U": 5}


@pytest.mark.parametrize("walk", [walk_seqs, seq_walk()], ids=["rule", "with-native-runs"])
def test_other_events_and_huge_seqs_are_walked_by_the_rule(walk):
    opened = msgspec.structs.replace(record_to_event(next(iter(floor_events(1, 1, 1, bad_rate=0.0)))), table_id="V")
    assert type(opened) is TableOpened  # a class the native run leaves to the rule
    last: dict = {}
    found = walk([opened, throw("V", 2 ** 63), throw("V", 2 ** 63 + 1), throw("V", 3)], last)
    assert found == [(1, "gap", "V", 2 ** 63, 1), (3, "duplicate", "V", 3, 2 ** 63 + 1)]
    assert last == {"V": 2 ** 63 + 1}
