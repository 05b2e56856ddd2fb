"""The fault scenarios, each on the real broker, sized by the caller: tests/faults runs
them small enough for CI, benchmarks/faults.py bigger. Each returns a harness.Verdict."""
from __future__ import annotations

import dataclasses
import random
import signal
import statistics
import subprocess
import sys
import time

from craps_streams.codec import decode_event, decode_output, encode_output
from craps_streams.replay.engine import Replay
from craps_streams.rules import WagerSettled, output_to_record
from tests.conftest import ROOT
from tests.faults.harness import (
    FaultRun,
    Feeder,
    Floor,
    GroupWatch,
    PrivateBroker,
    TxnWatch,
    Verdict,
    aborted_records,
    canonical,
    check,
    differing_tables,
    expected_of,
    http_json,
    kill,
    last_states,
    log,
    log_text,
    make_floor,
    money_of,
    owned_partitions,
    owner_of,
    read_all,
    rss_kb,
    settle_everything,
    state_rebuild_seconds,
    stored_hashes,
    wait_until,
)


@dataclasses.dataclass
class Size:
    tables: int = 24
    hours: float = 1.0
    rate: float = 500.0  # events/s fed
    seed: int = 61
    kills: int = 3  # worker crash: at least this many kill -9s ...
    max_kills: int = 6  # ... and more (up to this) until one lands inside a transaction


def _fmt(seconds: list[float]) -> str:
    if len(seconds) == 1:
        return f"{seconds[0]:.1f} s"
    return f"max {max(seconds):.1f} s (" + ", ".join(f"{s:.1f}" for s in seconds) + ")"


def _start(run: FaultRun, size: Size, workers: list[str]):
    floor = make_floor(run, size.tables, size.hours, size.seed)
    collector = run.collector("settlements")
    started = [run.start_worker(name) for name in workers]
    return floor, collector, started


def _aborted(run: FaultRun) -> int:
    return aborted_records(run.bootstrap, run.topic("settlements"))


# ------------------------------------------------------------------ 1. worker crash


def _freeze_in_transaction(txn: TxnWatch, workers: list, seconds: float = 3.0):
    """Within `seconds`, SIGSTOP the worker owning a settlements partition with a transaction open
    (records written, not committed) and return it, stopped, if the transaction is still open 0.2 s
    later (not committing: the worker is frozen). None if no such moment came."""
    deadline = time.monotonic() + seconds
    owners, refreshed = {}, 0.0
    while time.monotonic() < deadline:
        if time.monotonic() - refreshed > 0.5:
            owners = {p: owner_of(p, workers) for p in range(8)}
            refreshed = time.monotonic()
        for partition in txn.open_partitions():
            worker = owners.get(partition)
            if worker is None or worker.poll() is not None:
                continue
            worker.send_signal(signal.SIGSTOP)
            time.sleep(0.2)
            if partition in txn.open_partitions():
                return worker
            worker.send_signal(signal.SIGCONT)  # it had committed already: try again
            break
    return None


