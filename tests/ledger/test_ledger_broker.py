"""The ledger on the real broker: a floor settles while the ledger is killed -9 and restarted;
afterwards the ledger equals the settlements topic wager by wager (0 lost, 0 extra, 0 twice) and
its money per table equals the replay's to the cent; the gaming day's report from the ledger
equals the report from the floor's history, line by line."""
from __future__ import annotations

import collections
import dataclasses
import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import date

import pytest
from sqlalchemy import text

from craps_streams.kafka.security import (
    SecurityConfigError,
    config_path,
    current_broker,
    security_settings,
    use_broker,
)
from craps_streams.ledger.report import report_from_ledger
from craps_streams.ledger.store import Ledger, open_engine
from craps_streams.report import GamingCalendar, Period, ReportSettings, make_report

from tests.conftest import ROOT, wait_for
from tests.pipeline.test_pipeline import committed, replayed, write_floor

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="session")
def ledger_login(kafka):
    """The ledger role's client config and SCRAM login. `kafka.sh up` makes both; a broker started
    before the role existed gets them here, in a private copy of the secrets directory (the
    developer's own is left as it is)."""
    try:
        security_settings("ledger")
        yield
        return
    except SecurityConfigError:
        pass
    from craps_streams.kafka.access import admin_client, upsert_logins

    private = tempfile.mkdtemp(prefix="craps-test-secrets-")
    shutil.copytree(current_broker().secrets_dir / "clients", f"{private}/clients")
    admin = security_settings("admin")
    cafile = (current_broker().secrets_dir / "ca.crt").resolve()
    path = f"{private}/clients/ledger.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="ledger" password="{secrets.token_hex(20)}";\n'
                f"ssl.truststore.type=PEM\nssl.truststore.location={cafile}\n")
    broker = current_broker()
    before = os.environ.get("CRAPS_SECRETS_DIR")
    os.environ["CRAPS_SECRETS_DIR"] = private  # the ledger subprocesses' settings
    use_broker(dataclasses.replace(broker, secrets_dir=pathlib.Path(private)))  # this process's clients
    assert admin["sasl_plain_username"] and config_path("ledger").exists()
    client = admin_client(kafka)
    try:
        upsert_logins(client, ["ledger"])
    finally:
        client.close()
    yield
    use_broker(broker)
    if before is None:
        os.environ.pop("CRAPS_SECRETS_DIR", None)
    else:
        os.environ["CRAPS_SECRETS_DIR"] = before
    shutil.rmtree(private, ignore_errors=True)


@pytest.fixture
def floor(ledger_login, pipeline):
    return pipeline


def start_ledger(pipeline, db: str, name: str) -> subprocess.Popen:
    log = open(pipeline.tmp / f"ledger-{name}.log", "ab")
    return subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "ledger", "--db", db, "--metrics-port", "0",
                             "--batch", "40", "--loglevel", "info"],
                            env={**pipeline.env, "CRAPS_SECRETS_DIR": os.environ.get("CRAPS_SECRETS_DIR", "")},
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def openings(db: str) -> int:
    engine = open_engine(db)
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT count(*) FROM table_openings")).scalar()
    except Exception:  # noqa: BLE001 - not migrated yet: nothing written
        return 0
    finally:
        engine.dispose()


def alive(proc: subprocess.Popen) -> bool:
    assert proc.poll() is None, f"the ledger stopped with status {proc.returncode}"
    return True


