"use strict";
// The floor: every table, updated in place from the pushed rows (no reload, no polling).
const cards = new Map();  // table id -> its card; looked up by id in a Map, never in a selector
const rows = new Map();
let status = "connecting…", instance = "", lastPush = 0;

function card(t) {
  const hs = t.hot_shooter_throws || [];
  const last = t.last_alert;
  const board = boardOf(t);
  return el("div", {class: ["table", t.closed ? "closed" : "", t.suspended ? "suspended" : "",
                            t.at_table && t.at_table.events ? "holding" : "",
                            (t.alerts_open || []).length ? "alerting" : ""].join(" "),
                    data: {table: t.table_id, seq: t.last_seq ?? ""}},
    el("a", {class: "id", href: tableHref(t.table_id)}, t.table_id),
    el("span", {class: "kind", data: {field: "kind"}}, t.kind_words ?? "", t.closed ? " · closed" : ""),
    t.suspended ? el("div", {class: "suspended-note", data: {field: "suspended"}},
                     "SUSPENDED: sequence gap, ", t.held_events, " events held") : null,
    // The table's controller holds what the broker has not acknowledged (the status panel's words).
    t.at_table && t.at_table.events ? el("div", {class: "at-table-note", data: {field: "at_table"}},
                                         t.at_table.words) : null,
    el("div", {class: "row", title: TIPS.shooter}, "shooter ", el("span", {data: {field: "shooter"}}, t.shooter ?? "—"),
       " · position ", el("span", {data: {field: "position"}}, t.position || "—"), " · hand ",
       el("span", {data: {field: "hand"}}, t.hand ?? "—"), " · throws this hand ",
       el("b", {data: {field: "throws_this_hand"}}, t.throws_this_hand ?? "—")),
    el("div", {class: "row", title: TIPS.point}, "point ", el("b", {data: {field: "point"}}, t.point ?? "off"),
       t.come_bets_only ? " · come bets only" : "", " · wagers in action ", t.wagers_in_action ?? 0,
       " · settled ", el("span", {data: {field: "settled"}}, t.settled)),
    el("div", {class: "row marked", title: board.words.fire, data: {field: "fire_points"}},
       el("span", {class: "lbl"}, "Fire Bet points"), el("span", {class: "marks"}, marks(board.points, t.fire_points))),
    el("div", {class: "row marked", title: board.words.bonus, data: {field: "bonus_marked"}},
       el("span", {class: "lbl"}, "Bonus Craps"), el("span", {class: "marks"}, marks(board.bonus_totals, t.bonus_marked))),
    el("div", {class: "row marked", title: board.words.hot_roller, data: {field: "hot_roller_combos"}},
       el("span", {class: "lbl"}, "Hot Roller"), el("span", {class: "marks"}, marks(board.combinations, t.hot_roller_combos))),
    el("div", {class: "row marked", title: board.words.hot_roller}, el("span", {class: "lbl"}, ""),
       el("span", {}, "numbers complete: ", el("b", {data: {field: "hot_roller_numbers"}},
                                                (t.hot_roller_numbers || []).join(", ") || "none"))),
    el("div", {class: "row marked", title: board.words.hot_shooter}, el("span", {class: "lbl"}, "Hot Shooter"),
       el("span", {}, hs.length ? "throws so far, per group of open wagers: " :
                      t.kind && !t.hot_shooter_offered ? `not offered on a ${t.kind_words} table` : "no open wager",
          el("b", {data: {field: "hot_shooter_throws"}}, hs.join(" · ")))),
    holdTable(t.hold, board.wager_names, true),
    el("div", {class: "row", title: OPEN_ALERTS}, "open alerts ", el("span", {class: "hint"}, "(still standing)"), ": ",
       alertList(t.alerts_open, "alerts_open")),
    el("div", {class: "row last-alert", data: {field: "last_alert"}}, "last alert: ",
       last ? [el("b", {}, last.alert), " seq ", last.seq, " ", timeOf(last.ts),
               (t.alerts_raised || 0) > 1 ? ` (${t.alerts_raised} raised)` : ""]
            : el("span", {class: "none"}, "none raised")),
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
  const holding = [...rows.values()].filter(t => t.at_table && t.at_table.events).length;
  const raised = [...rows.values()].reduce((n, t) => n + (t.alerts_raised || 0), 0);
  document.getElementById("meta").textContent =
    `${rows.size} tables · ${suspended} suspended · ` +
    (holding ? `${holding} with events held at the table · ` : "") + `${alerting} with open alerts (${raised} raised) · view ${instance} · ${status}` +
    (lastPush ? ` · last push ${timeOf(lastPush)}` : "");
}

// A broker node the view's Kafka clients cannot reach: said once, above the tables, until it is back
// or its partitions' leaders have moved (the clients no longer try it).
function brokers(lost) {
  const box = document.getElementById("brokers");
  box.replaceChildren(...(lost || []).map(n => el("div", {data: {node: n.node}},
    el("b", {}, `Kafka broker node ${n.node} lost`), ` since ${timeOf(n.since_ms)} (${n.attempts} failed connections): ` +
    "the view retries it and reads from its partitions' new leaders; the figures below catch up when they answer")));
  box.hidden = !(lost || []).length;
}

window.__floor = {rows, pushes: 0, lastSent: 0};
follow("events/floor", doc => {
  instance = doc.instance;
  brokers(doc.brokers_lost);
  document.getElementById("tables").replaceChildren();
  cards.clear(); rows.clear();
  doc.tables.forEach(put);
  lastPush = Date.now(); window.__floor.lastSent = doc.sent_ms; meta();
}, doc => {
  doc.tables.forEach(put);
  window.__floor.pushes++; window.__floor.lastSent = doc.sent_ms;
  lastPush = Date.now(); meta();
}, s => { status = s; meta(); }, brokers);
