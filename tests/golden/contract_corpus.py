"""A deterministic corpus of odd and hostile JSON Lines for the contract check.

Every rejection reason and message the contract gives, and the lines it must accept however they
are written (keys in any order, escapes, whitespace, duplicate keys), in one file of bytes. The
replay of it is pinned by digest (tests/golden/test_replay_speed_golden.py): a faster decoder must
accept, reject and word its rejections exactly as the plain path did.
"""
from __future__ import annotations

import json

ODD_VALUES = [None, "", "x", "<script>alert(1)</script>", "é", 0, -1, 1, 7, 2**63, 2**64 + 5, -2**70,
              1.0, 1.5, -0.0, True, False, [], [1], {}, {"a": 1}]
# JSON text that json.loads reads but a stricter reader may not: placed verbatim as a value.
ODD_TEXTS = ["NaN", "Infinity", "-Infinity", "1e2", "1E0", "-0", "10.0", '"\\ud800"', '"\\u0000"',
             '"T\\u0031"', '"\\/"', "123456789012345678901234567890", '"' + "y" * 3000 + '"']

GOOD = {
    "TableOpened": {"table_kind": "hybrid", "rules": {"fire_paytable": "fire-623a.5"}},
    "ShooterChanged": {"shooter_id": "S1", "position": 3, "reason": "table_open"},
    "DiceThrown": {"die1": 3, "die2": 4, "valid": True},
    "WagerPlaced": {"wager_id": "w1", "position": 2, "wager": "fire", "amount_cents": 500},
    "WagerChangeRequested": {"wager_id": "w1", "amount_cents": 100},
    "ComeBetsOnly": {"active": True},
    "TableClosed": {},
}


def _line(record: dict) -> str:
    return json.dumps(record, separators=(",", ":"))


