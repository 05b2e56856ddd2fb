"use strict";
// One table: the hand as it unfolds, its layout, hold against theory with its band, alerts, plots.
// The layout's numbers, the paytables and the words of every code come from the detail's `board`
// and its `*_words` fields (craps_streams/rules/board.py and wording.py): this page says none itself.
const tableId = new URLSearchParams(location.search).get("id") || "";
document.getElementById("table-id").textContent = tableId;
document.title = "craps-streams: table " + tableId;
const holdCharts = new Map();  // "wager|paytable" -> chart
const freqCharts = frequencyCharts(document.getElementById("freq-charts"));
window.__charts = {hold: holdCharts, frequencies: freqCharts};
let exact = {}, status = "connecting…";

function now(t) {
  const board = boardOf(t);
  return el("div", {class: ["table", "wide", t.closed ? "closed" : "", t.suspended ? "suspended" : ""].join(" "),
                    data: {table: t.table_id, seq: t.last_seq ?? ""}},
    t.suspended ? el("div", {class: "suspended-note", data: {field: "suspended"}},
      "SUSPENDED: sequence gap, ", t.held_events, " events held (seq ", (t.held_seqs || []).join(", "), ")") : null,
    t.at_table && t.at_table.events ? el("div", {class: "at-table-note", data: {field: "at_table"}}, t.at_table.words) : null,
    el("div", {class: "row big"}, el("span", {data: {field: "kind"}}, t.kind_words || "—"), " table · shooter ",
       el("b", {data: {field: "shooter"}}, t.shooter ?? "—"),
       " at position ", el("b", {data: {field: "position"}}, t.position || "—"),
       " · hand ", el("b", {data: {field: "hand"}}, t.hand ?? "—"),
       " · point ", el("b", {data: {field: "point"}}, t.point ?? "off"),
       " · throws this hand ", el("b", {data: {field: "throws_this_hand"}}, t.throws_this_hand ?? "—"),
       t.come_bets_only ? " · COME BETS ONLY" : "", t.closed ? " · CLOSED" : ""),
    el("div", {class: "row"}, "last seq ", t.last_seq ?? "—", " · last throw ", timeOf(t.last_throw_ts),
       " · wagers in action ", t.wagers_in_action ?? 0, " · settled ", t.settled),
    el("div", {class: "row layout", title: board.words.fire, data: {field: "fire_points"}}, "Fire Bet points ",
       marks(board.points, t.fire_points), " ", (t.fire_points || []).length, " made"),
    el("div", {class: "row layout", title: board.words.bonus, data: {field: "bonus_marked"}}, "Bonus Craps ",
       marks(board.bonus_totals, t.bonus_marked)),
    el("div", {class: "row layout", title: board.words.hot_roller, data: {field: "hot_roller_combos"}}, "Hot Roller ",
       marks(board.combinations, t.hot_roller_combos), " numbers complete: ",
       el("b", {data: {field: "hot_roller_numbers"}}, (t.hot_roller_numbers || []).join(", ") || "none")),
    el("div", {class: "row layout", title: board.words.hot_shooter}, "Hot Shooter ",
       (t.hot_shooter_throws || []).length ? "throws so far, per group of open wagers: " :
         t.kind && !t.hot_shooter_offered ? `not offered on a ${t.kind_words} table` : "no open wager",
       el("b", {data: {field: "hot_shooter_throws"}}, (t.hot_shooter_throws || []).join(" · "))));
}

// The Rules Submission in force at this table, each line in words.
function rulesInForce(t) {
  const board = boardOf(t);
  const lines = [["fire", board.words.fire], ["bonus", board.words.bonus], ["hot_roller", board.words.hot_roller]];
  if (t.hot_shooter_offered) lines.push(["hot_shooter", board.words.hot_shooter]);
  return el("dl", {class: "rules", data: {field: "rules"}},
    lines.flatMap(([k, words]) => {
      const [head, ...rest] = String(words ?? "").split(": ");
      return [el("dt", {data: {rule: k}}, head), el("dd", {data: {rule: k}}, rest.join(": "))];
    }));
}

function handLog(markers) {
  return (markers || []).map(m => el("li", {data: {seq: m.seq}}, "seq ", m.seq, " ", timeOf(m.ts), " · ", m.words));
}

const SETTLEMENT_HEADS = ["seq", "wager id", "position", "wager", "outcome", "stake", "won", "detail"];

function settlements(list) {
  return el("table", {class: "hold settlements", data: {field: "settlements"}},
    el("tr", {}, SETTLEMENT_HEADS.map(h => el("th", {}, h))),
    (list || []).map(s => el("tr", {data: {settlement: s.id}}, el("td", {}, s.seq), el("td", {}, s.wager_id),
      el("td", {}, s.position), el("td", {title: s.wager}, s.wager_words), el("td", {class: s.outcome}, s.outcome),
      el("td", {}, money(s.stake_cents)), el("td", {}, money(s.won_cents)),
      el("td", {title: s.detail + " · paytable " + s.paytable}, s.detail_words))));
}

function render(d) {
  if (!d) { document.getElementById("now").replaceChildren(el("p", {}, "no such table on this view (yet)")); return; }
  document.getElementById("now").replaceChildren(now(d));
  document.getElementById("rules").replaceChildren(rulesInForce(d));
  document.getElementById("hand").replaceChildren(...handLog(d.hand_markers));
  document.getElementById("hold").replaceChildren(holdTable(d.hold, boardOf(d).wager_names));
  document.getElementById("alerts-open").replaceChildren(alertList(d.alerts_open, "alerts_open"));
  document.getElementById("alerts-recent").replaceChildren(alertList(d.recent_alerts, "recent_alerts"));
  document.getElementById("settlements").replaceChildren(settlements(d.recent_settlements));
  for (const [line, points] of Object.entries(d.series || {}).sort()) {
    let chart = holdCharts.get(line);
    if (!chart) {
      const canvas = el("canvas", {data: {chart: "hold", line}});
      document.getElementById("hold-charts").append(el("div", {class: "chartbox"}, el("h3", {}, (([w, p]) => `${boardOf(d).wager_names[w] || w} · ${p}`)(line.split("|"))), canvas));
      chart = holdChart(canvas);
      holdCharts.set(line, chart);
    }
    setHoldSeries(chart, points);
  }
  for (const [name, chart] of Object.entries(freqCharts)) setFrequencies(chart, name, (d.observed || {})[name], exact[name]);
}

function meta() {
  document.getElementById("meta").textContent = `${status} · updated ${timeOf(Date.now())}`;
}

window.__table = {pushes: 0, lastSent: 0};
follow("events/table?id=" + encodeURIComponent(tableId), doc => {
  exact = doc.exact; render(doc.detail); window.__table.lastSent = doc.sent_ms; meta();
}, doc => {
  render(doc.detail); window.__table.pushes++; window.__table.lastSent = doc.sent_ms; meta();
}, s => { status = s; meta(); });
