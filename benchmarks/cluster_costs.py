"""What replication costs: the settling pipeline's throughput and its settlement latency p50/p99
(benchmarks/pipeline_bench.py, one short run each) on a single node and on a three-node cluster
(every topic replicated three times, acks=all, min.insync.replicas=2), one after the other on the
same machine, each on brokers of its own (infra/kafka/kafka.sh, stopped at the end), with ratios.

    python benchmarks/cluster_costs.py [--tables 20 --hours 3 --latency-seconds 45]

One run of each: on a shared 2-core machine a single run's figures move by 10-20 % from one run to
the next, so read the ratios as the size of the cost, not its third digit.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KAFKA_SH = REPO / "infra" / "kafka" / "kafka.sh"


def bench(env: dict, args) -> tuple[dict, str]:
    cmd = [sys.executable, str(REPO / "benchmarks" / "pipeline_bench.py"), "--no-faust", "--rounds", "1",
           "--tables", str(args.tables), "--hours", str(args.hours), "--latency-seconds", str(args.latency_seconds),
           "--latency-tables", str(args.latency_tables)]
    r = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=1800)
    out = r.stdout
    if r.returncode != 0:
        raise RuntimeError(f"pipeline_bench failed ({r.returncode}):\n{out[-2000:]}\n{r.stderr[-3000:]}")
    figures = {}
    m = re.search(r"settling pipeline\s+([\d,]+)", out)
    if m:
        figures["events/s"] = float(m.group(1).replace(",", ""))
    m = re.search(r"p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms", out)
    if m:
        figures.update({"p50 ms": float(m.group(1)), "p99 ms": float(m.group(2)), "max ms": float(m.group(3))})
    return figures, out


def on_brokers(nodes: int, tmp: Path, args) -> tuple[dict, str]:
    env = {**os.environ, "KAFKA_NODES": str(nodes)}
    if nodes == 1:
        env.update({"KAFKA_DATA_DIR": str(tmp / "single"), "KAFKA_PORT": str(args.port),
                    "KAFKA_CONTROLLER_PORT": str(args.port + 1)})
        bootstrap = f"127.0.0.1:{args.port}"
        gc_dir = tmp / "single"
    else:
        env.update({"KAFKA_CLUSTER_DIR": str(tmp / "cluster"), "KAFKA_PORT": str(args.port + 10),
                    "KAFKA_CONTROLLER_PORT": str(args.port + 20)})
        bootstrap = ",".join(f"127.0.0.1:{args.port + 10 + i}" for i in range(nodes))
        gc_dir = tmp / "cluster" / "node-1"
    subprocess.run(["bash", str(KAFKA_SH), "up"], env=env, check=True, timeout=300)
    try:
        # The bench's own clients and its broker-pause summary (node 1's collector log on a cluster).
        run_env = {**env, "CRAPS_KAFKA_BOOTSTRAP": bootstrap, "KAFKA_DATA_DIR": str(gc_dir)}
        run_env.pop("CRAPS_REPLICATION_FACTOR", None)  # the topics take the cluster's size
        return bench(run_env, args)
    finally:
        subprocess.run(["bash", str(KAFKA_SH), "stop"], env=env, timeout=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tables", type=int, default=20)
    p.add_argument("--hours", type=float, default=3)
    p.add_argument("--latency-seconds", type=float, default=45)
    p.add_argument("--latency-tables", type=int, default=200)
    p.add_argument("--port", type=int, default=19300, help="first of the loopback ports used (default 19300)")
    args = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="craps-cluster-costs-") as tmp:
        for nodes in (1, 3):
            figures, out = on_brokers(nodes, Path(tmp), args)
            results[nodes] = figures
            print(f"---- {nodes} node(s) ----\n{out}", flush=True)
    one, three = results[1], results[3]
    print(f"{'':<12}{'1 node':>12}{'3 nodes':>12}{'3 / 1':>10}")
    for key in ("events/s", "p50 ms", "p99 ms", "max ms"):
        if key in one and key in three:
            ratio = f"{three[key] / one[key]:>10.2f}" if one[key] else f"{'-':>10}"
            print(f"{key:<12}{one[key]:>12,.1f}{three[key]:>12,.1f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
