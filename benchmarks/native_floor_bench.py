"""The floor of a native rules core behind `apply(state, event) -> (state, outputs, verdict)`
(issue 15; docs/native-core-floor.md). Builds the Rust crate benchmarks/native_floor (cargo,
release), checks its outputs against the Python core's, and times side by side, in one process,
interleaved rounds, CPU seconds (`time.process_time`), medians:

    python benchmarks/native_floor_bench.py [--rounds 7] [--no-build]
    python benchmarks/native_floor_bench.py --only VARIANT      # one run of one variant, for
        valgrind --tool=callgrind --toggle-collect=_operator_call  (counts inside operator.call)

Variants: the Python core (`core_loop()`); tier 1, the floor (the boundary work alone, outputs
from a plan made of the Python core's outputs, no rules) as a native loop over the list (bare,
reads only, reads by getattr, collected outputs, outputs by getattr, per-event (state, outputs,
verdict) tuples) and as `floor_apply` called per event from the Python loop of `core_loop()`;
tier 2, the native mini-core (its `apply` from the same Python loop, and its native loop); crapssim
0.4.1 (`run_crapssim`).
"""
from __future__ import annotations

import argparse
import operator
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CRATE = HERE / "native_floor"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from crapssim_compare import (  # noqa: E402
    core_loop, decoded_events, dice_of_hands, loop_of, our_records, run_crapssim,
)

HANDS, PLAYERS, SEED = 3000, 8, 15


def build() -> None:
    env = {**os.environ, "PYO3_PYTHON": sys.executable}
    subprocess.run(["nice", "-n", "19", "cargo", "build", "--release", "--quiet"], cwd=CRATE, check=True, env=env)
    shutil.copy(CRATE / "target" / "release" / "libnative_floor.so", CRATE / "native_floor.so")


def load():
    sys.path.insert(0, str(CRATE))
    import native_floor
    from streams.rules import events as ev_mod

    native_floor.init(ev_mod, False)
    return native_floor, ev_mod


def plan_of(events) -> list:
    """Per event, the Python core's outputs as the floor's ops (no rules left to run)."""
    from streams.rules import apply
    from streams.rules.events import MarkerCleared, MarkerPlaced, SurveillanceAlerted, WagerPlaced, WagerSettled

    index: dict = {}
    plan = []
    state = None
    for e in events:
        if type(e) is WagerPlaced:
            index[e.wager_id] = len(index)
        state, out, verdict = apply(state, e)
        assert verdict == "applied", verdict
        ops = []
        for o in out:
            t = type(o)
            if t is WagerSettled:
                odds, rest = divmod(o.won_cents, o.stake_cents)
                assert rest == 0
                ops.append(("S", index[o.wager_id], o.outcome, odds, o.paytable, o.detail))
            elif t is MarkerPlaced:
                ops.append(("P", o.layout, o.cohort, o.marker, o.count))
            elif t is MarkerCleared:
                ops.append(("C", o.layout, o.cohort, o.reason))
            elif t is SurveillanceAlerted:
                ops.append(("A", o.alert, o.shooter_id, o.message, o.wager_ids))
            else:
                raise AssertionError(t)
        plan.append(ops)
    return plan


class _Lazy:
    """The floor's plan, made on first use (the Python core run once more)."""

    def __init__(self, nf, events):
        self.nf, self.events, self.floor = nf, events, None

    def __getattr__(self, name):
        if self.floor is None:
            self.floor = self.nf.Floor(plan_of(self.events))
            self.floor.install()
        return getattr(self.floor, name)


