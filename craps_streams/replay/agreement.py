"""The audit's first pass: whether a recording of settlements (a JSON Lines file) holds, line for
line and in any order, the very lines the replay writes for its own settlements.

When it does, the audit's comparison (craps_streams/replay/audit.py `compare`) can find nothing,
so the audit is clean without a record built, spilled or compared for each settlement:

* every recorded line is the text of one replayed settlement, `dumps(output_to_record(o))` (what
  `replay --only settlements` writes: craps_streams/replay/run.py `output_lines`), so it reads back
  as a settlement record (its `type` WagerSettled, its `id` a string) whose every compared field
  is the replayed value with its type (a settlement's fields are strings and integers, which JSON
  gives back as they were);
* the lines meet one to one, so there are as many recorded as replayed, none unmatched either
  way (no missing, no extra), and no recorded id twice (no duplicated), provided the replay itself
  gave no id twice, which is checked here (`DistinctIds`) since the comparison keeps one record
  per replayed id.

Anything else (a line that differs in a byte, a blank line, another output kind, a line twice)
leaves a line unmatched, and the audit then compares record by record as before: this pass only
ever says yes sooner, never a different yes. The lines are matched as the replay goes, a batch
of settlements against as many recorded characters; while the recording follows the replay's
order that is one string comparison per batch. Lines that have not met their match yet are held,
at most PENDING of them, so a recording in another order is matched in bounded memory or given
up on (the record-by-record comparison has its own bound).
"""
from __future__ import annotations

from typing import Iterable

from craps_streams.replay.run import output_lines
from craps_streams.rules import WagerSettled

PENDING = 200_000  # lines waiting for their match, both sides together, before the pass gives up


class DistinctIds:
    """Whether the settlements seen so far carry distinct ids, in memory bounded by the tables:
    a settlement id names its table, deciding seq and wager (`settlement_id`; an id holds no '/'),
    and a table's settlements come in the order of their deciding seq, so only the ids of each
    table's latest seq are kept. A seq lower than its table's latest is not that order: the pass
    cannot vouch for the ids and says so."""

    def __init__(self):
        self.latest: dict = {}  # table id -> [seq, {settlement id}]

    def add(self, settled: list) -> bool:
        latest = self.latest
        for o in settled:
            at = latest.get(o.table_id)
            if at is None or o.seq > at[0]:
                latest[o.table_id] = [o.seq, {o.id}]
            elif o.seq == at[0] and o.id not in at[1]:
                at[1].add(o.id)
            else:
                return False
        return True


class LineMatch:
    """The two sides' lines as multisets, each line cancelled by its equal on the other side."""

    def __init__(self):
        self.waiting: tuple[dict, dict] = ({}, {})  # replayed, recorded: line -> how many
        self.held = 0

    def add(self, side: int, lines: Iterable[str]) -> None:
        mine, theirs = self.waiting[side], self.waiting[1 - side]
        held = self.held
        for line in lines:
            n = theirs.get(line)
            if n is None:
                mine[line] = mine.get(line, 0) + 1
                held += 1
            else:
                held -= 1
                if n == 1:
                    del theirs[line]
                else:
                    theirs[line] = n - 1
        self.held = held


REPLAYED, RECORDED = 0, 1


def _recorded_lines(text: str) -> list[str]:
    """A recording's lines as the audit reads them (`recorded_from_jsonl`): split at newlines only
    (the text is read with universal newlines, as there; `str.splitlines` would also split at
    characters the audit leaves inside a line), stripped, blank ones left out."""
    return [s for s in (line.strip() for line in text.split("\n")) if s]


def recording_agrees(replay, batches: Iterable, recorded: str, pending: int | None = None) -> int | None:
    """Settle `batches` with `replay` (a `craps_streams.replay.engine.Replay`) and match its
    settlements' lines against the JSON Lines file `recorded`, read as the audit reads it (UTF-8,
    undecodable bytes replaced). The number of settlements when the recording is exactly their
    lines, in any order; None as soon as it cannot be (more than `pending` lines unmatched, or a
    settlement id twice in the replay) or when it is not at the end. The replay has then settled
    all of `batches`, or the part before the pass gave up. `pending` None: PENDING."""
    pending = PENDING if pending is None else pending
    ids = DistinctIds()
    match = LineMatch()
    settled_count = 0
    feed = replay.feed_batch
    with open(recorded, encoding="utf-8", errors="replace") as f:
        for batch in batches:
            settled = [o for o in feed(batch) if type(o) is WagerSettled]
            if not settled:
                continue
            if not ids.add(settled):
                return None
            settled_count += len(settled)
            text = output_lines(settled)
            if match.held == 0:
                # In step so far: the recording's next characters are this batch's text, or the
                # lines they begin are matched one by one.
                got = f.read(len(text))
                if got == text:
                    continue
                if got and not got.endswith("\n"):
                    got += f.readline()
            else:
                got = "".join(f.readline() for _ in range(len(settled)))
            match.add(REPLAYED, text.split("\n")[:-1])
            match.add(RECORDED, _recorded_lines(got))
            if match.held > pending:
                return None
        while True:  # the rest of the recording, beyond the replay's settlements
            rest = f.read(1 << 20)
            if not rest:
                break
            if not rest.endswith("\n"):
                rest += f.readline()
            match.add(RECORDED, _recorded_lines(rest))
            if match.held > pending:
                return None
    return settled_count if match.held == 0 else None
