"""A simulated craps floor: fair dice, shooters, players placing legal side wagers at legal moments.

Each table is a generator of contract records in time order; the floor merges them by time, so a
floor of any length streams in constant memory. Seeded: the same arguments give the same bytes.
The simulator knows only the rules a dealer knows (when each window is open); settlement is the
core's job, never the simulator's.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass
from typing import Iterator

from craps_streams.rules.hot_shooter import HOT_SHOOTER_TABLE_KINDS
from craps_streams.rules.table import POINT_NUMBERS, POSITIONS

FLOOR_EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
POINTS = POINT_NUMBERS  # the point numbers (craps_streams/rules/table.py)

# Seconds between throws by table kind: a live craps table throws about every 25 s.
PACE_SECONDS = {"live": (15, 40), "hybrid": (12, 30), "fully_automated": (10, 22)}
# Typical stakes in cents (the Fire Bet is bounded by § 623a.11(b)(1)).
STAKES = {
    "fire": (100, 200, 300, 500, 500),
    "all_small": (100, 500, 500, 1000, 2500),
    "all_tall": (100, 500, 500, 1000, 2500),
    "all_or_nothing": (100, 500, 500, 1000),
    "hot_roller": (500, 500, 1000, 2500),
    "hot_shooter": (100, 500, 1000),
}


@dataclass(frozen=True)
class Fault:
    """A table that misbehaves, so that surveillance's detection is measured, not assumed.

    - `loaded-dice[:P7]`: the 7's six cells have probability P7 (default 5/36) together, the other
      30 cells share the rest evenly.
    - `shaker-drift[:RATE]`: die 1 shows 6 with probability 1/6 + RATE x hours since the table
      opened (default 0.02 an hour, at most 1/2), its other faces share the rest: a mechanical
      shaker wearing on an automated table.
    - `past-posting:POSITION`: the player at POSITION (seated if the table had nobody there) places
      a Hot Roller wager exactly when the next throw will not be a 7 (and never otherwise).
    """

    kind: str
    p7: float = 5 / 36
    rate: float = 0.02
    position: int = 0

    @classmethod
    def parse(cls, text: str) -> "Fault":
        kind, _, arg = text.partition(":")
        if kind == "loaded-dice":
            p7 = _number(arg) if arg else 5 / 36
            if not 0 < p7 < 1:
                raise ValueError("loaded-dice:P7 needs 0 < P7 < 1 (e.g. 5/36)")
            return cls(kind, p7=p7)
        if kind == "shaker-drift":
            rate = _number(arg) if arg else 0.02
            if not 0 < rate <= 1:
                raise ValueError("shaker-drift:RATE needs 0 < RATE <= 1 (probability per hour)")
            return cls(kind, rate=rate)
        if kind == "past-posting":
            if not arg.isdigit() or int(arg) not in POSITIONS:
                raise ValueError("past-posting:POSITION needs a position 1..16")
            return cls(kind, position=int(arg))
        raise ValueError(f"unknown fault {kind!r}: loaded-dice[:P7], shaker-drift[:RATE], past-posting:POSITION")


def _number(text: str) -> float:
    if "/" in text:
        a, b = text.split("/", 1)
        return float(a) / float(b)
    return float(text)


@dataclass(frozen=True)
class Player:
    position: int
    likes: dict  # wager kind -> probability of placing it in an open window


def _players(rng: random.Random) -> list[Player]:
    positions = sorted(rng.sample(POSITIONS, rng.randint(3, 12)))
    out = []
    for p in positions:
        out.append(Player(p, {
            "fire": rng.choice((0.0, 0.3, 0.7)),
            "all_small": rng.choice((0.0, 0.2, 0.5)),
            "all_tall": rng.choice((0.0, 0.2, 0.5)),
            "all_or_nothing": rng.choice((0.0, 0.1, 0.3)),
            "hot_roller": rng.choice((0.0, 0.2, 0.5)),
            "hot_shooter": rng.choice((0.0, 0.3, 0.6)),
        }))
    return out


class TableSimulation:
    """One table's history. Tracks only what a dealer sees: shooter, point, first throw, cycle."""

    def __init__(self, table_id: str, kind: str, seed: str, start_ms: int, end_ms: int,
                 bad_rate: float = 0.0, rules: dict | None = None,
                 come_bets_only_rate: float = 0.02, voluntary_rate: float = 0.004,
                 fault: Fault | None = None):
        self.table_id = table_id
        self.kind = kind
        self.rng = random.Random(seed)
        self.ts = start_ms
        self.end_ms = end_ms
        self.bad_rate = bad_rate
        self.rules = rules
        self.come_bets_only_rate = come_bets_only_rate  # per point made
        self.voluntary_rate = voluntary_rate  # per throw
        self.seq = 0
        self.wager_n = 0
        self.players = _players(self.rng)
        self.last_record: dict | None = None
        self.fault = fault
        self.start_ms = start_ms
        self.poster: Player | None = None
        if fault is not None and fault.kind == "past-posting":
            seated = {p.position: p for p in self.players}
            self.poster = seated.get(fault.position) or Player(fault.position, dict(self.players[0].likes))
            if fault.position not in seated:
                self.players = sorted(self.players + [self.poster], key=lambda p: p.position)
        if fault is not None and fault.kind == "loaded-dice":
            other = (1 - fault.p7) / 30
            self.cell_weights = [fault.p7 / 6 if a + b == 7 else other
                                 for a in range(1, 7) for b in range(1, 7)]

    # ------------------------------------------------------------ record makers

    def _record(self, type_: str, **fields) -> dict:
        self.seq += 1
        r = {"type": type_, "table_id": self.table_id, "seq": self.seq, "ts": self.ts, **fields}
        self.last_record = r
        return r

    def _tick(self, low_s: float, high_s: float) -> None:
        self.ts += int(self.rng.uniform(low_s, high_s) * 1000)

    def _wager(self, player: Player, kind: str) -> dict:
        self.wager_n += 1
        return self._record("WagerPlaced", wager_id=f"{self.table_id}-w{self.wager_n}",
                            position=player.position, wager=kind,
                            amount_cents=self.rng.choice(STAKES[kind]))

    def _bad(self) -> dict | str:
        """Bad input of the kinds a floor really sends, so every rejection path is exercised."""
        rng = self.rng
        kind = rng.randrange(8)
        if kind == 0 and self.last_record is not None:
            return dict(self.last_record)  # a duplicate: same table and seq
        if kind == 1:
            self.wager_n += 1
            return self._record("WagerPlaced", wager_id=f"{self.table_id}-w{self.wager_n}",
                                position=rng.randint(1, 16), wager="fire",
                                amount_cents=rng.choice((50, 150, 700, 1000)))
        if kind == 2:
            return self._record("DiceThrown", die1=rng.choice((0, 7, 9)), die2=rng.randint(1, 6), valid=True)
        if kind == 3:
            self.wager_n += 1
            return self._record("WagerPlaced", wager_id=f"{self.table_id}-w{self.wager_n}",
                                position=rng.choice((0, 17, 20)), wager="all_small", amount_cents=500)
        if kind == 4:
            self.wager_n += 1
            return self._record("WagerPlaced", wager_id=f"{self.table_id}-w{self.wager_n}",
                                position=rng.randint(1, 16), wager="hot_shooter" if self.kind == "live"
                                else "fire", amount_cents=500)  # live Hot Shooter, or likely out of window
        if kind == 5:
            return self._record("WagerChangeRequested", wager_id=f"{self.table_id}-w{self.wager_n}",
                                amount_cents=0)
        # A message that cannot be read never reaches the table, so its seq is not used up: the
        # controller's next message carries it, as its re-send would (craps_streams/rules/sequence.py).
        if kind == 6:
            return {"type": "DiceThrown", "table_id": self.table_id, "seq": self.seq + 1, "ts": self.ts,
                    "die1": "four"}  # malformed
        return "{not json"  # a torn line

    # ------------------------------------------------------------ the dice

    def _dice(self) -> tuple[int, int]:
        rng, fault = self.rng, self.fault
        if fault is None or fault.kind == "past-posting":
            return rng.randint(1, 6), rng.randint(1, 6)
        if fault.kind == "loaded-dice":
            cell = rng.choices(range(36), self.cell_weights)[0]
            return cell // 6 + 1, cell % 6 + 1
        six = min(0.5, 1 / 6 + fault.rate * (self.ts - self.start_ms) / 3_600_000)
        rest = (1 - six) / 5
        return rng.choices((1, 2, 3, 4, 5, 6), (rest, rest, rest, rest, rest, six))[0], rng.randint(1, 6)

    # ------------------------------------------------------------ the game

    def events(self) -> Iterator[dict | str]:
        rng = self.rng
        opened = {"table_kind": self.kind}
        if self.rules is not None:
            opened["rules"] = self.rules
        yield self._record("TableOpened", **opened)
        shooter_index = 0
        shooter = self.players[0]
        reason = "table_open"
        point = 0
        hand_n = 0
        low_s, high_s = PACE_SECONDS[self.kind]
        come_bets_only = 0  # throws left in § 623a.10(b) mode
        while self.ts < self.end_ms:
            hand_n += 1
            self._tick(2, 8)
            yield self._record("ShooterChanged", shooter_id=f"{self.table_id}-p{shooter.position}-h{hand_n}",
                               position=shooter.position, reason=reason)
            first_throw = True
            cycle_fresh = True
            while True:
                # The past-poster knows the next throw (the fault): drawn before the wagers.
                upcoming = None
                if self.poster is not None:
                    d1, d2 = self._dice()
                    upcoming = (d1, d2, rng.random() < 0.01)
                # Wagers in the windows a dealer would accept (docs/rules.md, Windows).
                if not come_bets_only:
                    for player in self.players:
                        for kind, like in player.likes.items():
                            if player is self.poster and kind == "hot_roller":
                                if (point == 0 and cycle_fresh and not upcoming[2]
                                        and upcoming[0] + upcoming[1] != 7):
                                    self._tick(0.1, 0.6)
                                    yield self._wager(player, kind)
                                continue
                            if like == 0.0 or rng.random() >= like:
                                continue
                            if kind in ("fire", "all_small", "all_tall", "all_or_nothing") and not first_throw:
                                continue
                            if kind == "hot_roller" and not (point == 0 and cycle_fresh):
                                continue
                            if kind == "hot_shooter" and (point != 0 or self.kind not in HOT_SHOOTER_TABLE_KINDS):
                                continue
                            self._tick(0.1, 0.6)
                            yield self._wager(player, kind)
                if self.bad_rate and rng.random() < self.bad_rate:
                    yield self._bad()
                self._tick(low_s, high_s)
                if upcoming is not None:
                    d1, d2, invalid = upcoming
                elif self.fault is None:
                    d1, d2 = rng.randint(1, 6), rng.randint(1, 6)
                    invalid = rng.random() < 0.01
                else:
                    d1, d2 = self._dice()
                    invalid = rng.random() < 0.01
                if invalid:  # § 623a.8: a die off the table, cocked dice
                    yield self._record("DiceThrown", die1=d1, die2=d2, valid=False)
                    continue
                yield self._record("DiceThrown", die1=d1, die2=d2, valid=True)
                first_throw = False
                cycle_fresh = False
                total = d1 + d2
                if come_bets_only:
                    come_bets_only -= 1
                    if total == 7 or come_bets_only == 0:
                        come_bets_only = 0
                        self._tick(1, 3)
                        yield self._record("ComeBetsOnly", active=False)
                    if total == 7:
                        cycle_fresh = True
                    continue
                if total == 7:
                    cycle_fresh = True
                    if point:
                        point = 0
                        reason = "seven_out"
                        break
                    continue
                if point == 0 and total in POINTS:
                    point = total
                elif total == point:
                    point = 0
                    if rng.random() < self.come_bets_only_rate:
                        come_bets_only = rng.randint(1, 4)
                        self._tick(1, 3)
                        yield self._record("ComeBetsOnly", active=True)
                        continue
                if self.ts >= self.end_ms:
                    break
                if rng.random() < self.voluntary_rate:
                    reason = rng.choice(("voluntary", "voluntary", "compulsory"))
                    break
            if self.ts >= self.end_ms:
                break
            shooter_index = (shooter_index + 1) % len(self.players)
            shooter = self.players[shooter_index]
            come_bets_only = 0
        self._tick(5, 30)
        yield self._record("TableClosed")