def variants(nf, ev_mod, events, dice):
    floor = _Lazy(nf, events)
    python = core_loop()
    null_loop = loop_of(nf.null_apply)

    def floor_loop(events):
        floor.install()  # the plan floor_apply follows (made on first use)
        return loop_of(nf.floor_apply)(events)
    tier2_loop = loop_of(nf.apply)

    def by_attr(mode=None, fn=None):
        def run():
            nf.init(ev_mod, True)
            try:
                return floor.run(events, mode) if fn is None else fn()
            finally:
                nf.init(ev_mod, False)
        return run

    return {
        "python": ("Python core, core_loop() (the reference)", lambda: python(events)),
        "floor_bare": ("floor: native loop, type check only", lambda: floor.run(events, 3)),
        "floor_fields": ("floor: native loop, fields read (slot offsets), nothing kept", lambda: floor.run(events, 4)),
        "floor_reads": ("floor: the same, + the wagers kept in a native map", lambda: floor.run(events, 0)),
        "floor_reads_attr": ("floor: the same (+ map), fields read by PyObject_GetAttr", by_attr(0)),
        "floor_collected": ("floor: native loop, reads + outputs, collected", lambda: floor.run(events, 1)),
        "floor_collected_attr": ("floor: the same, fields read by PyObject_GetAttr", by_attr(1)),
        "floor_tuples": ("floor: native loop, per event (state, outputs, verdict)", lambda: floor.run(events, 2)),
        "null_apply": ("null_apply(state, event) (does nothing) from core_loop's loop", lambda: null_loop(events)),
        "floor_apply": ("floor: floor_apply(state, event) from core_loop's loop", lambda: floor_loop(events)),
        "tier2_apply": ("tier 2: native apply(state, event) from core_loop's loop", lambda: tier2_loop(events)),
        "tier2_apply_attr": ("tier 2: the same, fields read by PyObject_GetAttr",
                             by_attr(fn=lambda: tier2_loop(events))),
        "tier2_loop": ("tier 2: native loop over the list, collected", lambda: nf.run_core(events)),
        "crapssim": ("crapssim 0.4.1, Table.fixed_run (run_crapssim)", lambda: run_crapssim(dice, PLAYERS)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--only", help="run one variant once inside operator.call (for callgrind)")
    args = ap.parse_args()
    if not args.no_build:
        build()
    nf, ev_mod = load()
    dice = dice_of_hands(HANDS, SEED)
    events = decoded_events(our_records(dice, PLAYERS))
    throws = len(dice)
    vs = variants(nf, ev_mod, events, dice)
    if args.only:
        if args.only.startswith("floor"):
            vs["floor_bare"][1]()  # the plan made (the Python core run once more) outside the count
        operator.call(vs[args.only][1])  # the frame callgrind counts
        return 0

    expected = core_loop()(events)
    print(f"{len(events):,} events, {throws:,} throws, {len(expected):,} outputs "
          f"({sum(type(o).__name__ == 'WagerSettled' for o in expected):,} settlements)")
    checks = {
        "floor collected": vs["floor_collected"][1](),
        "floor_apply loop": vs["floor_apply"][1](),
        "floor by getattr": vs["floor_collected_attr"][1](),
        "tier 2 apply loop": vs["tier2_apply"][1](),
        "tier 2 native loop": vs["tier2_loop"][1](),
        "tier 2 by getattr": vs["tier2_apply_attr"][1](),
    }
    ok = True
    for name, got in checks.items():
        same = got == expected
        ok &= same
        print(f"  {name:<20} outputs == Python core's: {'yes' if same else 'NO'} ({len(got):,})")
    got = vs["floor_tuples"][1]()
    ok &= got == expected
    print(f"  floor tuples         outputs taken from the (state, outputs, verdict) tuples == Python core's: "
          f"{'yes' if got == expected else 'NO'}")
    state, out, verdict = nf.floor_apply(None, events[0])
    print(f"  floor_apply(None, TableOpened) -> ({type(state).__name__}, {out!r}, {verdict!r})")
    del checks, got

    times: dict[str, list[float]] = {k: [] for k in vs}
    for _ in range(args.rounds):  # interleaved: every variant sees the same machine noise
        for key, (_, fn) in vs.items():
            start = time.process_time()
            if key == "crapssim":
                took = fn()  # its own CPU seconds (the table set up inside)
            else:
                fn()  # the result freed inside the timing, as in crapssim_compare.run_core
                took = time.process_time() - start
            times[key].append(took)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["crapssim"]
    print(f"\nload average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; medians of {args.rounds} rounds")
    print(f"{'':<62}{'ms':>8}{'throws/s':>12}{'x crapssim':>11}{'ns/event':>10}")
    for key, (label, _) in vs.items():
        m = med[key]
        print(f"{label:<62}{m * 1e3:>8.1f}{throws / m:>12,.0f}{base / m:>10.1f}x{m / len(events) * 1e9:>10.0f}")
    print(f"\npython / crapssim: {base / med['python']:.1f}x; floor (apply from the loop) / crapssim: "
          f"{base / med['floor_apply']:.1f}x; floor (native loop) / crapssim: {base / med['floor_collected']:.1f}x; "
          f"tier 2 (apply) / crapssim: {base / med['tier2_apply']:.1f}x; tier 2 (native loop) / crapssim: "
          f"{base / med['tier2_loop']:.1f}x")
    print(f"python time / floor time: {med['python'] / med['floor_apply']:.1f}x (apply from the loop), "
          f"{med['python'] / med['floor_collected']:.1f}x (native loop)")
    parts = med["floor_collected"] - med["floor_reads"]
    print(f"floor parts (native loop): bare loop {med['floor_bare'] * 1e3:.1f} ms, reading the fields "
          f"{(med['floor_fields'] - med['floor_bare']) * 1e3:.1f} ms, the wager map "
          f"{(med['floor_reads'] - med['floor_fields']) * 1e3:.1f} ms, building outputs {parts * 1e3:.1f} ms; "
          f"per-event tuples +{(med['floor_tuples'] - med['floor_collected']) * 1e3:.1f} ms; the Python loop and "
          f"call per event +{(med['floor_apply'] - med['floor_tuples']) * 1e3:.1f} ms")
    print(f"the contract's call alone (null_apply from the loop): {med['null_apply'] * 1e3:.1f} ms")
    print("rounds (ms): " + "; ".join(f"{k} " + ",".join(f"{x * 1e3:.0f}" for x in v) for k, v in times.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