def worker_crash(run: FaultRun, size: Size) -> Verdict:
    """Two workers share the table events; kill -9 one at random moments of a busy stream, restart it
    each time. A kill aims at a transaction in flight when it can: the owner of a settlements
    partition whose high watermark is past its last stable offset (records written, not committed)
    is frozen (SIGSTOP) and, if that transaction is still open, killed. At least `kills` kills, more
    (up to `max_kills`) until settlement records of an aborted transaction are on the topic: proof
    that a kill landed between producing outputs and committing them."""
    floor, collector, (a, b) = _start(run, size, ["a0", "b0"])
    workers = {"a": a, "b": b}
    watch = GroupWatch(run)
    txn = TxnWatch(run.bootstrap, run.topic("settlements"))
    feeder = Feeder(run, floor.lines, size.rate).start()
    rng = random.Random(size.seed)
    recoveries, kills, in_flight, notes = [], 0, 0, []
    try:
        wait_until(lambda: owned_partitions(a) and owned_partitions(b), 60, "both workers to own partitions")
        while kills < size.max_kills:
            time.sleep(rng.uniform(0.5, 2.5))  # a random moment of the busy stream ...
            if feeder.done:
                notes.append(f"the feed ended after {kills} kills")
                break
            victim = _freeze_in_transaction(txn, list(workers.values()))  # ... inside a transaction
            aimed = victim is not None
            if victim is None:
                victim = workers[rng.choice("ab")]
            t0 = time.monotonic()
            kill(victim, signal.SIGKILL)
            target = watch.wait_ends()
            kills += 1
            in_flight += aimed
            name = next(n for n, w in workers.items() if w is victim)
            workers[name] = run.start_worker(f"{name}{kills}")
            recoveries.append(watch.recovery(t0, target))
            aborted = _aborted(run)
            log(f"crash: kill -9 #{kills} of worker {name} ({'inside a transaction' if aimed else 'random'}): "
                f"caught up in {recoveries[-1]:.1f} s; aborted settlement records so far: {aborted}")
            if kills >= size.kills and aborted > 0:
                break
        feeder.wait()
        settle_everything(run, floor, collector, watch)
    finally:
        feeder.kill()
        watch.close()
        txn.close()
    notes.append(f"{kills} kill -9s, {in_flight} of them inside an open transaction")
    v = check(run, floor, collector, "worker crash (kill -9)", _fmt(recoveries), notes)
    v.notes.append(f"{v.aborted_outputs} settlement records of aborted transactions on the topic")
    return v


# ------------------------------------------------------------------ 2. broker restart


def broker_restart(tmp, size: Size) -> Verdict:
    """A private broker is stopped and started again mid-stream; the producer and both workers
    must carry on by themselves."""
    with PrivateBroker(tmp) as broker:
        run = FaultRun(tmp, broker.bootstrap)
        try:
            run.create_topics()
            floor, collector, (a, b) = _start(run, size, ["a", "b"])
            watch = GroupWatch(run)
            feeder = Feeder(run, floor.lines, size.rate).start()
            try:
                wait_until(lambda: owned_partitions(a) and owned_partitions(b), 60, "both workers to own partitions")
                time.sleep(random.Random(size.seed).uniform(2, 5))
                t_stop = time.monotonic()
                broker.sh("stop")
                time.sleep(2)
                broker.sh("start")
                broker.sh("wait")
                t_back, fed = time.monotonic(), feeder.sent
                log(f"broker restart: away {t_back - t_stop:.1f} s, {fed} events fed by then")
                recovery = watch.recovery_count(t_back, fed, timeout=240)
                log(f"broker restart: all {fed} settled {recovery:.1f} s after the broker was back")
                feeder.wait()
                settle_everything(run, floor, collector, watch)
            finally:
                feeder.kill()
                watch.close()
            dead = [w.log_path.name for w in (a, b) if w.poll() is not None]
            notes = [f"broker away {t_back - t_stop:.1f} s"] + ([f"workers exited: {dead}"] if dead else [])
            return check(run, floor, collector, "broker restart", f"{recovery:.1f} s after the broker is back",
                         notes + [f"recovery: until every event fed before the broker was back ({fed}) settled"])
        finally:
            run.close()


# ------------------------------------------------------------------ 3. rebalance


