"""What TLS + SASL/SCRAM-SHA-512 + ACLs cost the pipeline: benchmarks/pipeline_bench.py on a
plaintext broker and on the secured one, alternating (P S, S P, P S, ...) so drift in the shared
machine's load falls on both sides, medians of each side, and the ratios.

    KAFKA_SECURITY=plaintext KAFKA_PORT=9094 KAFKA_CONTROLLER_PORT=9095 \\
      KAFKA_DATA_DIR=$PWD/.kafka-data-plain infra/kafka/kafka.sh up     # a plaintext broker beside it
    python benchmarks/security_cost.py --secured 127.0.0.1:9092 --plaintext 127.0.0.1:9094 [--pairs 3]
      [-- pipeline_bench.py options, default: --no-faust --latency-seconds 40]

The plaintext side's clients get a client config with `security.protocol=PLAINTEXT` through
CRAPS_KAFKA_CONFIG (craps_streams/kafka/security.py); the secured side's are the roles' own.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURES = {
    "pipeline events/s": re.compile(r"^settling pipeline\s+([\d,]+)", re.M),
    "bare pass-through events/s": re.compile(r"^bare pass-through\s+([\d,]+)", re.M),
    "latency p50 ms": re.compile(r"p50 ([\d.]+) ms"),
    "latency p99 ms": re.compile(r"p99 ([\d.]+) ms"),
}


def run_bench(bootstrap: str, plaintext_config: str | None, bench_args: list[str]) -> dict[str, float]:
    env = {**os.environ, "CRAPS_KAFKA_BOOTSTRAP": bootstrap,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("CRAPS_KAFKA_CONFIG", None)
    if plaintext_config:
        env["CRAPS_KAFKA_CONFIG"] = plaintext_config
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "pipeline_bench.py"), *bench_args],
                       env=env, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"pipeline_bench.py on {bootstrap} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    figures = {}
    for name, pattern in FIGURES.items():
        m = pattern.search(r.stdout)
        if m:
            figures[name] = float(m.group(1).replace(",", ""))
    return figures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--secured", required=True, help="bootstrap of the secured broker")
    p.add_argument("--plaintext", required=True, help="bootstrap of the plaintext broker")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("bench_args", nargs="*", default=["--no-faust", "--latency-seconds", "40"])
    args = p.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
        f.write("# benchmarks only: the plaintext broker's clients\nsecurity.protocol=PLAINTEXT\n")
        plaintext_config = f.name
    runs: dict[str, list[dict[str, float]]] = {"plaintext": [], "secured": []}
    try:
        for i in range(args.pairs):
            order = ("plaintext", "secured") if i % 2 == 0 else ("secured", "plaintext")
            for side in order:
                figures = run_bench(args.plaintext if side == "plaintext" else args.secured,
                                    plaintext_config if side == "plaintext" else None, args.bench_args)
                runs[side].append(figures)
                print(f"pair {i + 1} {side:9}: " + ", ".join(f"{k} {v:,.1f}" for k, v in figures.items()),
                      file=sys.stderr, flush=True)
    finally:
        os.unlink(plaintext_config)
    print(f"{'figure (median of ' + str(args.pairs) + ')':<32}{'plaintext':>12}{'TLS+SCRAM':>12}{'secured/plain':>15}")
    for name in FIGURES:
        plain = [r[name] for r in runs["plaintext"] if name in r]
        secured = [r[name] for r in runs["secured"] if name in r]
        if not plain or not secured:
            continue
        a, b = statistics.median(plain), statistics.median(secured)
        print(f"{name:<32}{a:>12,.1f}{b:>12,.1f}{b / a:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
