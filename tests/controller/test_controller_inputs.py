"""The controller without a broker: the HTTP input answers only once an event is journaled, a burst
shares group commits, bad input is refused with its reason and takes no seq, the numbering goes on
across a restart, a full journal refuses with a clear error, and the line protocol on a Unix socket
answers in order. The sender points at a port where nothing listens: events are held at the table."""
from __future__ import annotations

import asyncio
import json
import socket

import aiohttp

from craps_streams.authenticity import TableSigner
from craps_streams.codec import decode_event
from craps_streams.controller.http import start_http
from craps_streams.controller.journal import Journal
from craps_streams.controller.lines import start_socket
from craps_streams.controller.metrics import ControllerMetrics
from craps_streams.controller.sender import Sender
from craps_streams.controller.service import Controller
from tests.authenticity.authenticity_keys import ring_for

TABLES = frozenset({"T001", "T002"})


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throw(table="T001", d1=2, d2=3):
    return {"type": "DiceThrown", "table_id": table, "die1": d1, "die2": d2}


async def started(journal, max_pages=None):
    metrics = ControllerMetrics()
    controller = Controller(TABLES, journal, TableSigner(ring_for(TABLES)), metrics, max_pages)
    sender = Sender(journal, TABLES, "nowhere.table-events", metrics, f"127.0.0.1:{dead_port()}",
                    request_timeout_ms=1000, backoff_max_s=0.5)
    controller.on_journaled = sender.wake
    tasks = [asyncio.create_task(controller.run()), asyncio.create_task(sender.run())]
    runner, port = await start_http(controller, sender, "127.0.0.1", 0)

    async def stop():
        await runner.cleanup()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return controller, sender, f"http://127.0.0.1:{port}", stop


async def post(session, url, body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with session.post(url + "/events", data=data) as r:
        return r.status, await r.json()


def test_a_burst_is_journaled_gapless_in_group_commits_and_refusals_take_no_seq(tmp_path):
    journal = tmp_path / "j.sqlite"

    async def scenario():
        controller, sender, url, stop = await started(journal)
        async with aiohttp.ClientSession() as s:
            answers = await asyncio.gather(*(post(s, url, throw("T001" if i % 3 else "T002")) for i in range(300)))
            bad = [await post(s, url, b) for b in (b"{not json", b"[" * 100_000 + b"]" * 100_000,
                                                   {**throw(), "seq": 9}, throw("T999"), throw(d1="six"))]
            after = await post(s, url, throw("T002"))
            await asyncio.sleep(1.2)  # the sender's gauges
            async with s.get(url + "/status") as r:
                status = await r.json()
            async with s.get(url + "/metrics") as r:
                metrics = await r.text()
        commits = controller.metrics.commit._sum, [b for b in controller.metrics.registry.collect()
                                                   if b.name == "craps_controller_journal_commit_seconds"]
        await stop()
        return answers, bad, after, status, metrics, commits

    answers, bad, after, status, metrics, commits = asyncio.run(scenario())
    assert all(code == 200 for code, _ in answers)
    for table in TABLES:
        assert sorted(a["seq"] for _, a in answers if a["table_id"] == table) == \
            list(range(1, sum(a["table_id"] == table for _, a in answers) + 1))
    assert [(code, a["refused"]) for code, a in bad] == [(422, "malformed"), (422, "too_long"),
                                                          (422, "controller_field"), (422, "unknown_table"),
                                                          (422, "malformed")]
    assert after == (200, {"table_id": "T002", "seq": 101, "ts": after[1]["ts"]})
    n_commits = next(s.value for s in commits[1][0].samples if s.name.endswith("_count"))
    assert n_commits < 300 / 3, f"{n_commits} commits for a burst of 300: no group commit"
    assert status["tables"]["T001"]["held"] == 200 and status["tables"]["T002"]["held"] == 101
    assert status["broker_connected"] is False
    assert 'craps_controller_held_events{table="T001"} 200.0' in metrics
    assert 'craps_controller_refusals_total{reason="controller_field"} 1.0' in metrics
    j = Journal(journal)
    rows = j.events("T001")
    assert [r[0] for r in rows] == list(range(1, 201)) and all(r[3] is None for r in rows)
    ts = [decode_event(r[2])["ts"] for r in rows]
    assert ts == sorted(ts)


def test_the_numbering_goes_on_after_a_restart(tmp_path):
    journal = tmp_path / "j.sqlite"

    async def run_once(n):
        _, _, url, stop = await started(journal)
        async with aiohttp.ClientSession() as s:
            got = [await post(s, url, throw()) for _ in range(n)]
        await stop()
        return got

    first = asyncio.run(run_once(3))
    second = asyncio.run(run_once(2))
    assert [a["seq"] for _, a in first + second] == [1, 2, 3, 4, 5]
    assert second[0][1]["ts"] >= first[-1][1]["ts"]


def test_a_full_journal_refuses_new_events_and_keeps_the_acknowledged_ones(tmp_path):
    journal = tmp_path / "j.sqlite"

    async def scenario():
        _, _, url, stop = await started(journal, max_pages=16)
        acked, refusal = [], None
        async with aiohttp.ClientSession() as s:
            for _ in range(3000):
                code, a = await post(s, url, throw())
                if code != 200:
                    refusal = (code, a)
                    break
                acked.append(a["seq"])
        await stop()
        return acked, refusal

    acked, refusal = asyncio.run(scenario())
    assert refusal is not None and refusal[0] == 507, refusal
    assert refusal[1]["refused"] == "journal_full" and "full" in refusal[1]["message"]
    assert acked == list(range(1, len(acked) + 1)) and acked
    assert [r[0] for r in Journal(journal).events("T001")] == acked


def test_the_line_protocol_answers_each_line_in_order(tmp_path):
    journal, path = tmp_path / "j.sqlite", tmp_path / "table.sock"

    async def scenario():
        controller, _, _, stop = await started(journal)
        server = await start_socket(controller, path)
        reader, writer = await asyncio.open_unix_connection(str(path))
        lines = [json.dumps(throw()), "torn {", json.dumps(throw("T002")), "x" * 70_000, json.dumps(throw())]
        writer.write(("\n".join(lines) + "\n").encode())
        await writer.drain()
        got = [json.loads(await reader.readline()) for _ in lines]
        writer.close()
        await server.close()
        await stop()
        return got

    got = asyncio.run(scenario())
    assert [g.get("seq") or g["refused"] for g in got] == [1, "malformed", 1, "too_long", 2]
    assert (path.stat().st_mode & 0o777) == 0o600


def test_a_stopping_controller_ends_a_connection_its_driver_holds_open(tmp_path):
    # A controller's stop (SIGTERM) closes its socket input: a dealer's driver still connected,
    # with a line entered and answered, must not hold the stop (asyncio's server waits for its
    # connections to end).
    journal, path = tmp_path / "j.sqlite", tmp_path / "table.sock"

    async def scenario():
        controller, _, _, stop = await started(journal)
        server = await start_socket(controller, path)
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write((json.dumps(throw()) + "\n").encode())
        answered = json.loads(await reader.readline())
        await asyncio.wait_for(server.close(), 5)
        ended = await asyncio.wait_for(reader.read(), 5)
        await stop()
        return answered, ended

    answered, ended = asyncio.run(scenario())
    assert answered["seq"] == 1
    assert ended == b""


def test_a_stop_that_lands_as_new_events_wake_the_sender_still_stops_it(tmp_path):
    # The wake and the stop in one turn of the loop: the idle sender's wait ends both ways at
    # once, and the stop must win (a wait that swallowed it left a controller running forever).
    journal = tmp_path / "j.sqlite"
    Journal(journal).close()

    async def scenario():
        sender = Sender(journal, TABLES, "nowhere.table-events", ControllerMetrics(), f"127.0.0.1:{dead_port()}",
                        request_timeout_ms=1000, backoff_max_s=0.5)
        task = asyncio.create_task(sender.run())
        await asyncio.sleep(0.2)  # idle: nothing journaled
        sender.wake()
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=3)
        return task in done and task.cancelled()

    assert asyncio.run(scenario())