def table_kind_for(n: int) -> str:
    """A fixed mix, so that even a small floor has every kind: 1 in 4 fully automated, 1 in 4
    hybrid, the rest live."""
    return ("live", "hybrid", "live", "fully_automated")[n % 4]


def floor_events(tables: int, hours: float, seed: int, bad_rate: float = 0.0,
                 start_ms: int = FLOOR_EPOCH_MS, faults: dict | None = None,
                 **table_options) -> Iterator[dict | str]:
    """The whole floor's events merged in time order (ties broken by table, then seq). `faults`
    maps a table id to the `Fault` it runs with; every other table is fair."""
    faults = faults or {}
    floor_rng = random.Random(seed)
    end_ms = start_ms + int(hours * 3_600_000)
    sims = []
    for n in range(1, tables + 1):
        table_id = f"T{n:03d}"
        kind = table_kind_for(n)
        sims.append(TableSimulation(table_id, kind, f"{seed}/{table_id}",
                                    start_ms + floor_rng.randint(0, 60_000), end_ms, bad_rate,
                                    fault=faults.get(table_id), **table_options))

    def keyed(i: int, sim: TableSimulation):
        for n, record in enumerate(sim.events()):
            yield (sim.ts, i, n, record)

    for *_, record in heapq.merge(*(keyed(i, s) for i, s in enumerate(sims))):
        yield record
