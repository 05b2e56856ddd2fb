"""`craps-streams audit`: each kind of finding injected into settlements recorded by a replay."""
from __future__ import annotations

import json

import pytest

from craps_streams.archive import ArchiveWriter
from craps_streams.replay.audit import compare, explain, replay_settlements
from craps_streams.replay.sources import jsonl_source
from tests.replay.replay_fixtures import floor_lines, messages_of, write_lines
from tests.conftest import craps_cli



@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A history and the settlements its replay records (as `replay --only settlements` writes)."""
    d = tmp_path_factory.mktemp("audit")
    lines = floor_lines(tables=3, hours=1.0, seed=21, bad_rate=0.03)
    write_lines(d / "floor.jsonl", lines)
    r = craps_cli("replay", str(d / "floor.jsonl"), "--only", "settlements", "-o", str(d / "settlements.jsonl"))
    assert r.returncode == 0, r.stderr
    rec = [json.loads(line) for line in (d / "settlements.jsonl").read_text().splitlines()]
    assert len(rec) > 100
    return d, lines, rec


def audit(d, rec):
    path = d / "recorded.jsonl"
    write_lines(path, [json.dumps(r, sort_keys=True) for r in rec])
    replayed, rejected, _ = replay_settlements(jsonl_source(str(d / "floor.jsonl")))
    report = compare(replayed, ((json.loads(line), f"{path}:{n}")
                                for n, line in enumerate(path.read_text().splitlines(), 1)))
    explain(report, jsonl_source(str(d / "floor.jsonl")), rejected)
    return report


def roles(finding) -> set:
    return {(e["role"], e["table_id"], e["seq"], e["record"]["type"]) for e in finding.events}


def test_clean_when_recorded_equals_replay(recorded):
    d, _, rec = recorded
    report = audit(d, rec)
    assert report.clean and report.replayed == report.recorded == len(rec)
    r = craps_cli("audit", "--history", str(d / "floor.jsonl"), "--recorded", str(d / "settlements.jsonl"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("audit CLEAN:")


def test_missing(recorded):
    d, _, rec = recorded
    gone = rec[17]
    report = audit(d, rec[:17] + rec[18:])
    [f] = report.findings
    assert (f.kind, f.id, f.wager_id) == ("missing", gone["id"], gone["wager_id"])
    assert f.replayed == gone
    assert ("placed", gone["table_id"], gone["placed_seq"], "WagerPlaced") in roles(f)
    assert [e["seq"] for e in f.events if e["role"] == "deciding"] == [gone["seq"]]


def test_extra_names_the_rejected_wager(recorded):
    d, lines, rec = recorded
    # a wager the floor placed out of window: the replay rejected it and settled nothing
    replayed, rejected, _ = replay_settlements(jsonl_source(str(d / "floor.jsonl")))
    settled_wagers = {s["wager_id"] for s in replayed.values()}
    placed = [json.loads(line) for line in lines if '"WagerPlaced"' in line and line.startswith("{")]
    bad = next(p for p in placed if (p["table_id"], p["seq"]) in rejected and p["wager_id"] not in settled_wagers
               and type(p.get("position")) is int and type(p.get("amount_cents")) is int)
    fake = dict(rec[0], wager_id=bad["wager_id"], table_id=bad["table_id"], placed_seq=bad["seq"],
                seq=bad["seq"] + 3, id=f"{bad['table_id']}/{bad['seq'] + 3}/settle/{bad['wager_id']}")
    report = audit(d, rec + [fake])
    [f] = report.findings
    assert (f.kind, f.id, f.wager_id) == ("extra", fake["id"], bad["wager_id"])
    placed_rows = [e for e in f.events if e["role"] == "placed"]
    assert placed_rows and placed_rows[0]["record"] == bad
    assert placed_rows[0]["replay"].startswith("rejected ")
    text = "\n".join(report.lines())
    assert f"EXTRA      {fake['id']}" in text and "[replay: rejected" in text


def test_duplicated_same_id(recorded):
    d, _, rec = recorded
    twice = rec[5]
    report = audit(d, rec + [dict(twice)])
    [f] = report.findings
    assert (f.kind, f.id) == ("duplicated", twice["id"])
    assert len(f.recorded) == 2 and "recorded 2 times (identical copies)" in f.message
    assert ("placed", twice["table_id"], twice["placed_seq"], "WagerPlaced") in roles(f)


def test_duplicated_same_wager_under_another_id(recorded):
    d, _, rec = recorded
    s = rec[9]
    again = dict(s, seq=s["seq"] + 1, id=f"{s['table_id']}/{s['seq'] + 1}/settle/{s['wager_id']}")
    report = audit(d, rec + [again])
    [f] = report.findings
    assert (f.kind, f.id, f.wager_id) == ("duplicated", again["id"], s["wager_id"])
    assert s["id"] in f.message


def test_different_fields(recorded):
    d, _, rec = recorded
    i = next(n for n, s in enumerate(rec) if s["outcome"] == "win")
    s = rec[i]
    changed = dict(s, won_cents=s["won_cents"] + 100, paytable="other")
    report = audit(d, rec[:i] + [changed] + rec[i + 1:])
    [f] = report.findings
    assert (f.kind, f.id) == ("different", s["id"])
    assert f.fields == {"won_cents": {"replayed": s["won_cents"], "recorded": s["won_cents"] + 100},
                        "paytable": {"replayed": s["paytable"], "recorded": "other"}}
    assert {("placed", s["table_id"], s["placed_seq"]), ("deciding", s["table_id"], s["seq"])} <= \
        {(e["role"], e["table_id"], e["seq"]) for e in f.events}
    text = "\n".join(report.lines())
    assert f"won_cents: replayed {s['won_cents']}, recorded {s['won_cents'] + 100}" in text


def test_different_deciding_event(recorded):
    d, _, rec = recorded
    s = rec[30]
    moved = dict(s, seq=s["seq"] + 2, id=f"{s['table_id']}/{s['seq'] + 2}/settle/{s['wager_id']}")
    report = audit(d, rec[:30] + [moved] + rec[31:])
    [f] = report.findings
    assert (f.kind, f.id, f.wager_id) == ("different", moved["id"], s["wager_id"])
    assert set(f.fields) == {"id", "seq"}
    seqs = {e["seq"] for e in f.events if e["role"] == "deciding"}
    assert {s["seq"], s["seq"] + 2} <= seqs


def test_cli_exit_status_and_summary_with_every_kind(recorded, tmp_path):
    d, _, rec = recorded
    win = next(n for n, s in enumerate(rec) if s["outcome"] == "win" and n > 3)
    bad = rec[:1] + [dict(rec[1])] + rec[1:2] + rec[3:win] + [dict(rec[win], won_cents=1)] + rec[win + 1:]
    bad.append(dict(rec[0], wager_id="T999-w1", table_id="T999", id="T999/5/settle/T999-w1"))
    write_lines(tmp_path / "bad.jsonl", [json.dumps(r) for r in bad] + ["{torn"])
    r = craps_cli("audit", "--history", str(d / "floor.jsonl"), "--recorded", str(tmp_path / "bad.jsonl"),
            "--json", str(tmp_path / "report.json"))
    assert r.returncode == 1, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("audit FINDINGS:") and "1 missing, 1 extra, 1 duplicated, 1 different, 1 unreadable" in last
    findings = json.load(open(tmp_path / "report.json"))["findings"]
    assert {(f["kind"], f["id"]) for f in findings if f["kind"] != "unreadable"} == {
        ("missing", rec[2]["id"]), ("duplicated", rec[1]["id"]), ("different", rec[win]["id"]),
        ("extra", "T999/5/settle/T999-w1")}


def test_audit_from_an_archive(recorded, tmp_path):
    d, lines, rec = recorded
    w = ArchiveWriter(tmp_path / "archive", "x.table-events")
    for p, o, k, v in messages_of(lines):
        w.add(p, o, v, k)
    w.commit()
    r = craps_cli("audit", "--history", str(tmp_path / "archive"), "--recorded", str(d / "settlements.jsonl"))
    assert r.returncode == 0, r.stdout
    write_lines(tmp_path / "short.jsonl", [json.dumps(x) for x in rec[1:]])
    r = craps_cli("audit", "--history", str(tmp_path / "archive"), "--recorded", str(tmp_path / "short.jsonl"))
    assert r.returncode == 1
    assert f"MISSING    {rec[0]['id']}" in r.stdout and "WagerPlaced" in r.stdout


def _findings(report) -> list:
    return sorted((f.kind, f.id, f.message, json.dumps(f.fields, sort_keys=True),
                   json.dumps(f.events, sort_keys=True, default=str)) for f in report.findings)


@pytest.mark.parametrize("buckets", [2, 7, 64])
def test_bucket_by_bucket_finds_what_one_comparison_finds(recorded, tmp_path, buckets):
    """A long history is compared bucket by bucket on disk: the same findings, with the same
    explaining events, and the same counts as the comparison in memory, every kind present."""
    from craps_streams.replay.audit import run_audit
    from craps_streams.replay.sources import Slice

    d, _, rec = recorded
    win = next(n for n, s in enumerate(rec) if s["outcome"] == "win" and n > 3)
    moved = next(n for n in range(win + 1, len(rec)) if rec[n]["outcome"] == "lose")
    bad = (rec[:1] + [dict(rec[1])] + rec[1:2] + rec[3:win] + [dict(rec[win], won_cents=1)]
           + rec[win + 1:moved] + [dict(rec[moved], id=rec[moved]["id"] + "x", seq=rec[moved]["seq"] + 1)]
           + [dict(rec[moved], id=rec[moved]["id"] + "y")] + rec[moved + 1:])
    bad.append(dict(rec[0], wager_id="T999-w1", table_id="T999", id="T999/5/settle/T999-w1"))
    write_lines(tmp_path / "bad.jsonl", [json.dumps(r) for r in bad] + ["{torn", json.dumps({"type": "Marker"})])
    args = (str(d / "floor.jsonl"), Slice())
    whole = run_audit(*args, recorded=str(tmp_path / "bad.jsonl"), buckets=1)
    split = run_audit(*args, recorded=str(tmp_path / "bad.jsonl"), buckets=buckets)
    assert {f.kind for f in whole.findings} == {"missing", "extra", "duplicated", "different", "unreadable"}
    assert (split.replayed, split.recorded) == (whole.replayed, whole.recorded) == (len(rec), len(bad))
    assert split.summary() == whole.summary()
    assert _findings(split) == _findings(whole)
    # the recorded side read by a second process while the history is settled: the same report, in order
    two = run_audit(*args, recorded=str(tmp_path / "bad.jsonl"), buckets=buckets, jobs=2)
    assert (two.replayed, two.recorded, two.lines(1000)) == (split.replayed, split.recorded, split.lines(1000))


def test_a_recording_that_cannot_be_read_by_the_second_process_fails_the_audit_as_in_one(recorded, tmp_path):
    from craps_streams.replay.audit import run_audit
    from craps_streams.replay.sources import Slice

    d, _, _ = recorded
    for jobs in (1, 2):
        with pytest.raises(OSError):
            run_audit(str(d / "floor.jsonl"), Slice(), recorded=str(tmp_path / "absent.jsonl"), buckets=3, jobs=jobs)


def test_the_buckets_keep_each_bucket_in_the_order_added(tmp_path, monkeypatch):
    from craps_streams.replay import wager_buckets

    monkeypatch.setattr(wager_buckets, "BUFFERED", 40)  # a flush every 16 records of a bucket
    buckets = wager_buckets.WagerBuckets(tmp_path / "b", "x", 3)
    items = [(f"T00{n % 5}-w{n}", (n, f"T00{n % 5}-w{n}")) for n in range(500)] + [(None, "torn"), (7, "odd")]
    for key, item in items:
        buckets.add(key, item)
    buckets.close()
    got = {b: list(buckets.read(b)) for b in range(3)}
    assert sorted(sum(got.values(), []), key=str) == sorted([i for _, i in items], key=str)
    for b, bucket in got.items():
        assert bucket == [i for k, i in items if wager_buckets.bucket_of(k, 3) == b]
    assert "torn" in got[0] and "odd" in got[0]
    assert not list((tmp_path / "b").iterdir())  # each file removed once read
