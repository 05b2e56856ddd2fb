"""Micro benchmark: Avro (craps_streams.codec) vs JSON Lines encode/decode of table events.

    python benchmarks/codec_bench.py [--events 200000] [--runs 5]

Builds a deterministic, realistic mix of table events (mostly throws and wagers, a few openings with
rules), then times each direction over all of them `--runs` times and prints the medians (wall
clock and process CPU time, events per second), bytes per event, and Avro/JSON ratios.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from craps_streams.codec import decode_event, encode_event, from_json_line, to_json_line

WAGERS = ("fire", "all_small", "all_tall", "all_or_nothing", "hot_roller", "hot_shooter")


def make_events(n: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    tables = [f"T{t:03d}" for t in range(20)]
    seq = dict.fromkeys(tables, 0)
    ts = 1_700_000_000_000
    events: list[dict] = []

    def ev(table, kind, **fields):
        nonlocal ts
        seq[table] += 1
        ts += rnd.randint(1, 4000)
        events.append({"table_id": table, "seq": seq[table], "ts": ts, "type": kind, **fields})

    for t in tables:
        ev(t, "TableOpened", table_kind=rnd.choice(("live", "hybrid", "fully_automated")),
           rules={"limits": {"fire": [100, 500]}, "large_win_alert_cents": 100_000} if rnd.random() < 0.5 else None)
        ev(t, "ShooterChanged", shooter_id=f"P{rnd.randint(1, 9999)}", position=rnd.randint(1, 14), reason="table_open")
    w = 0
    while len(events) < n:
        t = rnd.choice(tables)
        r = rnd.random()
        if r < 0.70:
            ev(t, "DiceThrown", die1=rnd.randint(1, 6), die2=rnd.randint(1, 6), valid=rnd.random() > 0.01)
        elif r < 0.90:
            w += 1
            ev(t, "WagerPlaced", wager_id=f"{t}-W{w}", position=rnd.randint(1, 14), wager=rnd.choice(WAGERS),
               amount_cents=rnd.choice((100, 200, 500, 1000, 2500)))
        elif r < 0.95:
            ev(t, "WagerChangeRequested", wager_id=f"{t}-W{rnd.randint(1, max(w, 1))}", amount_cents=rnd.choice((0, 300)))
        elif r < 0.99:
            ev(t, "ShooterChanged", shooter_id=f"P{rnd.randint(1, 9999)}", position=rnd.randint(1, 14),
               reason=rnd.choice(("seven_out", "voluntary", "compulsory")))
        else:
            ev(t, "ComeBetsOnly", active=rnd.random() < 0.5)
    return events[:n]


def timed(fn, items, runs: int) -> tuple[float, float, list]:
    walls, cpus, out = [], [], None
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        out = [fn(x) for x in items]
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    events = make_events(args.events)
    n = len(events)

    a_enc_w, a_enc_c, avro_msgs = timed(encode_event, events, args.runs)
    a_dec_w, a_dec_c, avro_back = timed(decode_event, avro_msgs, args.runs)
    j_enc_w, j_enc_c, json_lines = timed(to_json_line, events, args.runs)
    j_dec_w, j_dec_c, json_back = timed(from_json_line, json_lines, args.runs)
    assert avro_back == events, "Avro round trip differs"
    assert json_back == events, "JSON round trip differs"

    avro_bytes = sum(map(len, avro_msgs)) / n
    json_bytes = sum(len(s) + 1 for s in json_lines) / n
    rows = [("avro encode", a_enc_w, a_enc_c), ("avro decode", a_dec_w, a_dec_c),
            ("json encode", j_enc_w, j_enc_c), ("json decode", j_dec_w, j_dec_c),
            ("avro encode+decode", a_enc_w + a_dec_w, a_enc_c + a_dec_c),
            ("json encode+decode", j_enc_w + j_dec_w, j_enc_c + j_dec_c)]
    print(f"{n} table events, median of {args.runs} runs (Python {sys.version.split()[0]})")
    print(f"{'':20} {'events/s (wall)':>16} {'events/s (cpu)':>16}")
    for name, wall, cpu in rows:
        print(f"{name:20} {n / wall:16,.0f} {n / cpu:16,.0f}")
    print(f"size: avro {avro_bytes:.1f} B/event (10 B of it the single-object header), "
          f"json {json_bytes:.1f} B/event -> avro/json {avro_bytes / json_bytes:.2f}")
    print("speed ratio avro/json (>1: avro faster, cpu time): "
          f"encode {j_enc_c / a_enc_c:.2f}, decode {j_dec_c / a_dec_c:.2f}, "
          f"round trip {(j_enc_c + j_dec_c) / (a_enc_c + a_dec_c):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