def ledger_ids(db: str) -> list[str]:
    engine = open_engine(db)
    try:
        with engine.connect() as conn:
            return [r[0] for r in conn.execute(text("SELECT id FROM settlements"))]
    except Exception:  # noqa: BLE001 - not migrated yet: nothing written
        return []
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """(URL, restart): the ledger's database, and how to restart it (PostgreSQL: pg_ctl restart,
    fast shutdown; SQLite is a file in the ledger's process: nothing to restart)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}", None
    pg = request.getfixturevalue("postgres")
    name = f"ledger_b{os.getpid()}_{int(time.time() * 1000) % 10**8}"
    pg.create_ledger_database(name)
    return pg.url("ledger", name), lambda: pg.ctl("restart")


def test_the_ledger_killed_three_times_equals_the_settlements_topic(floor, database, tmp_path):
    """kill -9 in each of the first three parts of the floor (the third with the ledger's batches
    small, so mid-batch is likely); PostgreSQL also restarted under a running ledger."""
    lines = write_floor(tmp_path / "floor.jsonl", tables=4, hours=1.0, seed=31, bad_rate=0.02)
    outputs, tally = replayed(lines)
    expected = {o.id: o for o in outputs if type(o).__name__ == "WagerSettled"}
    db, restart_database = database

    floor.start_worker()
    ledger = start_ledger(floor, db, "0")
    chunk = len(lines) // 4 + 1
    for i in range(4):  # the floor in four parts; the ledger killed -9 in each of the first three
        part_lines = lines[i * chunk:(i + 1) * chunk]
        # With the database restarted in part 1, its second half is produced after the restart, so
        # the rows awaited below are rows the ledger wrote to the restarted database.
        halves = [part_lines[:len(part_lines) // 2], part_lines[len(part_lines) // 2:]] \
            if i == 1 and restart_database else [part_lines]
        seen = len(ledger_ids(db))
        for h, half in enumerate(halves):
            part = tmp_path / f"part{i}-{h}.jsonl"
            part.write_text("\n".join(half) + "\n")
            floor.run("produce", str(part), "--quiet")
            if h == 0 and len(halves) == 2:
                wait_for(lambda: alive(ledger) and len(ledger_ids(db)) > seen, 60, "rows before the restart",
                         interval=0.1)
                restart_database()
                seen = len(ledger_ids(db))
        if i < 3:
            wait_for(lambda: alive(ledger) and len(ledger_ids(db)) > seen, 120, f"rows of part {i} written", interval=0.1)
            ledger.send_signal(signal.SIGKILL)
            ledger.wait(10)
            ledger = start_ledger(floor, db, str(i + 1))
    try:
        wait_for(lambda: alive(ledger) and len(ledger_ids(db)) >= len(expected), 120,
                 f"{len(expected)} settlements in the ledger")
        wait_for(lambda: alive(ledger) and openings(db) >= 4, 60, "the four tables' openings in the ledger")
        time.sleep(1.0)  # anything written twice would show up after the count is reached
    finally:
        floor.stop_worker(ledger)

    topic = {r["id"]: r for r in committed(floor, "settlements")}
    assert set(topic) == set(expected)
    ids = ledger_ids(db)
    assert len(ids) == len(set(ids)), "a settlement twice in the ledger"
    assert set(ids) == set(topic), f"lost {len(set(topic) - set(ids))}, extra {len(set(ids) - set(topic))}"
    ledger_db = Ledger(open_engine(db))
    with ledger_db.engine.connect() as conn:
        rows = {r.id: r for r in conn.execute(text("SELECT * FROM settlements"))}
        money = {r.table_id: (r.handle, r.house) for r in conn.execute(text(
            "SELECT table_id, sum(handle_cents) AS handle, sum(house_win_cents) AS house FROM report_lines "
            "GROUP BY table_id"))}
        rejected = conn.execute(text("SELECT count(*) FROM rejections")).scalar()
    for wager_id, record in topic.items():  # wager by wager, field by field
        row = rows[wager_id]
        assert {k: getattr(row, k) for k in ("wager_id", "table_id", "position", "wager", "outcome", "stake_cents",
                                             "won_cents", "paytable", "detail", "seq", "ts", "placed_seq")} == \
            {k: record[k] for k in ("wager_id", "table_id", "position", "wager", "outcome", "stake_cents",
                                    "won_cents", "paytable", "detail", "seq", "ts", "placed_seq")}
    replay_money = collections.defaultdict(lambda: [0, 0])
    for s in expected.values():
        replay_money[s.table_id][0] += s.stake_cents
        replay_money[s.table_id][1] += s.stake_cents if s.outcome == "lose" else -s.won_cents
    assert money == {t: tuple(v) for t, v in replay_money.items()}
    assert rejected == tally.rejected
    # the gaming day's report from the ledger is the report from the floor's history, line by line
    settings = ReportSettings(GamingCalendar(), Period(date(2025, 12, 31), date(2025, 12, 31)))
    want = make_report(settings, str(tmp_path / "floor.jsonl"))
    got = report_from_ledger(ledger_db.engine, settings, {})
    for grain in ("tables", "kinds", "shifts", "floor"):
        assert got[grain] == want[grain], grain
    assert len(got["kinds"]) >= 4


def test_the_ledger_login_reads_the_outputs_and_writes_nothing(ledger_login, pipeline):
    from tests.security.test_broker_attacks import Floor, a_dice_throw, refused_by_acl

    floor = Floor(pipeline)
    try:
        floor.produce(security_settings("worker"), "settlements", b"T001", b"a settlement")
        before = floor.snapshot()
        key, throw = a_dice_throw()
        for topic, value in (("settlements", b"forged"), ("table-events", throw), ("rejections", b"forged")):
            with refused_by_acl():
                floor.produce(security_settings("ledger"), topic, key, value)
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import TopicAuthorizationFailedError

        c = KafkaConsumer(bootstrap_servers=pipeline.bootstrap, group_id=None, request_timeout_ms=5000,
                          **security_settings("ledger"))
        try:
            with pytest.raises(TopicAuthorizationFailedError):  # the layout markers are not finance's
                c.end_offsets([TopicPartition(floor.topic("layout-markers"), 0)])
            tps = [TopicPartition(floor.topic("settlements"), p) for p in range(8)]
            assert sum(c.end_offsets(tps).values()) == 1  # the outputs are
            # and the table events, for the tables' openings (read, never written: refused above)
            c.end_offsets([TopicPartition(floor.topic("table-events"), 0)])
        finally:
            c.close()
        assert floor.snapshot() == before
    finally:
        floor.close()
