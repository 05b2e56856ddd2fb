"""The period's exceptions as the pass keeps them (craps_streams/report/noted.py): every one counted,
the first `LISTED` of each list kept, the same listing as sorting them all."""
from __future__ import annotations

import datetime as dt
import random
from types import SimpleNamespace

from craps_streams.report import noted
from craps_streams.report.noted import Listed, Noted, when
from tests.report.report_fixtures import floor, ms, report, write


def _alerts(n: int, seed: int) -> list:
    rng = random.Random(seed)
    # few distinct times and tables: many ties, which keep the order met
    return [SimpleNamespace(ts=rng.randrange(5), table_id=rng.choice("AB"), seq=rng.randrange(3), id=str(rng.randrange(4)),
                            alert=rng.choice(["sequence_gap", "large_win", "sequence_resumed"]), n=i)
            for i in range(n)]


def test_a_list_keeps_the_first_of_all_in_order(monkeypatch):
    monkeypatch.setattr(noted, "LISTED", 7)
    for n in (0, 5, 14, 15, 100):
        items = _alerts(n, n)
        kept = Listed(when, lambda a: a.alert)
        for a in items:
            kept.add(a)
            assert len(kept.items) <= 14
        assert kept.count == n
        assert kept.first() == sorted(items, key=when)[:7]
        assert [a.n for a in kept.first()] == [a.n for a in sorted(items, key=when)[:7]]  # ties in the order met
        assert kept.by == {k: sum(1 for a in items if a.alert == k) for k in {a.alert for a in items}}


def test_parts_merged_in_order_are_the_whole(monkeypatch):
    monkeypatch.setattr(noted, "LISTED", 4)
    items = _alerts(60, 1)
    whole, parts = Noted(), [Noted(), Noted(), Noted()]
    for i, a in enumerate(items):
        whole.alerted(a)
        parts[i * 3 // len(items)].alerted(a)
    merged = parts[0]
    merged.merge(parts[1])
    merged.merge(parts[2])
    assert merged == whole
    assert whole.sequence.count == sum(1 for a in items if a.alert.startswith("sequence"))
    assert whole.alerts.first() == sorted(items, key=when)[:4]


def test_a_reports_exceptions_list_the_first_of_each(tmp_path, monkeypatch):
    """A floor with bad input: the report listing 3 of each lists the first 3 of the report listing
    all of them, with the same counts."""
    path = write(tmp_path / "floor.jsonl", floor(4, 5.0, ms("2026-01-05T15:00:00-05:00"), seed=21, bad_rate=0.02))
    day = dt.date(2026, 1, 5)
    monkeypatch.setattr(noted, "LISTED", 10 ** 9)
    every = report(path, day)["exceptions"]
    monkeypatch.setattr(noted, "LISTED", 3)
    first = report(path, day)["exceptions"]
    assert every["rejections"]["count"] > 6 and every["alerts"]["count"] > 6
    for name in ("rejections", "undated_rejections", "alerts", "forged_events"):
        assert first[name]["listed"] == every[name]["listed"][:3], name
        assert {k: v for k, v in first[name].items() if k != "listed"} == \
            {k: v for k, v in every[name].items() if k != "listed"}, name
    for k in ("listed", "duplicates_listed"):
        assert first["sequence_faults"][k] == every["sequence_faults"][k][:3]
    assert {k: v for k, v in first["sequence_faults"].items() if "listed" not in k} == \
        {k: v for k, v in every["sequence_faults"].items() if "listed" not in k}
