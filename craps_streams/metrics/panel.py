"""The status panel of a running floor (`craps-streams status`): what the operator's terminal shows
in place of a scrolling stream.

Pure: a `Snapshot` is made from what the sources answered (the workers' /metrics text, the floor
view's /api/floor document, Prometheus' targets and alerts), with the previous snapshot for the
rates; `render` turns a snapshot into a rich renderable that fits a given height, `plain_line` into
one line for a log. No I/O and no clock here: craps_streams/metrics/panel_sources.py reads the sources.

Money comes from the workers' committed hold books (craps_streams/metrics/exporter.py), in integer cents:
house win = stakes collected - amounts won; hold = house win / handle; theory = the expected house
win (handle x exact house edge) / handle. How unusual: the panel names the line whose result is the
least probable under fair dice, by the report's p (`craps_streams.metrics.unusual`, exported by
the workers as craps_hold_p_value), with its words and the investigation level; its z is secondary.
A floor-wide z is not shown: the wagers of one table share its dice, so its lines are not independent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from prometheus_client.parser import text_string_to_metric_families
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from craps_streams.metrics.at_table import HeldAtTable, held_at_tables
from craps_streams.metrics.unusual import INVESTIGATION_LEVEL, meaning, p_text


@dataclass(frozen=True)
class TableLine:
    table_id: str
    open: bool = True
    held_events: int = 0  # above 0: the table is suspended by a sequence gap
    throws: int = 0
    settled: int = 0
    handle_cents: int = 0
    house_win_cents: int = 0
    expected_cents: float = 0.0
    last_throw_s: float = 0.0  # event time of the last valid throw
    open_alerts: tuple[str, ...] | None = None  # None: the floor view did not answer
    # From the table's controller (craps_streams/controller/metrics.py), when its /metrics is read:
    # events it acknowledged but the broker has not, and the oldest's age.
    at_table: int = 0
    at_table_oldest_s: float = 0.0


@dataclass(frozen=True)
class Extreme:
    """The hold line least probable under fair dice (smallest p; largest |z| without one)."""
    table_id: str
    wager: str
    paytable: str
    z: float
    p: float | None = None  # the report's p of the line (None: the workers did not export it)


@dataclass(frozen=True)
class Alert:
    table_id: str
    alert: str
    seq: int
    ts_ms: int
    message: str = ""


@dataclass(frozen=True)
class LedgerLag:
    """Finance's ledger against the settlements topic (craps_streams/ledger/metrics.py)."""
    records: int  # settlements committed to the topic, not yet rows in the ledger's database
    behind_s: float | None = None  # how long the oldest of them has waited at most (None: no age known)
    measured_s: float | None = None  # when the ledger last measured (None: not yet)


@dataclass(frozen=True)
class Source:
    """One source and what it answered: `error` is None when it answered."""
    name: str
    url: str
    error: str | None = None


@dataclass(frozen=True)
class Snapshot:
    taken_s: float  # wall clock, seconds since the epoch
    sources: tuple[Source, ...] = ()
    tables: tuple[TableLine, ...] = ()
    extreme: Extreme | None = None
    lag_messages: int | None = None
    latency_buckets: tuple[tuple[float, float], ...] = ()  # cumulative (le, count) since the worker started
    rejections: int = 0
    open_alerts: tuple[Alert, ...] | None = None  # None: the floor view did not answer
    last_alert: Alert | None = None
    alerts_raised: int | None = None
    prometheus_targets: tuple[int, int] | None = None  # (up, all)
    prometheus_firing: tuple[str, ...] | None = None
    brokers_lost: tuple[tuple[str, float, int], ...] = ()  # (node, since, failed attempts): the workers' clients
    ledger: LedgerLag | None = None  # None: the ledger's metrics were not read
    # From the previous snapshot: the rates over the interval between the two.
    settlements_per_s: float | None = None
    latency_p99_s: float | None = None  # upper bound of the bucket holding the interval's 99th percentile

    @property
    def settled(self) -> int:
        return sum(t.settled for t in self.tables)

    @property
    def handle_cents(self) -> int:
        return sum(t.handle_cents for t in self.tables)

    @property
    def house_win_cents(self) -> int:
        return sum(t.house_win_cents for t in self.tables)

    @property
    def expected_cents(self) -> float:
        return sum(t.expected_cents for t in self.tables)

    def source(self, name: str) -> Source | None:
        return next((s for s in self.sources if s.name == name), None)


