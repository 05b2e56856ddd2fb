"use strict";
// The floor: every table, updated in place from the pushed rows (no reload, no polling).
const cards = new Map();  // table id -> its card; looked up by id in a Map, never in a selector
const rows = new Map();
let status = "connecting…", instance = "", lastPush = 0;

function card(t) {
  return el("div", {class: ["table", t.closed ? "closed" : "", t.suspended ? "suspended" : "",
                            (t.alerts_open || []).length ? "alerting" : ""].join(" "),
                    data: {table: t.table_id, seq: t.last_seq ?? ""}},
    el("a", {class: "id", href: tableHref(t.table_id)}, t.table_id),
    el("span", {class: "kind"}, t.kind ?? "", t.closed ? " · closed" : ""),
    t.suspended ? el("div", {class: "suspended-note", data: {field: "suspended"}},
                     "SUSPENDED: sequence gap, ", t.held_events, " events held") : null,
    el("div", {class: "row"}, "shooter ", el("span", {data: {field: "shooter"}}, t.shooter ?? "—"),
       " (pos ", el("span", {data: {field: "position"}}, t.position || "—"), "), hand ",
       el("span", {data: {field: "hand"}}, t.hand ?? "—"), ", throws this hand ",
       el("b", {data: {field: "throws_this_hand"}}, t.throws_this_hand ?? "—")),
    el("div", {class: "row"}, "point ", el("b", {data: {field: "point"}}, t.point ?? "off"),
       t.come_bets_only ? " · come bets only" : "", " · wagers in action ", t.wagers_in_action ?? 0,
       " · settled ", el("span", {data: {field: "settled"}}, t.settled)),
    el("div", {class: "row", data: {field: "fire_points"}}, "Fire ", marks(FIRE, t.fire_points)),
    el("div", {class: "row", data: {field: "bonus_marked"}}, "Bonus ", marks(BONUS, t.bonus_marked)),
    el("div", {class: "row", data: {field: "hot_roller_combos"}}, "Hot Roller ", marks(COMBOS, t.hot_roller_combos),
       " numbers ", el("span", {data: {field: "hot_roller_numbers"}}, (t.hot_roller_numbers || []).join(",") || "—")),
    el("div", {class: "row"}, "Hot Shooter throws ",
       el("span", {data: {field: "hot_shooter_throws"}}, (t.hot_shooter_throws || []).join(", ") || "—")),
    holdTable(t.hold),
    el("div", {class: "row"}, "open alerts: ", alertList(t.alerts_open, "alerts_open")),
  );
}

function put(t) {
  rows.set(t.table_id, t);
  const fresh = card(t);
  const old = cards.get(t.table_id);
  cards.set(t.table_id, fresh);
  if (old) { old.replaceWith(fresh); return; }
  // A new table: keep the cards in table id order.
  const ids = [...cards.keys()].sort();
  const next = ids[ids.indexOf(t.table_id) + 1];
  document.getElementById("tables").insertBefore(fresh, next ? cards.get(next) : null);
}

function meta() {
  const suspended = [...rows.values()].filter(t => t.suspended).length;
  const alerting = [...rows.values()].filter(t => (t.alerts_open || []).length).length;
  document.getElementById("meta").textContent =
    `${rows.size} tables · ${suspended} suspended · ${alerting} with open alerts · view ${instance} · ${status}` +
    (lastPush ? ` · last push ${timeOf(lastPush)}` : "");
}

window.__floor = {rows, pushes: 0, lastSent: 0};
follow("events/floor", doc => {
  instance = doc.instance;
  document.getElementById("tables").replaceChildren();
  cards.clear(); rows.clear();
  doc.tables.forEach(put);
  lastPush = Date.now(); window.__floor.lastSent = doc.sent_ms; meta();
}, doc => {
  doc.tables.forEach(put);
  window.__floor.pushes++; window.__floor.lastSent = doc.sent_ms;
  lastPush = Date.now(); meta();
}, s => { status = s; meta(); });