def rebalance(run: FaultRun, size: Size) -> Verdict:
    """One worker, a second one added while the floor is live, then the first one removed (SIGTERM).
    Recovery time: from the membership change until every event in the topic at that moment is
    settled and committed, on every partition (the moved ones included)."""
    floor, collector, (a,) = _start(run, size, ["a"])
    watch = GroupWatch(run)
    feeder = Feeder(run, floor.lines, size.rate).start()
    try:
        wait_until(lambda: len(owned_partitions(a)) == 8, 60, "worker a to own all 8 partitions")
        time.sleep(3)
        target, t_add = watch.wait_ends(), time.monotonic()
        b = run.start_worker("b")
        wait_until(lambda: owned_partitions(b), 60, "worker b to own partitions")
        added = watch.recovery(t_add, target)
        wait_until(lambda: len(owned_partitions(b)) >= 4, 30, "worker b to own its share")
        moved_to_b = sorted(owned_partitions(b))
        log(f"rebalance: b added, owns {moved_to_b}; caught up in {added:.1f} s")
        time.sleep(3)
        mark = len(log_text(b))
        target, t_remove = watch.wait_ends(), time.monotonic()
        kill(a, signal.SIGTERM)
        removed = watch.recovery(t_remove, target)
        wait_until(lambda: len(owned_partitions(b, mark)) == 8, 60, "worker b to own all 8 partitions")
        log(f"rebalance: a removed; caught up in {removed:.1f} s")
        feeder.wait()
        settle_everything(run, floor, collector, watch)
    finally:
        feeder.kill()
        watch.close()
    rebuilds = state_rebuild_seconds(a) + state_rebuild_seconds(b)
    return check(run, floor, collector, "rebalance (add, remove)", f"add {added:.1f} s, remove {removed:.1f} s",
                 [f"partitions {moved_to_b} moved to b, then all 8",
                  f"{len(rebuilds)} takeovers, state rebuilt from the changelog in at most {max(rebuilds):.2f} s"])


# ------------------------------------------------------------------ 4. fencing


def fencing(run: FaultRun, size: Size, attempts: int = 3) -> Verdict:
    """SIGSTOP a busy worker (inside a transaction when one is open) past its session and
    transaction timeouts; the other takes its partitions over; SIGCONT: the zombie must be fenced
    (ProducerFenced: its log), pay nothing twice, stay running and take its share of the partitions
    back at the rebalance that follows. A zombie frozen between two transactions may rejoin the
    group without being fenced: then it is stopped and another try made."""
    floor, collector, (a, b) = _start(run, size, ["a", "b"])
    watch = GroupWatch(run)
    txn = TxnWatch(run.bootstrap, run.topic("settlements"))
    feeder = Feeder(run, floor.lines, size.rate).start()
    pause = max(run.session_s, run.transaction_s) + 2
    recoveries, notes, fenced, rejoined = [], [], False, False
    rng = random.Random(size.seed)
    try:
        wait_until(lambda: owned_partitions(a) and owned_partitions(b), 60, "both workers to own partitions")
        for attempt in range(attempts):
            time.sleep(rng.uniform(1, 3))
            zombie, mark, zombie_mark = a, len(log_text(b)), len(log_text(a))
            target = watch.wait_ends()
            # A wider window than the crash scenario's: on a loaded machine the
            # worker's transactions are short beside the gaps between them, and 3 s can find none
            # open in three tries (frozen between transactions, never fenced).
            in_txn = _freeze_in_transaction(txn, [zombie], seconds=10.0) is not None
            if not in_txn:
                zombie.send_signal(signal.SIGSTOP)
            t0 = time.monotonic()
            wait_until(lambda: len(owned_partitions(b, mark)) == 8, 60,  # noqa: B023
                       "worker b to take every partition over")
            recoveries.append(watch.recovery(t0, target))
            time.sleep(max(0.0, pause - (time.monotonic() - t0)))
            zombie.send_signal(signal.SIGCONT)
            try:
                wait_until(lambda: "producer fenced" in log_text(zombie)[zombie_mark:], 20,  # noqa: B023
                           "the zombie to be fenced")
                fenced = True
            except AssertionError:
                fenced = False
            if fenced:
                # A fenced worker gives the partition up and stays in the group: the rebalance its
                # return causes hands it a share again, taken over from the changelog.
                wait_until(lambda: owned_partitions(zombie, zombie_mark) or zombie.poll() is not None,  # noqa: B023
                           90, "the fenced worker to take a share of the partitions back")
                rejoined = zombie.poll() is None and bool(owned_partitions(zombie, zombie_mark))
            log(f"fencing: attempt {attempt + 1}: stopped {pause:.0f} s "
                f"({'inside a transaction' if in_txn else 'between transactions'}), fenced {fenced}, "
                f"rejoined {rejoined}, exit code {zombie.poll()}, caught up {recoveries[-1]:.1f} s after SIGSTOP")
            notes.append(f"try {attempt + 1}: frozen {'inside a transaction' if in_txn else 'between transactions'}, "
                         f"fenced {fenced}, rejoined {rejoined}")
            if fenced:
                break
            kill(zombie, signal.SIGTERM)
            a = run.start_worker(f"a{attempt + 1}")
            wait_until(lambda: owned_partitions(a), 60, "the new worker to own partitions")  # noqa: B023
        feeder.wait()
        settle_everything(run, floor, collector, watch)
    finally:
        feeder.kill()
        watch.close()
        txn.close()
    lines = [line for line in log_text(a).splitlines() if "producer fenced" in line]
    notes.append(f"zombie log: {lines[0].split('] ', 3)[-1] if lines else '-'}; "
                 f"{'still running' if a.poll() is None else f'exit code {a.returncode}'}")
    v = check(run, floor, collector, "fencing (SIGSTOP past timeouts)", _fmt(recoveries), notes)
    v.fenced = fenced  # type: ignore[attr-defined]
    v.rejoined = rejoined  # type: ignore[attr-defined]
    return v


