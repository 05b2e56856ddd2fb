"use strict";
// One table: the hand as it unfolds, its layout, hold against theory with its band, alerts, plots.
const tableId = new URLSearchParams(location.search).get("id") || "";
document.getElementById("table-id").textContent = tableId;
document.title = "craps-streams: table " + tableId;
const holdCharts = new Map();  // "wager|paytable" -> chart
const freqCharts = frequencyCharts(document.getElementById("freq-charts"));
window.__charts = {hold: holdCharts, frequencies: freqCharts};
let exact = {}, status = "connecting…";

function now(t) {
  return el("div", {class: ["table", "wide", t.closed ? "closed" : "", t.suspended ? "suspended" : ""].join(" "),
                    data: {table: t.table_id, seq: t.last_seq ?? ""}},
    t.suspended ? el("div", {class: "suspended-note", data: {field: "suspended"}},
      "SUSPENDED: sequence gap, ", t.held_events, " events held (seq ", (t.held_seqs || []).join(", "), ")") : null,
    el("div", {class: "row big"}, "shooter ", el("b", {data: {field: "shooter"}}, t.shooter ?? "—"),
       " at position ", el("b", {data: {field: "position"}}, t.position || "—"),
       " · hand ", el("b", {data: {field: "hand"}}, t.hand ?? "—"),
       " · point ", el("b", {data: {field: "point"}}, t.point ?? "off"),
       " · throws this hand ", el("b", {data: {field: "throws_this_hand"}}, t.throws_this_hand ?? "—"),
       t.come_bets_only ? " · COME BETS ONLY" : "", t.closed ? " · CLOSED" : ""),
    el("div", {class: "row"}, "last seq ", t.last_seq ?? "—", " · last throw ", timeOf(t.last_throw_ts),
       " · wagers in action ", t.wagers_in_action ?? 0, " · settled ", t.settled),
    el("div", {class: "row layout", title: TIPS.fire, data: {field: "fire_points"}}, "Fire Bet points ",
       marks(FIRE, t.fire_points), " ", (t.fire_points || []).length, " made"),
    el("div", {class: "row layout", title: TIPS.bonus, data: {field: "bonus_marked"}}, "Bonus Craps ", marks(BONUS, t.bonus_marked)),
    el("div", {class: "row layout", title: TIPS.roller, data: {field: "hot_roller_combos"}}, "Hot Roller ",
       marks(COMBOS, t.hot_roller_combos), " numbers complete: ",
       el("b", {data: {field: "hot_roller_numbers"}}, (t.hot_roller_numbers || []).join(", ") || "none")),
    el("div", {class: "row layout", title: TIPS.shooterJackpot}, "Hot Shooter ",
       (t.hot_shooter_throws || []).length ? "throws so far, per group of open wagers: " :
         t.kind === "live" ? "not offered on a live table" : "no open wager",
       el("b", {data: {field: "hot_shooter_throws"}}, (t.hot_shooter_throws || []).join(" · "))));
}

function handLog(markers) {
  return (markers || []).map(m => el("li", {data: {seq: m.seq}}, "seq ", m.seq, " ", timeOf(m.ts), " · ", m.layout, ": ",
    m.type === "MarkerPlaced" ? `${m.marker} (${m.count})` : `cleared (${m.reason})`));
}

function settlements(list) {
  return el("table", {class: "hold", data: {field: "settlements"}},
    el("tr", {}, ["seq", "wager id", "pos", "wager", "outcome", "stake", "won", "detail"].map(h => el("th", {}, h))),
    (list || []).map(s => el("tr", {data: {settlement: s.id}}, el("td", {}, s.seq), el("td", {}, s.wager_id),
      el("td", {}, s.position), el("td", {}, s.wager), el("td", {class: s.outcome}, s.outcome),
      el("td", {}, money(s.stake_cents)), el("td", {}, money(s.won_cents)), el("td", {}, s.detail))));
}

function render(d) {
  if (!d) { document.getElementById("now").replaceChildren(el("p", {}, "no such table on this view (yet)")); return; }
  document.getElementById("now").replaceChildren(now(d));
  document.getElementById("hand").replaceChildren(...handLog(d.hand_markers));
  document.getElementById("hold").replaceChildren(holdTable(d.hold));
  document.getElementById("alerts-open").replaceChildren(alertList(d.alerts_open, "alerts_open"));
  document.getElementById("alerts-recent").replaceChildren(alertList(d.recent_alerts, "recent_alerts"));
  document.getElementById("settlements").replaceChildren(settlements(d.recent_settlements));
  for (const [line, points] of Object.entries(d.series || {}).sort()) {
    let chart = holdCharts.get(line);
    if (!chart) {
      const canvas = el("canvas", {data: {chart: "hold", line}});
      document.getElementById("hold-charts").append(el("div", {class: "chartbox"}, el("h3", {}, line.replace("|", " · ")), canvas));
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
