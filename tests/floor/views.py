"""Floor-view processes (`craps-streams floor`) on a test pipeline's topics, and reading their data."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

from tests.conftest import ROOT, free_port


def start_view(pipeline, name: str, port: int | None = None, extra_env: dict | None = None) -> subprocess.Popen:
    """A view instance named `name` (its own Faust app id, so it reads every partition)."""
    log_path = pipeline.tmp / f"view-{name}.log"
    port = port or free_port()
    env = {**pipeline.env, "CRAPS_FLOOR_DATADIR": str(pipeline.tmp / f"view-data-{name}"), **(extra_env or {})}
    command = ["floor", "--instance", name, "--port", str(port), "--loglevel", "info"]  # the flags over the environment
    proc = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", *command], env=env, cwd=ROOT,
                            stdout=open(log_path, "ab"), stderr=subprocess.STDOUT)
    proc.web_port = port  # type: ignore[attr-defined]
    proc.log_path = log_path  # type: ignore[attr-defined]
    pipeline.workers.append(proc)  # stopped with the pipeline's workers
    return proc


def get_json(view, path: str, timeout: float = 10):
    assert view.poll() is None, f"the view died: see {view.log_path}"
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{view.web_port}{path}", timeout=timeout) as r:
            return json.loads(r.read())
    except OSError:
        return None


def floor_of(view) -> dict | None:
    return get_json(view, "/api/floor")


def wait_view(view, done, timeout: float, what: str) -> dict:
    """/api/floor once `done(floor)` holds and the floor is quiet (the same twice, 0.5 s apart)."""
    deadline = time.monotonic() + timeout
    previous = last = None
    while time.monotonic() < deadline:
        last = floor_of(view)
        if last and done(last):
            strip = {k: v for k, v in last.items() if k != "sent_ms"}
            if strip == previous:
                return last
            previous = strip
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for the view to show {what}; it shows "
                         f"{[(t['table_id'], t.get('last_seq'), t.get('settled')) for t in (last or {}).get('tables', [])]}")


def last_seqs(floor: dict) -> dict[str, int]:
    return {t["table_id"]: t.get("last_seq") for t in floor["tables"]}


def what_it_shows(view, want: dict[str, dict]) -> str:
    """For a failure message: the tables whose (last_seq, settled) differ from `want`, and the tail
    of the view's log (CI prints only the message)."""
    floor = floor_of(view) if view.poll() is None else None
    got = {t["table_id"]: (t.get("last_seq"), t["settled"]) for t in (floor or {}).get("tables", [])}
    differ = {t: (got.get(t), (v["last_seq"], v["settled"])) for t, v in want.items()
              if got.get(t) != (v["last_seq"], v["settled"])}
    tail = view.log_path.read_text(errors="replace").splitlines()[-40:]
    return (f"exit code {view.poll()}; tables (shown, wanted): {differ}\n--- {view.log_path.name}, last lines:\n"
            + "\n".join(tail))
