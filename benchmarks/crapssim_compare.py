"""craps-streams against crapssim 0.4.1 (the maintained open-source Python craps engine), side by side.

    pip install 'craps-streams[bench]'      # crapssim==0.4.1, a benchmark-only dependency
    python benchmarks/crapssim_compare.py [--hands 3000 --players 8 --rounds 5 --seed 15]

The set-up: one table, `--hands` shooters (a hand ends at the seven-out), `--players`
players each betting $5 on the Fire Bet, All Small, All Tall and All Or Nothing at every new shooter.
The same dice go to both engines: a fixed sequence made here (seeded), handed to crapssim's
`Table.fixed_run` and written as our events (TableOpened, ShooterChanged, WagerPlaced, DiceThrown,
TableClosed) to a JSON Lines history.

Measured in interleaved rounds (so the three see the same machine noise), medians reported, per
CPU second of the measured process (a shared 2-core machine: wall time would count other processes);
each ratio both of the medians and as the median of the rounds' own ratios ("by round"):
  1. crapssim in memory: `Table.fixed_run(dice)`, players and strategies set up, no I/O;
  2. our rules core in memory: the apply loop over the pre-decoded events, no I/O, once with the
     Python core (craps_streams/rules/table.py) and once with the native core (craps_streams/accelerator/rules.py,
     when built: docs/native-core.md), each as the worker and replay drive `craps_streams.rules.apply`;
  3. `craps-streams replay FILE.jsonl --only settlements -o /dev/null --keys RING` as a whole command
     in a child process (interpreter start, imports, reading, decoding, the contract check, the tag
     check, the core, the hold books and surveillance, writing): user + system CPU seconds of the
     child. The history is signed with a key ring of the benchmark's own (`tagged_history.py`,
     written to a temporary directory), so this runs from a fresh clone, with the tag check on;
  4. the same command over the same history untagged, with `--accept-untagged`: history as it
     was before events carried tags (the difference is the tag check's cost);
  5. the command's start: the same command over the history's first line alone (the interpreter,
     the imports, the settings, the key ring, the exit), printed as a share of row 3;
  6. with `--baseline DIR` (another checkout of craps-streams, its accelerator built in place): rows
     3 and 5 run from that tree too, in the same rounds, for a change's before and after side by side.

`--hands` sets the history's length: the default 3,000 hands is the target's measure; a longer one
(`--hands 30000`) spreads the command's fixed start over ten times the settling.

The package is compiled to bytecode first (`python -m compileall craps_streams`, into the
`__pycache__` directories an installed wheel carries): where PYTHONDONTWRITEBYTECODE is set, every
command would otherwise compile the package's sources again at its start, a cost no installation
pays.

Before the timings, both engines settle the history once more, instrumented, and the totals are
compared per wager kind (count, wins, losses, amount won, net to the players): the rules coincide
on these four wagers with our table's `bonus-623b.3` paytable (30/30/150, crapssim's default ATS
payouts) and the Fire Bet's 4/5/6-point pays. Where they differ (crapssim pays a Fire Bet the moment
a sixth point is made; § 623a.11(a)(5) settles it at the seven-out, at the same odds), the totals
still agree; the printout says so when that case occurred.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

STAKE_DOLLARS = 5
KINDS = ("fire", "all_small", "all_tall", "all_or_nothing")
TABLE = "T1"
TS0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


# ---------------------------------------------------------------- the shared history


def dice_of_hands(hands: int, seed: int) -> list[tuple[int, int]]:
    """Fair dice until the `hands`th seven-out (a 7 with the point on)."""
    rng = random.Random(seed)
    dice: list[tuple[int, int]] = []
    point = 0
    done = 0
    while done < hands:
        d = (rng.randint(1, 6), rng.randint(1, 6))
        dice.append(d)
        total = d[0] + d[1]
        if point == 0:
            if total in (4, 5, 6, 8, 9, 10):
                point = total
        elif total == 7:
            point = 0
            done += 1
        elif total == point:
            point = 0
    return dice


def our_records(dice: list[tuple[int, int]], players: int) -> list[dict]:
    """The same play as craps-streams events."""
    records: list[dict] = []
    seq = 0

    def add(kind: str, **fields) -> None:
        nonlocal seq
        seq += 1
        records.append({"type": kind, "table_id": TABLE, "seq": seq, "ts": TS0 + 1000 * seq, **fields})

    add("TableOpened", table_kind="live", rules={"bonus_paytable": "bonus-623b.3"})
    add("ShooterChanged", shooter_id="S1", position=1, reason="table_open")
    hand = 1
    wager = 0
    point = 0
    new_shooter = True
    for d1, d2 in dice:
        if new_shooter:
            for position in range(1, players + 1):
                for kind in KINDS:
                    wager += 1
                    add("WagerPlaced", wager_id=f"w{wager}", position=position, wager=kind,
                        amount_cents=STAKE_DOLLARS * 100)
            new_shooter = False
        add("DiceThrown", die1=d1, die2=d2, valid=True)
        total = d1 + d2
        if point == 0:
            if total in (4, 5, 6, 8, 9, 10):
                point = total
        elif total == 7:
            point = 0
            hand += 1
            new_shooter = True
            add("ShooterChanged", shooter_id=f"S{hand}", position=(hand - 1) % players + 1, reason="seven_out")
        elif total == point:
            point = 0
    add("TableClosed")
    return records


# ---------------------------------------------------------------- crapssim


def crapssim_table(dice, players: int, record: dict | None = None):
    """A crapssim table with `players` players betting Fire, Small, Tall and All at each new
    shooter; with `record`, the bets are instrumented subclasses counting their results there."""
    from crapssim import Table
    from crapssim.bet import All, Fire, Small, Tall
    from crapssim.strategy.tools import Strategy

    kinds = {"fire": Fire, "all_small": Small, "all_tall": Tall, "all_or_nothing": All}
    if record is not None:
        def counted(base, kind):
            def get_result(self, table):
                result = base.get_result(self, table)
                if result.remove:
                    line = record.setdefault(kind, {"settled": 0, "wins": 0, "losses": 0, "pushes": 0,
                                                    "won_cents": 0, "net_cents": 0, "sixth_point_paid": 0})
                    line["settled"] += 1
                    change = round((result.amount - (result.bet_amount if result.amount > 0 else 0)) * 100)
                    if result.won:
                        line["wins"] += 1
                        line["won_cents"] += change
                        if kind == "fire" and table.dice.total != 7:
                            line["sixth_point_paid"] += 1
                    elif result.lost:
                        line["losses"] += 1
                    else:
                        line["pushes"] += 1
                    line["net_cents"] += change
                return result
            return type(f"Counted{base.__name__}", (base,), {"get_result": get_result})
        kinds = {k: counted(b, k) for k, b in kinds.items()}
    bets = tuple(kinds.values())

    class SideWagersEveryShooter(Strategy):
        def completed(self, player) -> bool:
            return False

        def update_bets(self, player) -> None:
            if player.table.new_shooter:
                for bet in bets:
                    player.add_bet(bet(STAKE_DOLLARS))

    table = Table(seed=0)
    for _ in range(players):
        table.add_player(bankroll=10**12, strategy=SideWagersEveryShooter())
    return table


def run_crapssim(dice, players: int) -> float:
    """CPU seconds of crapssim settling the dice (the table and players set up inside)."""
    start = time.process_time()
    table = crapssim_table(dice, players)
    table.fixed_run(dice, verbose=False)
    return time.process_time() - start


# ---------------------------------------------------------------- craps-streams


def decoded_events(records: list[dict]) -> list:
    from craps_streams.rules import record_to_event

    return [record_to_event(r) for r in records]


def core_loop(core: str | None = None):
    """The rules core's in-memory loop: every table's state by id, `apply` per event. `core`:
    "python" (craps_streams/rules/table.py), "native" (craps_streams/accelerator/rules.py), None: the
    core CRAPS_CORE chooses, as the command line chooses it (auto when unset; docs/native-core.md)."""
    from craps_streams.accelerator.rules import rules_core

    return loop_of(rules_core(core or os.environ.get("CRAPS_CORE") or "auto").apply)


def loop_of(apply):
    """The in-memory loop over the events with this `apply` (every table's state by id, one call
    per event)."""
    def run(events) -> list:
        tables: dict = {}
        get = tables.get
        settled = []
        for e in events:
            state, out, _ = apply(get(e.table_id), e)
            if state is not None:
                tables[e.table_id] = state
            if out:
                settled.extend(out)
        return settled
    return run


def run_core(events, core: str | None = None) -> float:
    run = core_loop(core)
    start = time.process_time()
    run(events)
    return time.process_time() - start


def command(path: str, out: str, keys: str | None) -> list[str]:
    """The replay command: with `keys`, the tagged history checked under that ring; without, the
    untagged history let through (`--accept-untagged`)."""
    tags = ["--keys", keys] if keys else ["--accept-untagged"]
    return [sys.executable, "-m", "craps_streams.cli", "replay", path, "--only", "settlements", "-o", out,
            "--no-progress", *tags]


def compile_package(tree: Path = ROOT) -> None:
    """The package's bytecode written beside its sources, as installing a wheel writes it, so the
    command's start is measured as an installation runs it (PYTHONDONTWRITEBYTECODE, where set,
    would have each run compile every module again)."""
    import compileall

    if not compileall.compile_dir(str(tree / "craps_streams"), quiet=1):
        raise SystemExit(f"compileall failed on {tree / 'craps_streams'}")


def run_command(path: str, keys: str | None, tree: Path = ROOT) -> float:
    """User + system CPU seconds of the whole `craps-streams replay` command (the package of `tree`)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # run in `tree`: `python -m` puts the working directory first on the path, before PYTHONPATH
    subprocess.run(command(path, os.devnull, keys), check=True, env=env, stderr=subprocess.DEVNULL, cwd=tree)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def our_totals(settlement_lines) -> dict:
    totals: dict = {}
    for line in settlement_lines:
        s = json.loads(line)
        t = totals.setdefault(s["wager"], {"settled": 0, "wins": 0, "losses": 0, "pushes": 0, "won_cents": 0,
                                           "net_cents": 0})
        t["settled"] += 1
        t[{"win": "wins", "lose": "losses", "push": "pushes"}[s["outcome"]]] += 1
        t["won_cents"] += s["won_cents"]
        t["net_cents"] += s["won_cents"] if s["outcome"] == "win" else (
            -s["stake_cents"] if s["outcome"] == "lose" else 0)
    return totals


