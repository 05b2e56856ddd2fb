"""Where a command's start goes: the interpreter, the settings' library, the package's imports, the
replay command over one line and over the crapssim play, in CPU seconds.

    python benchmarks/command_start.py [--rounds 9] [--baseline DIR]

The history is `crapssim_compare.py`'s (3,000 hands, 8 players, tagged with a key ring of the
benchmark's own), written to a temporary directory. Each program is a process of its own, run in
interleaved rounds; the medians of its user + system CPU seconds are printed, with the fastest and
slowest round. `--baseline DIR` (another checkout, its accelerator built in place) runs the
package's rows from that tree too, in the same rounds. Each package is compiled to bytecode first,
as an installed wheel is.

Rows:
  the interpreter          `python -c 'import os; os._exit(0)'` (and `site`)
  ... in a virtualenv      the same interpreter in a new virtualenv of its own, without the
                           site-packages' .pth files (an editable install's finder, any hook the
                           machine installs there): what `site` costs this interpreter beyond its own
  msgspec                  the interpreter with msgspec imported (what the settings are read with)
  pydantic-settings        the same with pydantic-settings (where installed: what they were read with)
  import craps_streams.cli the package's imports: the settings, the rules, the odds, the CLI
  the start                `craps-streams replay` over the history's first line
  the tagged command       the same over the whole history
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import venv
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from crapssim_compare import TABLE, compile_package, dice_of_hands, our_records  # noqa: E402


def cpu_of(argv: list[str], tree: Path) -> float:
    """User + system CPU seconds of one process (run in `tree`: `python -m` puts it first on the path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--baseline", metavar="DIR", type=Path, help="another checkout, measured in the same rounds")
    args = ap.parse_args()

    from tagged_history import bench_ring, signed, write_ring

    work = Path(tempfile.mkdtemp(prefix="command-start-"))
    records = our_records(dice_of_hands(3000, 15), 8)
    ring = bench_ring({TABLE})
    keys = str(write_ring(ring, work))
    dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    whole, first = work / "history.jsonl", work / "start.jsonl"
    for path, history in ((whole, signed(records, ring)), (first, list(signed(records[:1], ring)))):
        with open(path, "w") as f:
            for r in history:
                f.write(dumps(r) + "\n")

    py = sys.executable
    venv.EnvBuilder(with_pip=False).create(work / "venv")
    quiet = "import gc; gc.disable(); import {}; import os; os._exit(0)"
    rows: dict[tuple[str, str], list] = {("the interpreter", ""): [py, "-c", "import os; os._exit(0)"],
                                         ("the interpreter in a virtualenv of its own", ""):
                                             [str(work / "venv" / "bin" / "python"), "-c", "import os; os._exit(0)"],
                                         ("msgspec", ""): [py, "-c", quiet.format("msgspec")]}
    if find_spec("pydantic_settings") is not None:
        rows[("pydantic-settings", "")] = [py, "-c", quiet.format("pydantic_settings")]
    trees = {"": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    replay = [py, "-m", "craps_streams.cli", "replay", "--only", "settlements", "-o", os.devnull, "--no-progress",
              "--keys", keys]
    for name in trees:
        rows[("import craps_streams.cli", name)] = [py, "-c", "import craps_streams.cli; import os; os._exit(0)"]
        rows[("the start", name)] = [*replay, str(first)]
        rows[("the tagged command", name)] = [*replay, str(whole)]
    for tree in trees.values():
        compile_package(tree)

    times: dict = {key: [] for key in rows}
    for _ in range(args.rounds):
        for key, argv in rows.items():
            times[key].append(cpu_of(argv, trees[key[1]]))
    print(f"CPU seconds, medians of {args.rounds} interleaved rounds (fastest - slowest); "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for (name, tree), got in times.items():
        label = f"{name}" + (f" ({args.baseline})" if tree else "")
        print(f"  {label:60s} {statistics.median(got):.3f}   ({min(got):.3f} - {max(got):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
