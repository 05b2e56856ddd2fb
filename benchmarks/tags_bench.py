"""The cost of authentic events: the tag check per event, and replay with and without tags.

    python benchmarks/tags_bench.py [--tables 40 --hours 12 --repeat 5]

Simulates a floor, tags it with a fresh in-memory key ring (one key per table), then measures side
by side in one run, per CPU second of this process (medians of --repeat runs):
  1. canonical bytes alone, per event (the generated formatter);
  2. HMAC-SHA256 of those bytes, per event: `hmac.digest` + base64url, and the check's way, from
     the key's kept pad states (`tags.hmac_pads`, `tags.tag_text`);
  3. the whole check (`TagCheck.problem`: key lookup, table and validity, canonical bytes, HMAC,
     base64url, constant-time compare), per event;
  4. the rules core and hold books over the same pre-decoded events (`Replay.feed_batch`), without
     the check and with it: events/s and their ratio, the figure the README reports;
  5. signing (`TableSigner.sign`), per event: a table controller's cost.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from craps_streams.authenticity import KeyRing, TableKey, TableSigner, TagCheck  # noqa: E402
from craps_streams.authenticity.canonical import canonical_bytes  # noqa: E402
from craps_streams.authenticity.tags import hmac_pads, tag_text  # noqa: E402
from craps_streams.replay.engine import Replay  # noqa: E402
from craps_streams.rules import ContractError, record_to_event  # noqa: E402
from craps_streams.sim.floor import floor_events  # noqa: E402


def cpu() -> float:
    return time.process_time()


def per_event_us(fn, items, repeat: int) -> tuple[float, list]:
    runs = []
    for _ in range(repeat):
        t = cpu()
        for x in items:
            fn(x)
        runs.append((cpu() - t) / len(items) * 1e6)
    return statistics.median(runs), runs


def replay_eps(events, tags_of, repeat: int) -> tuple[float, list]:
    runs = []
    for _ in range(repeat):
        replay = Replay(tags=tags_of())
        t = cpu()
        for i in range(0, len(events), 1024):
            replay.feed_batch(events[i:i + 1024])
        runs.append(len(events) / (cpu() - t))
    return statistics.median(runs), runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=40)
    ap.add_argument("--hours", type=float, default=12.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    plain = []
    for r in floor_events(args.tables, args.hours, 1, bad_rate=0.0):
        try:
            plain.append(record_to_event(r))
        except ContractError:
            pass
    tables = sorted({e.table_id for e in plain})
    ring = KeyRing(tuple(TableKey(f"k-{t}", hashlib.sha256(t.encode()).digest(), frozenset({t})) for t in tables))
    signer = TableSigner(ring)
    tagged = [signer.sign(e) for e in plain]
    print(f"{len(tagged):,} events of {len(tables)} tables; canonical bytes "
          f"{statistics.mean(len(canonical_bytes(e)) for e in tagged[:10_000]):.0f} bytes on average")

    key = ring.keys[0].secret
    messages = [canonical_bytes(e) for e in tagged]
    check = TagCheck(ring)
    canon_us, canon = per_event_us(canonical_bytes, tagged, args.repeat)
    mac_us, mac = per_event_us(lambda m: base64.urlsafe_b64encode(hmac.digest(key, m, "sha256")), messages,
                               args.repeat)
    pads = hmac_pads(key)
    kept_us, kept = per_event_us(lambda m: tag_text(pads, m), messages, args.repeat)
    check_us, checks = per_event_us(check.problem, tagged, args.repeat)
    sha_us, shas = per_event_us(lambda m: hashlib.sha256(m).digest(), messages, args.repeat)
    sign_us, signs = per_event_us(signer.sign, plain[:50_000], args.repeat)
    assert all(check.problem(e) is None for e in tagged[:1000])

    replay_eps(plain, lambda: None, 1)  # warm-up: the odds and tails each wager kind computes once
    bare_eps, bare = replay_eps(plain, lambda: None, args.repeat)
    tag_eps, with_tags = replay_eps(tagged, lambda: TagCheck(ring), args.repeat)

    print(f"{'measure':<44}{'median':>12}   runs")
    print(f"{'canonical bytes, µs/event':<44}{canon_us:>12.2f}   {', '.join(f'{x:.2f}' for x in canon)}")
    print(f"{'plain SHA-256 (machine reference), µs/event':<44}{sha_us:>12.2f}   {', '.join(f'{x:.2f}' for x in shas)}")
    print(f"{'HMAC-SHA256 + base64url, µs/event':<44}{mac_us:>12.2f}   {', '.join(f'{x:.2f}' for x in mac)}")
    print(f"{'  the same from the kept pads, µs/event':<44}{kept_us:>12.2f}   {', '.join(f'{x:.2f}' for x in kept)}")
    print(f"{'whole tag check, µs/event':<44}{check_us:>12.2f}   {', '.join(f'{x:.2f}' for x in checks)}")
    print(f"{'signing (controller), µs/event':<44}{sign_us:>12.2f}   {', '.join(f'{x:.2f}' for x in signs)}")
    print(f"{'core + hold books, no check, events/s':<44}{bare_eps:>12,.0f}   {', '.join(f'{x:,.0f}' for x in bare)}")
    print(f"{'core + hold books + tag check, events/s':<44}{tag_eps:>12,.0f}   "
          f"{', '.join(f'{x:,.0f}' for x in with_tags)}")
    print(f"ratio with/without the check: {tag_eps / bare_eps:.2f} "
          f"(the check adds {1e6 / tag_eps - 1e6 / bare_eps:.2f} µs per event)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