def test_a_retried_request_id_gets_its_first_answer_and_no_second_event(tmp_path):
    journal = tmp_path / "j.sqlite"

    async def scenario():
        _, _, url, stop = await started(journal)
        async with aiohttp.ClientSession() as s:
            same_group = await asyncio.gather(*(post(s, url, {**throw(), "request_id": "dealer-1:77"}) for _ in range(5)))
            other = await post(s, url, {**throw(), "request_id": "dealer-1:78"})
            hostile = await post(s, url, {**throw(), "request_id": "x\n<script>"})
        await stop()
        _, _, url, stop = await started(journal)  # a restart: the journal still knows the request
        async with aiohttp.ClientSession() as s:
            retried = await post(s, url, {**throw(), "request_id": "dealer-1:77"})
        await stop()
        return same_group, other, hostile, retried

    same_group, other, hostile, retried = asyncio.run(scenario())
    assert {(c, a["seq"], a["ts"]) for c, a in same_group} == {(200, 1, same_group[0][1]["ts"])}
    assert other[1]["seq"] == 2
    assert hostile == (422, {"refused": "invalid_id", "message": hostile[1]["message"]})
    assert retried == same_group[0]
    assert [r[0] for r in Journal(journal).events("T001")] == [1, 2]


def test_resend_marks_a_range_and_names_what_the_journal_no_longer_holds(tmp_path):
    journal = tmp_path / "j.sqlite"

    async def scenario():
        _, _, url, stop = await started(journal)
        async with aiohttp.ClientSession() as s:
            for _ in range(4):
                await post(s, url, throw())
            asks = [{"table_id": "T001", "from_seq": 2, "to_seq": 6}, {"table_id": "T001", "from_seq": 1, "to_seq": 10**9},
                    {"table_id": "T009", "from_seq": 1, "to_seq": 2}, {"table_id": "T001"}]
            got = []
            for ask in asks:
                async with s.post(url + "/resend", data=json.dumps(ask).encode()) as r:
                    got.append((r.status, await r.json()))
        await stop()
        return got

    ok, too_long, unknown, malformed = asyncio.run(scenario())
    assert ok == (200, {"table_id": "T001", "marked": 3, "missing": [5, 6]})
    assert too_long[0] == 400 and "in parts" in too_long[1]["message"]
    assert unknown[0] == 422 and unknown[1]["refused"] == "unknown_table"
    assert malformed[0] == 400
