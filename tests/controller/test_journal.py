"""The controller's SQLite journal: gapless seqs across a reopen, group commit, held events in
order, retention, re-sends, and a full disk refusing new events while keeping every acknowledged one."""
from __future__ import annotations

import sqlite3

import pytest

from craps_streams.controller.journal import Entry, Journal, JournalFull


def entries(table: str, first: int, n: int, ts: int = 1000, size: int = 20) -> list[Entry]:
    return [Entry(table, s, ts + s, table.encode(), bytes([s % 256]) * size) for s in range(first, first + n)]


def test_settings_are_wal_and_full_sync(tmp_path):
    j = Journal(tmp_path / "j.sqlite")
    assert j._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert j._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_seqs_continue_across_a_reopen_and_a_gap_is_refused(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    j.append(entries("T001", 1, 5) + entries("T002", 1, 2))
    j.close()
    j = Journal(path)
    assert (j.last_seq("T001"), j.last_seq("T002"), j.last_seq("T003")) == (5, 2, 0)
    assert j.last_ts() == 1005
    with pytest.raises(ValueError, match="does not follow 5"):
        j.append(entries("T001", 7, 1))
    with pytest.raises(ValueError):
        j.append(entries("T001", 6, 1) + entries("T001", 8, 1))  # a gap inside the group: nothing written
    assert j.last_seq("T001") == 5
    assert [s for s, *_ in j.events("T001")] == [1, 2, 3, 4, 5]


def test_a_group_is_one_transaction(tmp_path):
    """Group commit: the whole group is one commit (one WAL sync), seen all at once."""
    j = Journal(tmp_path / "j.sqlite")
    before = j._db.total_changes
    j.append(entries("T001", 1, 100))
    assert j._db.total_changes - before == 101  # 100 events + the table's row
    other = sqlite3.connect(str(tmp_path / "j.sqlite"))
    assert other.execute("SELECT count(*) FROM events").fetchone()[0] == 100


def test_held_events_leave_in_journal_order_and_are_marked_sent(tmp_path):
    j = Journal(tmp_path / "j.sqlite")
    j.append(entries("T002", 1, 2), now_ns=10)
    j.append(entries("T001", 1, 3), now_ns=20)
    held = j.unsent()
    assert [(h.table_id, h.seq) for h in held] == [("T002", 1), ("T002", 2), ("T001", 1), ("T001", 2), ("T001", 3)]
    assert j.depth() == (5, 10)
    j.mark_sent([h.id for h in held[:3]], now_ns=30)
    assert [(h.table_id, h.seq) for h in j.unsent()] == [("T001", 2), ("T001", 3)]
    assert j.depth() == (2, 20)
    assert j.held() == {"T001": (2, 20)}


def test_retention_purges_only_sent_events_and_the_numbering_survives(tmp_path):
    path = tmp_path / "j.sqlite"
    j = Journal(path)
    j.append(entries("T001", 1, 4), now_ns=10)
    j.mark_sent([h.id for h in j.unsent()[:2]], now_ns=100)
    assert j.purge_sent(before_ns=50) == 0
    assert j.purge_sent(before_ns=101) == 2
    assert [s for s, *_ in j.events("T001")] == [3, 4]  # held events are never purged
    j.close()
    j = Journal(path)
    assert j.last_seq("T001") == 4
    j.append(entries("T001", 5, 1))


def test_a_range_is_marked_for_resending_and_purged_seqs_are_named(tmp_path):
    j = Journal(tmp_path / "j.sqlite")
    j.append(entries("T001", 1, 6), now_ns=10)
    j.mark_sent([h.id for h in j.unsent()], now_ns=20)
    j.purge_sent(before_ns=21)
    j.append(entries("T001", 7, 3), now_ns=30)
    j.mark_sent([h.id for h in j.unsent()], now_ns=40)
    marked, missing = j.resend("T001", 5, 8)
    assert (marked, missing) == (2, [5, 6])
    assert [h.seq for h in j.unsent()] == [7, 8]
    with pytest.raises(ValueError):
        j.resend("T001", 3, 2)


def test_a_full_disk_refuses_the_group_and_keeps_every_acknowledged_event(tmp_path):
    """A disk filled up is simulated by SQLite's page limit; the loop-device test does it for real."""
    path = tmp_path / "j.sqlite"
    j = Journal(path, max_pages=40)
    acked = 0
    with pytest.raises(JournalFull, match="full"):
        for _ in range(1000):
            j.append(entries("T001", acked + 1, 10, size=1000))
            acked += 10
    assert acked > 0
    assert j.last_seq("T001") == acked  # the refused group took no seq
    j.close()
    j = Journal(path)  # the limit lifted: space freed
    assert [s for s, *_ in j.events("T001")] == list(range(1, acked + 1))
    j.append(entries("T001", acked + 1, 10, size=1000))
    assert j.last_seq("T001") == acked + 10


def test_a_seeded_journal_numbers_on_from_the_seed_and_refuses_a_second_seed(tmp_path):
    j = Journal(tmp_path / "j.sqlite")
    j.seed([("T001", 4512, 1_700_000_000_000)])
    assert j.last_seq("T001") == 4512 and j.last_ts() == 1_700_000_000_000
    with pytest.raises(ValueError, match="seq 1 does not follow 4512"):
        j.append([Entry("T001", 1, 1, b"T001", b"v")])
    j.append([Entry("T001", 4513, 1_700_000_000_001, b"T001", b"v")])
    with pytest.raises(ValueError, match="already numbers T001"):
        j.seed([("T001", 9000, 0)])
    j.close()
    again = Journal(tmp_path / "j.sqlite")  # the seed is durable: a restart numbers on from it
    assert again.last_seq("T001") == 4513 and again.last_seq("T002") == 0
    again.close()