@dataclass(frozen=True)
class Links:
    """What the panel points the operator to: the pages and the commands of this run."""
    floor_url: str = ""
    metrics_urls: tuple[str, ...] = ()
    prometheus_url: str = ""
    run: str = ""  # the run's topic prefix
    note: str = "Ctrl-C quits"  # under the panel: what Ctrl-C does
    commands: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (what for, command)


# ------------------------------------------------------------------ making a snapshot


def _samples(texts):
    for text in texts:
        for family in text_string_to_metric_families(text):
            yield from family.samples


def ledger_lag_of(texts: list[str]) -> LedgerLag:
    """The ledger's lag on the settlements topic from its /metrics: the records of every partition
    summed, the longest wait of any, the newest measurement."""
    records, behind, measured = 0, None, None
    for s in _samples(texts):
        if s.name == "craps_ledger_lag_updated_timestamp_seconds":
            measured = max(measured or 0.0, s.value) if s.value else measured
        elif s.labels.get("topic", "").rsplit(".", 1)[-1] != "settlements":
            continue
        elif s.name == "craps_ledger_lag_records":
            records += int(s.value)
        elif s.name == "craps_ledger_behind_seconds":
            behind = max(behind or 0.0, s.value)
    return LedgerLag(records, behind, measured)


def snapshot_of(taken_s: float, metrics_texts: list[str], floor: dict | None = None,
                targets: tuple[int, int] | None = None, firing: tuple[str, ...] | None = None,
                sources: tuple[Source, ...] = (), previous: Snapshot | None = None,
                ledger_texts: list[str] | None = None) -> Snapshot:
    """A snapshot from the workers' metrics (each table is exported by the worker that owns it, so
    the texts add up), the floor view's /api/floor document, Prometheus' answers and the ledger's
    metrics (None: not read)."""
    tables: dict[str, dict] = {}
    lines: dict[tuple[str, str, str], float] = {}
    ps: dict[tuple[str, str, str], float] = {}
    lost: dict[str, list] = {}
    lag = None
    buckets: dict[float, float] = {}
    rejections = 0

    def table(name):
        return tables.setdefault(name, {"table_id": name})

    def add(t, key, value):
        t[key] = t.get(key, 0) + value

    for s in _samples(metrics_texts):
        name, labels, value = s.name, s.labels, s.value
        if name == "craps_table_open":
            table(labels["table"])["open"] = value == 1
        elif name == "craps_table_held_events":
            table(labels["table"])["held_events"] = int(value)
        elif name == "craps_throws_total":
            table(labels["table"])["throws"] = int(value)
        elif name == "craps_last_throw_timestamp_seconds":
            table(labels["table"])["last_throw_s"] = value
        elif name == "craps_settlements_total":
            add(table(labels["table"]), "settled", int(value))
        elif name == "craps_handle_cents_total":
            add(table(labels["table"]), "handle_cents", int(value))
        elif name == "craps_stakes_collected_cents_total":
            add(table(labels["table"]), "house_win_cents", int(value))
        elif name == "craps_won_cents_total":
            add(table(labels["table"]), "house_win_cents", -int(value))
        elif name == "craps_expected_house_win_cents":
            add(table(labels["table"]), "expected_cents", value)
        elif name == "craps_hold_z_score":
            lines[labels["table"], labels["wager"], labels["paytable"]] = value
        elif name == "craps_kafka_broker_lost_since_seconds":
            lost.setdefault(labels["node"], [labels["node"], value, 0])[1] = value
        elif name == "craps_kafka_broker_lost_attempts":
            lost.setdefault(labels["node"], [labels["node"], 0.0, 0])[2] = int(value)
        elif name == "craps_hold_p_value":
            ps[labels["table"], labels["wager"], labels["paytable"]] = value
        elif name == "craps_consumer_lag_messages":
            lag = (lag or 0) + int(value)
        elif name == "craps_settlement_latency_seconds_bucket":
            le = float(labels["le"])
            buckets[le] = buckets.get(le, 0) + value
        elif name == "craps_rejections_total":
            rejections += int(value)

    for t, held in held_at_tables(metrics_texts).items():
        table(t).update(at_table=held.events, at_table_oldest_s=held.oldest_s)

    open_alerts = last_alert = raised = None
    if floor is not None:
        open_alerts, newest, raised = [], [], 0
        for row in floor.get("tables", []):
            t = table(row["table_id"])
            t["open_alerts"] = tuple(a["alert"] for a in row.get("alerts_open") or [])
            open_alerts += [_alert(row["table_id"], a) for a in row.get("alerts_open") or []]
            if row.get("last_alert"):
                newest.append(_alert(row["table_id"], row["last_alert"]))
            raised += row.get("alerts_raised") or 0
        last_alert = max(newest, key=lambda a: (a.ts_ms, a.table_id), default=None)
        open_alerts = tuple(sorted(open_alerts, key=lambda a: (a.table_id, a.ts_ms)))

    extreme = None
    if ps:
        (t, wager, paytable), p = min(ps.items(), key=lambda kv: (kv[1], kv[0]))
        extreme = Extreme(t, wager, paytable, lines.get((t, wager, paytable), 0.0), p)
    elif lines:
        (t, wager, paytable), z = max(lines.items(), key=lambda kv: (abs(kv[1]), kv[0]))
        extreme = Extreme(t, wager, paytable, z)
    snap = Snapshot(
        taken_s=taken_s, sources=tuple(sources),
        tables=tuple(TableLine(**t) for _, t in sorted(tables.items())), extreme=extreme,
        lag_messages=lag, latency_buckets=tuple(sorted(buckets.items())), rejections=rejections,
        open_alerts=open_alerts, last_alert=last_alert, alerts_raised=raised,
        prometheus_targets=targets, prometheus_firing=firing,
        brokers_lost=tuple(tuple(v) for _, v in sorted(lost.items())),
        ledger=ledger_lag_of(ledger_texts) if ledger_texts else None)
    return with_rates(snap, previous)


