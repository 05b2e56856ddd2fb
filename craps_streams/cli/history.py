"""What the commands that settle a history share: the tag check, the time slice, the summary."""
from __future__ import annotations

import sys

from craps_streams.cli.errors import CommandError, EXIT_SECRETS, note


def dollars(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def tag_check(args, settings):
    """The tag check of replay, audit and report, from the key ring (--keys, else the setting's path);
    CommandError (exit 4) when there is none, unless --accept-untagged."""
    from craps_streams.authenticity import KeyRing, KeyRingError, TagCheck
    from craps_streams.authenticity import keyfile

    try:
        ring = keyfile.load(args.keys or settings.key_ring_path)
    except KeyRingError as e:
        if not args.accept_untagged:
            raise CommandError(str(e), EXIT_SECRETS) from None
        note(args, f"no key ring ({e}); every tagged event will be rejected (unknown_key)")
        ring = KeyRing()
    return TagCheck(ring, accept_untagged=args.accept_untagged)


def slice_of(args):
    """The time slice and tables of --since, --until, --tables; CommandError on a bad time."""
    from craps_streams.replay.sources import Slice, parse_time

    try:
        since, until = parse_time(args.since), parse_time(args.until)
    except ValueError as e:
        raise CommandError(str(e)) from None
    tables = frozenset(t.strip() for t in args.tables.split(",") if t.strip()) if args.tables else None
    return Slice(tables, since, until)


def open_out(path: str | None):
    return sys.stdout if path in (None, "-") else open(path, "w", encoding="utf-8")


def format_summary(tally) -> str:
    lines = [
        f"events read {tally.read:,}  applied {tally.applied:,}  rejected {tally.rejected:,}  "
        f"duplicates {tally.duplicates:,}" + (f"  held {tally.held:,} (beyond a sequence gap)" if tally.held else ""),
    ]
    if tally.rejections_by_reason:
        lines.append("rejections: " + ", ".join(f"{k} {v:,}" for k, v in sorted(tally.rejections_by_reason.items())))
    if getattr(tally, "untagged", 0):
        lines.append(f"UNTAGGED: {tally.untagged:,} events accepted without an authentication tag "
                     f"(--accept-untagged: history from before tags, not proven authentic)")
    # The stakes handed back (wins' and pushes', a table closed or a Hot Shooter surrendered among
    # them) have a column of their own, so each line adds up: handle - stakes back - won = house win.
    header = (f"{'wager':<16}{'settled':>10}{'pushes':>8}{'handle':>16}{'stakes back':>16}{'won by players':>16}"
              f"{'house win':>14}{'hold %':>9}")
    lines += [header, "-" * len(header)]

    def row(name: str, line) -> str:
        return (f"{name:<16}{line.settled:>10,}{line.pushes:>8,}{dollars(line.handle_cents):>16}"
                f"{dollars(line.returned_cents):>16}{dollars(line.won_cents):>16}{dollars(line.house_win_cents):>14}"
                f"{line.hold_percent:>8.2f}%")

    for wager, line in sorted(tally.hold.by_wager().items()):
        lines.append(row(wager, line))
    lines.append(row("all side wagers", tally.hold.total()))
    lines.append("handle - stakes back - won by players = house win; pushes: table closed, surrendered, "
                 "or a paytable's push")
    return "\n".join(lines)
