"""The Prometheus config, recording and alert rules and the Grafana dashboard are valid and tested.

Runs promtool (Debian's `prometheus` package; CI installs it): `check config`, `check rules`
on both rule files and the `test rules` unit tests in infra/prometheus/tests/. A missing
promtool is a failure, never a skip: these files would otherwise go unchecked.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROM = ROOT / "infra" / "prometheus"
CONFIG = PROM / "prometheus.yml"
RULE_FILES = [PROM / "recording_rules.yml", PROM / "alert_rules.yml"]
RULE_TESTS = sorted((PROM / "tests").glob("*.yml"))
GRAFANA = ROOT / "infra" / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "craps-floor.json"

# level:metric:operations, e.g. table:craps_hold_ratio:increase1h
RECORDED_NAME = re.compile(r"\b[a-z_]+:[a-z0-9_]+:[a-z0-9_]+\b")


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is not on PATH: install Debian's `prometheus` package "
                    "(apt-get install prometheus), which CI does in .ci/run", pytrace=False)
    return path


def run_promtool(*args: str | Path) -> str:
    cmd = [promtool(), *map(str, args)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = f"$ {' '.join(cmd)}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, f"promtool exited {proc.returncode}\n{output}"
    return output


def test_config_is_valid():
    out = run_promtool("check", "config", CONFIG.relative_to(ROOT))
    assert "SUCCESS: 2 rule files found" in out, out


def test_rule_files_are_valid():
    run_promtool("check", "rules", *(p.relative_to(ROOT) for p in RULE_FILES))


def test_rule_unit_tests_pass():
    assert RULE_TESTS, "no promtool unit tests in infra/prometheus/tests/"
    out = run_promtool("test", "rules", *(p.relative_to(ROOT) for p in RULE_TESTS))
    assert "FAILED" not in out, out


def _alert_names() -> list[str]:
    return re.findall(r"^\s*- alert:\s*(\w+)", (PROM / "alert_rules.yml").read_text(), re.M)


def _recorded_names() -> set[str]:
    return set(re.findall(r"^\s*- record:\s*(\S+)", (PROM / "recording_rules.yml").read_text(), re.M))


def test_every_alert_has_firing_and_quiet_unit_tests():
    tests = "\n".join(p.read_text() for p in RULE_TESTS)
    names = _alert_names()
    assert set(names) >= {"CrapsHoldAnomaly", "CrapsTableSilent", "CrapsRejectionSpike",
                          "CrapsConsumerLag", "CrapsWorkerDown"}, names
    for name in names:
        quiet = re.search(rf"alertname:\s*{name}\s*\n\s*exp_alerts:\s*\[\]", tests)
        firing = re.search(rf"alertname:\s*{name}\s*\n\s*exp_alerts:\s*\n\s*-\s*exp_labels", tests)
        assert quiet, f"{name}: no promtool test expecting it not to fire"
        assert firing, f"{name}: no promtool test expecting it to fire"


def _dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            exprs.append(target["expr"])
    return exprs


def test_dashboard_is_valid_and_uses_defined_rules(tmp_path):
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "craps-floor"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "duplicate panel ids"
    exprs = _dashboard_exprs()
    assert exprs
    recorded = _recorded_names()
    used = {name for e in exprs for name in RECORDED_NAME.findall(e)}
    assert used <= recorded, f"dashboard queries undefined recording rules: {sorted(used - recorded)}"
    # Every query parses: check them as recording rules, with the template variables filled in.
    rules = ["groups:", "  - name: dashboard", "    rules:"]
    for i, expr in enumerate(exprs):
        filled = expr.replace("$table", ".*")
        rules += [f"      - record: dashboard:query_{i}:check", f"        expr: {json.dumps(filled)}"]
    path = tmp_path / "dashboard_queries.yml"
    path.write_text("\n".join(rules) + "\n")
    run_promtool("check", "rules", path)


def test_grafana_provisioning_points_at_prometheus_and_dashboards():
    ds = (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text()
    assert "url: http://prometheus:9090" in ds
    assert "uid: prometheus" in ds
    boards = (GRAFANA / "provisioning" / "dashboards" / "craps.yml").read_text()
    assert "path: /var/lib/grafana/dashboards" in boards