def _alert(table_id: str, a: dict) -> Alert:
    return Alert(table_id, a.get("alert", "?"), int(a.get("seq") or 0), int(a.get("ts") or 0), a.get("message", ""))


def with_rates(snap: Snapshot, previous: Snapshot | None) -> Snapshot:
    """The settlements per second and the settlement latency's 99th percentile over the interval
    since `previous` (None without one, or when a worker restarted and its counters went back)."""
    if previous is None or snap.taken_s <= previous.taken_s or not snap.tables:
        return snap
    settled = snap.settled - previous.settled
    rate = settled / (snap.taken_s - previous.taken_s) if settled >= 0 else None
    before = dict(previous.latency_buckets)
    window = [(le, n - before.get(le, 0)) for le, n in snap.latency_buckets]
    p99 = None
    if window and window[-1][1] > 0 and all(n >= 0 for _, n in window):
        total = window[-1][1]  # the +Inf bucket
        p99 = next(le for le, n in window if n >= 0.99 * total)
    return replace(snap, settlements_per_s=rate, latency_p99_s=p99)


# ------------------------------------------------------------------ showing it


def _dollars(cents: float) -> str:
    return ("-" if cents < 0 else "") + f"${abs(cents) / 100:,.0f}"


def _pct(part: float, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def _clock(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%H:%M:%S")


def _latency(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if math.isinf(seconds):
        return "> 60 s"
    return f"≤ {seconds * 1000:.0f} ms" if seconds < 1 else f"≤ {seconds:g} s"


def held_at_table(t: TableLine) -> str:
    """ "340 events held at the table, oldest 2 min" (the controller could not forward them)."""
    return HeldAtTable(t.at_table, t.at_table_oldest_s).words()


# The ledger measures its lag every second: a measurement older than this is a stalled ledger (or
# one cut off from the broker). Behind by more than BEHIND_S it is falling behind; by more than
# FAR_S, or by more records than the CrapsLedgerBehind alert allows, finance's figures are stale.
LEDGER_STALE_S = 10.0
LEDGER_BEHIND_S = 5.0
LEDGER_FAR_S = 60.0
LEDGER_FAR_RECORDS = 1_000  # infra/prometheus/alert_rules.yml, CrapsLedgerBehind


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def ledger_words(lag: LedgerLag, now_s: float) -> tuple[str, str]:
    """What the ledger's lag means, in words, and how much it matters: "ok", "behind" or "far"."""
    if lag.measured_s is None:
        return "lag not measured yet (starting, or no broker)", "behind"
    age = now_s - lag.measured_s
    if age > LEDGER_STALE_S:
        return (f"lag last measured {_seconds(age)} ago: stalled or cut off from the broker "
                "(its log; docs/operating/ledger.md)", "far")
    if lag.records == 0:
        return "caught up with the settlements", "ok"
    waited = "" if lag.behind_s is None else f", {_seconds(lag.behind_s)}"
    figures = f"{lag.records:,} settlement{'s' if lag.records != 1 else ''} behind{waited}"
    behind = lag.behind_s or 0.0
    if behind > LEDGER_FAR_S or lag.records > LEDGER_FAR_RECORDS:
        return f"{figures}: far behind, finance's figures are stale (docs/operating/ledger.md)", "far"
    if behind > LEDGER_BEHIND_S:
        return f"{figures}: falling behind", "behind"
    return f"{figures}: keeping up", "ok"


def _state(t: TableLine) -> Text:
    if t.held_events:
        return Text(f"SUSPENDED ({t.held_events} held)", style="bold red")
    if t.at_table:
        return Text(held_at_table(t), style="bold yellow")
    return Text("open", style="green") if t.open else Text("closed", style="dim")


def _sources_line(snap: Snapshot) -> Text:
    out = Text("sources ", style="bold")
    if not snap.sources:
        out.append("—")
    for i, s in enumerate(snap.sources):
        out.append(" · " if i else "")
        out.append(f"{s.name} ")
        if s.error is not None:
            out.append(f"unreachable ({s.error})", style="bold red")
        elif s.name == "Prometheus" and snap.prometheus_targets is not None:
            up, every = snap.prometheus_targets
            firing = snap.prometheus_firing or ()
            out.append(f"{up}/{every} targets up", style="green" if up == every and every else "bold red")
            out.append(", firing: " + (", ".join(firing) if firing else "none"), style="bold red" if firing else "")
        else:
            out.append("ok", style="green")
    if snap.brokers_lost:  # first on the line: a narrow terminal cuts the line's end
        lost = Text()
        for node, since, attempts in snap.brokers_lost:
            lost.append(f"Kafka broker node {node} lost since {_clock(since)} UTC ({attempts} failed connections): "
                        "the worker retries it and moves to its partitions' new leaders · ", style="bold red")
        out = lost + out
    return out


def summary(snap: Snapshot) -> list[Text]:
    """The panel's head, one line each (cut at the panel's width, never wrapped)."""
    tables = snap.tables
    open_n = sum(t.open for t in tables)
    suspended = sum(1 for t in tables if t.held_events)
    rate = "—" if snap.settlements_per_s is None else f"{snap.settlements_per_s:,.1f}/s"
    head = Text.assemble(
        ("tables ", "bold"), f"{len(tables)} ({open_n} open, ",
        (f"{suspended} suspended", "bold red" if suspended else ""), ")  ",
        ("settled ", "bold"), f"{snap.settled:,} ({rate})  ",
        ("lag ", "bold"), "—" if snap.lag_messages is None else f"{snap.lag_messages:,} events",
        "  ", ("latency p99 ", "bold"), _latency(snap.latency_p99_s),
        "  ", ("rejected ", "bold"), f"{snap.rejections:,}")
    hold = Text.assemble(
        ("floor hold ", "bold"), (_pct(snap.house_win_cents, snap.handle_cents),
                                  "green" if snap.house_win_cents >= 0 else "red"),
        " against theory ", _pct(snap.expected_cents, snap.handle_cents),
        f"  (house win {_dollars(snap.house_win_cents)}, expected {_dollars(snap.expected_cents)}, "
        f"handle {_dollars(snap.handle_cents)})")
    extreme = Text("most unusual ", style="bold")
    if snap.extreme is None:
        extreme.append("—")
    elif snap.extreme.p is None:
        e = snap.extreme
        extreme.append(f"{e.table_id} {e.wager} ({e.paytable}) z {e.z:+.2f}")
        extreme.append("  (standard deviations from theory; the workers export no p)", style="dim")
    else:
        e = snap.extreme
        investigate = e.p <= INVESTIGATION_LEVEL
        extreme.append(f"{e.table_id} {e.wager} ({e.paytable}) p {p_text(e.p)}",
                       style="bold red" if investigate else "")
        extreme.append(f" (z {e.z:+.2f}): ", style="dim")
        extreme.append(meaning(e.p), style="bold red" if investigate else "dim")
    if snap.open_alerts is None:
        alerts = Text.assemble(("open alerts ", "bold"), ("unknown (the floor view did not answer)", "yellow"))
        raised = Text.assemble(("alerts raised ", "bold"), "unknown")
    else:
        alerts = Text.assemble(("open alerts ", "bold"),
                               (f"{len(snap.open_alerts)}", "bold red" if snap.open_alerts else "green"))
        if snap.open_alerts:
            alerts.append(": " + ", ".join(f"{a.table_id} {a.alert} seq {a.seq}" for a in snap.open_alerts[:4])
                          + (", …" if len(snap.open_alerts) > 4 else ""), style="bold red")
        alerts.append("  (still standing: a table suspended, a hold beyond its threshold, a four-point Fire Bet "
                      "hand)", style="dim")
        raised = Text.assemble(("alerts raised ", "bold"), f"{snap.alerts_raised or 0:,}")
        if snap.last_alert is not None:
            a = snap.last_alert
            raised.append(f", the last: {a.table_id} {a.alert} seq {a.seq} at {_clock(a.ts_ms / 1000)}")
    lines = [head, hold, extreme, alerts, raised, _sources_line(snap)]
    if snap.ledger is not None:
        words, level = ledger_words(snap.ledger, snap.taken_s)
        lines.insert(1, Text.assemble(("ledger ", "bold"), (words, {"ok": "green", "behind": "bold yellow",
                                                                     "far": "bold red"}[level])))
    holding = sorted((t for t in tables if t.at_table), key=lambda t: -t.at_table_oldest_s)
    if holding:
        lines.insert(1, Text.assemble(("held at the tables ", "bold"), (
            "; ".join(f"{t.table_id}: {held_at_table(t)}" for t in holding[:3])
            + (f"; {len(holding) - 3} more tables" if len(holding) > 3 else ""), "bold yellow"),
            ("  (their controllers cannot reach the broker: nothing is lost, nothing settles)", "dim")))
    for line in lines:
        line.no_wrap, line.overflow = True, "ellipsis"
    return lines


def table_grid(tables: tuple[TableLine, ...], max_rows: int) -> Table:
    """One row per table, at most `max_rows` (the rest counted in the last row)."""
    grid = Table(box=None, pad_edge=False, header_style="bold")
    for name, justify in (("table", "left"), ("state", "left"), ("throws", "right"), ("settled", "right"),
                          ("handle", "right"), ("house win", "right"), ("hold", "right"), ("theory", "right"),
                          ("open alerts", "left")):
        grid.add_column(name, justify=justify, no_wrap=True, overflow="ellipsis")
    rows = max(max_rows, 1)
    shown = tables if len(tables) <= rows else tables[:rows - 1]
    for t in shown:
        alerts = "?" if t.open_alerts is None else ", ".join(t.open_alerts) or "—"
        grid.add_row(t.table_id, _state(t), f"{t.throws:,}", f"{t.settled:,}", _dollars(t.handle_cents),
                     Text(_dollars(t.house_win_cents), style="green" if t.house_win_cents >= 0 else "red"),
                     _pct(t.house_win_cents, t.handle_cents), _pct(t.expected_cents, t.handle_cents),
                     Text(alerts, style="bold red" if t.open_alerts else ""))
    if len(shown) < len(tables):
        rest = tables[len(shown):]
        grid.add_row(f"… {len(rest)} more", "", f"{sum(t.throws for t in rest):,}",
                     f"{sum(t.settled for t in rest):,}", _dollars(sum(t.handle_cents for t in rest)),
                     _dollars(sum(t.house_win_cents for t in rest)), "", "", "", style="dim")
    return grid


def links_lines(links: Links) -> list[Text]:
    out = [Text.assemble(("floor view ", "bold"), links.floor_url or "—",
                         (" (a table: table?id=T001, outcomes vs theory: plots)" if links.floor_url else "", "dim"),
                         "   ", ("Prometheus ", "bold"), links.prometheus_url or "—"),
           Text.assemble(("metrics ", "bold"), "   ".join(links.metrics_urls) or "—")]
    width = max((len(what) for what, _ in links.commands), default=0)
    for what, command in links.commands:
        out.append(Text.assemble((what.ljust(width), "bold"), "  ", (command, "cyan")))
    for line in out:
        line.no_wrap, line.overflow = True, "ellipsis"
    return out


FIXED_LINES = 2 + 1  # the panel's border and the table's header (the head's lines are counted as made)


def render(snap: Snapshot, links: Links, height: int = 40):
    """The panel, at most `height` lines tall: the head, one row per table (as many as fit; the
    rest summed on one row), the links and commands."""
    below, head = links_lines(links), summary(snap)
    rows = height - FIXED_LINES - len(head) - len(below) - 2  # the blank lines between the parts
    title = f"craps-streams · {links.run or 'the floor'} · {_clock(snap.taken_s)} UTC"
    body = Group(*head, Text(""), table_grid(snap.tables, rows), Text(""), *below)
    return Panel(body, title=title, title_align="left", subtitle=links.note, subtitle_align="right",
                 border_style="green")


def plain_line(snap: Snapshot) -> str:
    """One line of the panel's head, for a log (stdout not a terminal)."""
    rate = "—" if snap.settlements_per_s is None else f"{snap.settlements_per_s:.1f}/s"
    suspended = sum(1 for t in snap.tables if t.held_events)
    parts = [f"{_clock(snap.taken_s)} UTC",
             f"tables {len(snap.tables)} open {sum(t.open for t in snap.tables)} suspended {suspended}",
             f"settled {snap.settled} ({rate})",
             f"hold {_pct(snap.house_win_cents, snap.handle_cents)} theory {_pct(snap.expected_cents, snap.handle_cents)}"
             f" handle {_dollars(snap.handle_cents)} house win {_dollars(snap.house_win_cents)}",
             f"lag {'—' if snap.lag_messages is None else snap.lag_messages}"]
    if snap.extreme is not None and snap.extreme.p is not None:
        e = snap.extreme
        parts.append(f"most unusual {e.table_id} {e.wager} p {p_text(e.p)}"
                     + (" (investigate)" if e.p <= INVESTIGATION_LEVEL else ""))
    holding = [t for t in snap.tables if t.at_table]
    if holding:
        parts.append("held at the tables " + ",".join(f"{t.table_id}:{t.at_table}" for t in holding))
    if snap.open_alerts is None:
        parts.append("open alerts unknown")
    else:
        listed = ",".join(f"{a.table_id}:{a.alert}" for a in snap.open_alerts)
        parts.append(f"open alerts {len(snap.open_alerts)}" + (f" ({listed})" if listed else "")
                     + f" raised {snap.alerts_raised or 0}")
    if snap.prometheus_targets is not None:
        parts.append(f"prometheus {snap.prometheus_targets[0]}/{snap.prometheus_targets[1]} up"
                     f" firing {len(snap.prometheus_firing or ())}")
    if snap.ledger is not None:
        parts.append("ledger " + ledger_words(snap.ledger, snap.taken_s)[0])
    for node, since, attempts in snap.brokers_lost:
        parts.append(f"Kafka broker node {node} lost since {_clock(since)} UTC ({attempts} failed connections)")
    down = [s.name for s in snap.sources if s.error is not None]
    if down:
        parts.append("unreachable: " + ", ".join(down))
    return " · ".join(parts)