def corpus_lines() -> list[str]:
    """The corpus as text lines (no newline); the file also holds raw bytes (`corpus_bytes`)."""
    lines: list[str] = []
    seqs: dict[str, int] = {}

    def base(kind: str, table: str = "H1") -> dict:
        # The odd variations go to H1, never opened: one that is well-formed after all is judged
        # by the core (unknown_table); C1 gets an unbroken run of seqs, judged by the game rules.
        seq = seqs[table] = seqs.get(table, 0) + 1
        return {"type": kind, "table_id": table, "seq": seq, "ts": 1_767_225_600_000 + seq}

    lines.append(_line({**base("TableOpened", "C1"), "table_kind": "hybrid"}))
    lines.append(_line({**base("ShooterChanged", "C1"), "shooter_id": "S1", "position": 1, "reason": "table_open"}))
    for kind, fields in GOOD.items():
        lines.append(_line({**base(kind), **fields}))
        # Each field (the common ones too) missing, then set to each odd value, then as odd text.
        for name in ["type", "table_id", "seq", "ts", *fields]:
            r = {**base(kind), **fields}
            del r[name]
            lines.append(_line(r))
            for v in ODD_VALUES:
                r = {**base(kind), **fields, name: v}
                lines.append(_line(r))
            for text in ODD_TEXTS:
                r = {**base(kind), **fields, name: "@@"}
                lines.append(_line(r).replace('"@@"', text))
        lines.append(_line({**base(kind), **fields, "extra": 1}))
        lines.append(_line({**base(kind), **fields, "zz": None, "aa": 2}))
        # Keys in reverse order, the type last; spaced out; escaped key names; duplicate keys.
        r = {**base(kind), **fields}
        lines.append(_line(dict(reversed(list(r.items())))))
        lines.append(json.dumps(r, indent=None, separators=(" , ", " : ")))
        lines.append(_line(r).replace('"table_id"', '"table\\u005fid"'))
        lines.append(_line(r)[:-1] + ',"seq":' + str(r["seq"] + 1000) + "}")
        lines.append(_line(r)[:-1] + ',"type":"Nope"}')
        lines.append('{"type":"Nope",' + _line(r)[1:])
        lines.append("\t " + _line(r) + " \t")
        lines.append(_line({**r, "table_id": "C1 "}))
    for kind in ("", "tableopened", "TableOpened ", "WagerSettled", "EventRejected", "__class__"):
        lines.append(_line({**base("TableClosed"), "type": kind}))
    for text in ("[]", "[1,2]", "1", "-5", '"text"', "null", "true", "{}", "{", "}", "{not json", "{}{}",
                 '{"a":1} x', '{"type":"TableClosed"', "\x0c{}", "\ufeff{}", '{"type":"Table\\u0043losed"}',
                 "[" * 2000 + "]" * 2000, '{"a":' * 200 + "1" + "}" * 200):
        lines.append(text)
    # Values that are right in type but wrong for the game: judged by the core, not the contract.
    for die in (0, 7, -3, 2**40):
        lines.append(_line({**base("DiceThrown", "C1"), "die1": die, "die2": 1}))
    for position, wager, amount in ((40, "fire", 500), (4, "keno", 500), (4, "fire", 550), (4, "fire", 0),
                                    (4, "hot_shooter", 500), (5, "all_small", 2**70), (5, "all_tall", 500)):
        lines.append(_line({**base("WagerPlaced", "C1"), "wager_id": f"w{position}", "position": position,
                            "wager": wager, "amount_cents": amount}))
    lines.append(_line({**base("WagerPlaced", "C1"), "wager_id": "w5", "position": 6, "wager": "fire",
                        "amount_cents": 500}))
    lines.append(_line({**base("WagerChangeRequested", "C1"), "wager_id": "w5", "amount_cents": 100}))
    lines.append(_line({**base("DiceThrown", "C1"), "die1": 2, "die2": 2}))
    lines.append(_line({**base("ComeBetsOnly", "C1"), "active": False}))
    lines.append(_line({**base("WagerPlaced", "C1"), "wager_id": "w7", "position": 7, "wager": "fire",
                        "amount_cents": 500}))
    lines.append(_line({**base("DiceThrown", "C1"), "die1": 2, "die2": 5}))
    lines.append(_line({**base("DiceThrown", "C1"), "die1": 2, "die2": 5}))
    lines.append(_line({**base("TableClosed", "C1")}))
    lines.append(_line({**base("TableOpened", "C2"), "table_kind": "dungeon"}))
    lines.append(_line({**base("TableOpened", "C3"), "table_kind": "live", "rules": {"fire_paytable": "nope"}}))
    lines.append(_line({**base("TableOpened", "C4"), "table_kind": "live", "rules": {"bogus": 1}}))
    lines.append(_line({**base("TableOpened", "C5"), "table_kind": "live", "rules": None}))
    lines.append(_line({**base("DiceThrown", "C9"), "die1": 1, "die2": 1, "valid": None}))
    return lines


def corpus_bytes() -> bytes:
    """The corpus as a file: the text lines, plus bytes no text line can hold (invalid UTF-8, a
    lone carriage return, a blank line, a NUL), ending without a final newline."""
    body = "\n".join(corpus_lines()).encode("utf-8", "surrogatepass")
    extra = [
        b'{"type":"TableClosed","table_id":"C\xff","seq":1,"ts":1}',
        b'{"type":"TableClosed","table_id":"C\xed\xa0\x80","seq":1,"ts":1}',
        b'{"type":"TableClosed","table_id":"C1","seq":9000,"ts":1}\r{"type":"TableClosed","table_id":"C1","seq":9001,"ts":1}',
        b'{"type":"TableClosed","table_id":"C\r1","seq":9002,"ts":1}',
        b'{"type":"TableClosed","table_id":"C1","seq":9003,"ts":1}\r\n',
        b"",
        b"   ",
        b'{"type":"TableClosed","table_id":"C\x001","seq":9004,"ts":1}',
        b'{"type":"TableClosed","table_id":"C\x01","seq":9005,"ts":1}',
        b'{"type":"TableClosed","table_id":"C1","seq":9006,"ts":1}',
    ]
    return body + b"\n" + b"\n".join(extra)