# ------------------------------------------------------------------ 5. state loss


def state_loss(run: FaultRun, size: Size) -> Verdict:
    """Stop a worker; a replacement with an empty data directory rebuilds the table states from the
    state topic: they hash equal to the state before (the changelog's records = the stopped
    worker's memory, and their game state and money = a replay of the events so far), and after
    more events the replacement's state hashes equal the changelog's, which equals a replay of all."""
    floor = make_floor(run, size.tables, size.hours, size.seed)
    half = len(floor.lines) // 2
    first, second = floor.lines[:half], floor.lines[half:]
    collector = run.collector("settlements")
    watch = GroupWatch(run)
    a = run.start_worker("a")
    notes = []
    try:
        feeder = Feeder(run, first, size.rate, "feed1").start()
        feeder.wait()
        ends = watch.wait_ends()
        wait_until(lambda: watch.caught_up(ends), 120, "the first half settled")
        before = last_states(run.bootstrap, run.topic("table-state"))
        before_hashes = stored_hashes(before)
        memory = http_json(a.web_port, "/state")["tables"]
        first_path = run.tmp / "first.jsonl"
        first_path.write_text("\n".join(first) + "\n")
        first_floor = expected_of(run, first_path, first)
        before_ok = before_hashes == memory and \
            not differing_tables(before, first_floor.states, first_floor.money)
        notes.append(f"before: changelog = worker memory = replay of the first half, {len(before)} tables: "
                     f"{before_ok}")
        t0 = time.monotonic()
        kill(a, signal.SIGTERM)
        data_dir = run.tmp / "data-b-empty"
        b = run.start_worker("b-empty")
        assert not data_dir.exists() or not any(data_dir.iterdir()), "the replacement's data dir is not empty"
        wait_until(lambda: len(owned_partitions(b)) == 8, 60, "the replacement to own all 8 partitions")
        taken_over = time.monotonic() - t0
        rebuilt = http_json(b.web_port, "/state")
        rebuilt_ok = rebuilt["recovered"] == rebuilt["tables"] == before_hashes
        notes.append(f"rebuilt from the changelog, before any new event: state hashes = before, "
                     f"{len(rebuilt['recovered'])} tables: {rebuilt_ok}")
        feeder = Feeder(run, second, size.rate, "feed2").start()
        feeder.wait()
        settle_everything(run, floor, collector, watch)
        state = http_json(b.web_port, "/state")
        after = stored_hashes(last_states(run.bootstrap, run.topic("table-state")))
        after_ok = state["tables"] == after and state["recovered"] == before_hashes
        notes.append(f"after the second half: worker state hashes = changelog (= replay of all, below), "
                     f"{len(state['tables'])} tables: {after_ok}")
    finally:
        watch.close()
    v = check(run, floor, collector, "state loss (empty data dir)",
              f"{taken_over:.1f} s from the stop to all 8 partitions rebuilt", notes)
    v.state_hashes_ok = before_ok and rebuilt_ok and after_ok  # type: ignore[attr-defined]
    return v


