"""The rules core's in-memory loop of `crapssim_compare.py`, for counting instructions.

    valgrind --tool=callgrind --toggle-collect=_operator_call python benchmarks/core_instructions.py

Instruction counts do not depend on the machine's load, where CPU seconds on a shared machine do.
The loop runs inside `operator.call` (C), and callgrind's `--toggle-collect=_operator_call` counts
only what runs inside it: the loop, none of the interpreter's start, the imports or building the
decoded events (`crapssim_compare`'s own functions: `dice_of_hands`, `our_records`,
`decoded_events`, `core_loop`). The count is the same from run to run (with PYTHONHASHSEED=0 and
the modules compiled beforehand); subtracting a run with `--build-only` from a whole run (no
toggle) counts the loop too, within about 3 % (the heap's layout moves glibc's malloc work between
the two runs). `--loops N` runs the loop N times; `--digest` prints a digest of the outputs (the
same before and after a change: the same outputs).
"""
from __future__ import annotations

import argparse
import hashlib
import operator
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crapssim_compare import core_loop, decoded_events, dice_of_hands, our_records  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hands", type=int, default=3000)
    ap.add_argument("--players", type=int, default=8)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--loops", type=int, default=1)
    ap.add_argument("--build-only", action="store_true", help="build the events, run no loop")
    ap.add_argument("--digest", action="store_true", help="print a digest of the outputs")
    ap.add_argument("--core", choices=("python", "native"), help="the core (default: CRAPS_CORE's, auto when unset)")
    args = ap.parse_args()
    events = decoded_events(our_records(dice_of_hands(args.hands, args.seed), args.players))
    run = core_loop(args.core)
    if args.build_only:
        return 0
    start = time.process_time()
    for _ in range(args.loops):
        out = operator.call(run, events)  # the frame callgrind counts (--toggle-collect)
    took = time.process_time() - start
    print(f"{len(events):,} events, {len(out):,} outputs, {took / args.loops:.3f} CPU s a loop", file=sys.stderr)
    if args.digest:
        import msgspec

        print(hashlib.sha256(msgspec.json.encode(out)).hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main())