# ---------------------------------------------------------------- the run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=3000)
    ap.add_argument("--players", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--file", help="where the tagged JSON Lines history is written (default: a temporary directory)")
    ap.add_argument("--baseline", metavar="DIR", type=Path,
                    help="another checkout whose command (tagged, and its start) is measured in the same rounds")
    args = ap.parse_args()

    from tagged_history import bench_ring, signed, write_ring

    dice = dice_of_hands(args.hands, args.seed)
    records = our_records(dice, args.players)
    throws = len(dice)
    work = tempfile.mkdtemp(prefix="crapssim-compare-")
    path = args.file or os.path.join(work, "history.jsonl")  # tagged
    untagged_path = os.path.join(work, "untagged.jsonl")
    start_path = os.path.join(work, "start.jsonl")  # the opening alone: the command's fixed cost
    ring = bench_ring({TABLE})
    keys = str(write_ring(ring, work))
    dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    for name, history in ((path, signed(records, ring)), (untagged_path, records),
                          (start_path, list(signed(records[:1], ring)))):
        with open(name, "w") as f:
            for r in history:
                f.write(dumps(r) + "\n")
    settlements_expected = args.hands * args.players * len(KINDS)
    print(f"{args.hands:,} hands, {args.players} players x {len(KINDS)} wagers each at every new shooter: "
          f"{len(records):,} events, {throws:,} throws, {settlements_expected:,} settlements")

    # Agreement: both engines settle the same dice, instrumented.
    theirs: dict = {}
    table = crapssim_table(dice, args.players, theirs)
    table.fixed_run(dice, verbose=False)
    # Ours: the real command, every tag checked (a forged or unchecked event would be a rejection,
    # not a settlement); the untagged replay must settle the same.
    compile_package()
    if args.baseline is not None:
        compile_package(args.baseline.resolve())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    settled = {}
    for name, (history, ring_path) in {"tagged": (path, keys), "untagged": (untagged_path, None)}.items():
        out = os.path.join(work, f"settled-{name}.jsonl")
        subprocess.run(command(history, out, ring_path), check=True, env=env, stderr=subprocess.DEVNULL, cwd=ROOT)
        with open(out, "rb") as f:
            settled[name] = f.read()
        os.unlink(out)
    ours = our_totals(settled["tagged"].decode().splitlines())
    agree = settled["tagged"] == settled["untagged"]
    print(f"tagged and untagged replays settle the same bytes: {'yes' if agree else 'NO'}")
    print(f"{'totals':<16}{'engine':<12}{'settled':>9}{'wins':>7}{'losses':>8}{'won ($)':>12}{'net ($)':>12}")
    for kind in KINDS:
        o, t = ours.get(kind, {}), theirs.get(kind, {})
        for name, x in (("craps-streams", o), ("crapssim", t)):
            print(f"{kind:<16}{name:<12}{x.get('settled', 0):>9,}{x.get('wins', 0):>7,}{x.get('losses', 0):>8,}"
                  f"{x.get('won_cents', 0) / 100:>12,.2f}{x.get('net_cents', 0) / 100:>12,.2f}")
        same = all(o.get(k) == t.get(k) for k in ("settled", "wins", "losses", "pushes", "won_cents", "net_cents"))
        agree &= same
        if t.get("sixth_point_paid"):
            print(f"  crapssim paid {t['sixth_point_paid']} Fire Bets at the sixth point; craps-streams at the "
                  "seven-out (§ 623a.11(a)(5)): same amounts, a different deciding throw")
    print(f"settlement totals agree: {'yes' if agree else 'NO'}")

    events = decoded_events(records)
    from craps_streams.accelerator import rules as native

    # Both cores, side by side (docs/native-core.md): the native row when the extension is built.
    cores = ["python"] + (["native"] if native.PROBLEM is None else [])
    if native.PROBLEM is not None:
        print(f"native core: not measured: {native.PROBLEM}")
    else:
        py_out, nat_out = core_loop("python")(events), core_loop("native")(events)
        same = py_out == nat_out
        agree &= same
        print(f"native and Python cores give the same {len(py_out):,} outputs: {'yes' if same else 'NO'}")
    print(f"the worker's and replay's core (CRAPS_CORE) is the "
          f"{native.rules_core(os.environ.get('CRAPS_CORE') or 'auto').name} core")
    baseline = args.baseline.resolve() if args.baseline is not None else None
    rates: dict[str, list[float]] = {"crapssim": [], **{f"core-{c}": [] for c in cores}, "command": [], "untagged": [],
                                     **({"baseline": []} if baseline else {})}
    starts: list[float] = []  # CPU seconds of the command over the one-line history
    baseline_starts: list[float] = []
    for _ in range(args.rounds):  # interleaved: all see the same machine noise
        rates["crapssim"].append(throws / run_crapssim(dice, args.players))
        for c in cores:
            rates[f"core-{c}"].append(throws / run_core(events, c))
        rates["command"].append(throws / run_command(path, keys))
        rates["untagged"].append(throws / run_command(untagged_path, None))
        starts.append(run_command(start_path, keys))
        if baseline:
            rates["baseline"].append(throws / run_command(path, keys, baseline))
            baseline_starts.append(run_command(start_path, keys, baseline))
    base = statistics.median(rates["crapssim"])
    labels = {"crapssim": "crapssim, in memory, no I/O",
              "core-python": "craps-streams rules core, Python, in memory (pre-decoded events)",
              "core-native": "craps-streams rules core, native, in memory (pre-decoded events)",
              "command": "craps-streams replay FILE.jsonl --only settlements --keys RING (tagged)",
              "untagged": "  the same, untagged history, --accept-untagged",
              "baseline": f"  the tagged command from {baseline}"}
    print(f"\nload average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (after the rounds)")
    # "ratio": of the medians; "by round": the median of each round's own ratio, crapssim and the
    # row measured seconds apart, which a shared machine's swings between rounds (crapssim alone
    # moves by up to 1.7x within a run here) disturb least.
    print(f"{'':<70}{'throws/s':>10}{'events/s':>11}{'ratio':>8}{'by round':>10}   rounds (throws/s per CPU s)")
    for key, label in labels.items():
        if key not in rates:
            continue
        m = statistics.median(rates[key])
        by_round = statistics.median(x / c for x, c in zip(rates[key], rates["crapssim"]))
        print(f"{label:<70}{m:>10,.0f}{m * len(records) / throws:>11,.0f}{m / base:>7.1f}x{by_round:>9.1f}x   "
              f"{', '.join(f'{x:,.0f}' for x in rates[key])}")
    runs = [("the command's", starts, "command")] + ([(f"{baseline}'s", baseline_starts, "baseline")] if baseline else [])
    for name, fixed, key in runs:
        start, whole = statistics.median(fixed), throws / statistics.median(rates[key])
        rest = whole - start
        print(f"{name} start (its history's first line alone): {start:.3f} of the tagged command's {whole:.3f} "
              f"CPU s ({100 * start / whole:.0f} %); the rest settles the history at {throws / rest:,.0f} throws/s "
              f"({throws / rest / base:.1f}x crapssim)")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