# ------------------------------------------------------------------ 6. soak (benchmarks/faults.py --soak)


def soak(run: FaultRun, minutes: float, tables: int = 200, speed: float = 20.0, interval: float = 5.0,
         seed: int = 71) -> tuple[Verdict, list[dict], dict]:
    """A live floor (`craps-streams simulate --live`) at `speed` x real time for `minutes`, two
    workers; their RSS and the group's lag sampled every `interval` s. Afterwards the exactly-once
    check against a replay of the events the topic holds (the live feed stamps event times as it
    sends, so the topic is the input)."""
    hours = minutes * speed / 60 + 0.2
    collector = run.collector("settlements")
    workers = [run.start_worker("a"), run.start_worker("b")]
    watch = GroupWatch(run)
    sim_log = open(run.tmp / "simulate.log", "wb")  # noqa: SIM115 - closed below
    sim = subprocess.Popen([sys.executable, "-m", "craps_streams.cli", "simulate", "--live", "--tables", str(tables),
                            "--hours", str(hours), "--speed", str(speed), "--seed", str(seed), "--bad-rate", "0"],
                           env=run.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=sim_log)
    samples, t0 = [], time.monotonic()
    try:
        while time.monotonic() - t0 < minutes * 60:
            time.sleep(interval)
            ends = watch.ends() or {}
            samples.append({"t": round(time.monotonic() - t0), "events": sum(ends.values()), "lag": watch.lag(),
                            "rss_mb": [round(rss_kb(w.pid) / 1024, 1) for w in workers]})
            log(f"soak: {samples[-1]}")
        assert sim.poll() is None, "the live floor ended before the soak did"
    finally:
        sim.send_signal(signal.SIGINT)
        try:
            sim.wait(30)
        except subprocess.TimeoutExpired:
            sim.kill()
        sim_log.close()
    floor = floor_of_topic(run)
    settle_everything(run, floor, collector, watch)
    watch.close()
    v = check(run, floor, collector, f"soak {minutes:g} min, {tables} tables x{speed:g}",
              f"lag max {max(s['lag'] or 0 for s in samples)} events", [f"{len(samples)} samples"])
    third = max(1, len(samples) // 3)
    flat = {}
    for name, values in (("rss_mb", [sum(s["rss_mb"]) for s in samples]),
                         ("lag", [s["lag"] or 0 for s in samples])):
        flat[name] = (statistics.median(values[:third]), statistics.median(values[-third:]))
    return v, samples, flat


def floor_of_topic(run: FaultRun) -> Floor:
    """What a replay of the table-events topic (in offset order per partition) settles."""
    events = read_all(run.bootstrap, run.topic("table-events"))
    replay = Replay()
    settlements = {}
    for m in sorted(events, key=lambda m: (m.partition, m.offset)):
        for o in replay.feed_record(decode_event(m.value), f"{m.partition}/{m.offset}"):
            if type(o) is WagerSettled:
                settlements[o.id] = encode_output(output_to_record(o))
    records = [decode_output(value) for value in settlements.values()]
    return Floor(run.tmp / "topic", [""] * len(events), settlements,
                 {t: canonical(s.to_record()) for t, s in replay.tables.items()}, money_of(records))
