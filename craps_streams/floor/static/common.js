// Shared by the floor view's pages. Every string from an event reaches the page as text
// (textContent, or an attribute of a known safe kind via dataset / href built here): no innerHTML.
"use strict";
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", e => window.__cspViolations.push(e.violatedDirective));

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = String(dv);
    else if (k === "href") node.href = v;
    else if (k === "title") node.title = String(v);
    else throw new Error("el: unsupported property " + k);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const money = c => (c < 0 ? "-" : "") + "$" + (Math.abs(c) / 100).toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2});
// Whole dollars (the floor's cards; their tooltips and the table page give the cents).
const dollars = c => (c < 0 ? "-" : "") + "$" + Math.round(Math.abs(c) / 100).toLocaleString("en-US");
const timeOf = ms => ms ? new Date(ms).toLocaleTimeString("en-US", {hour12: false}) : "—";
const tableHref = id => "table?id=" + encodeURIComponent(id);

// A row's `board` (craps_streams/rules/board.py, from the table's Rules Submission) gives the numbers
// each layout marks, the wagers' names and each paytable in words: none is written here.
const NO_BOARD = {points: [], bonus_totals: [], combinations: [], paytables: {}, wager_names: {}, words: {}};
const boardOf = t => t.board || NO_BOARD;

function marks(all, on) {
  const set = new Set((on || []).map(String));
  return all.map(x => el("span", {class: "mk" + (set.has(String(x)) ? " on" : "")}, x));
}

const pct = (part, whole) => {
  if (!whole) return "—";
  const x = 100 * part / whole;
  return x.toFixed(Math.abs(x) < 100 ? 1 : 0) + "%";
};
// A paytable id names its wager, then its section and variant (hot-roller-623c.1h-A): under the
// wager's name the section and variant suffice; the cell's tooltip has the whole id.
const paytableShort = id => String(id).replace(/^[a-z_-]+-(?=\d)/, "");
const HOLD_HEADS = [
  ["wager", "The side wager; below it the paytable it settles by (its section and variant) and the wagers settled"],
  ["handle", "Stakes of the settled wagers"],
  ["house win", "Stakes the house collected minus what players won: what the house kept"],
  ["hold", "Hold: house win ÷ handle"],
  ["theory", "The exact house edge of this wager and paytable: the hold expected over many decisions " +
             "(the cell's tooltip gives the expected house win in dollars)"],
  ["p", "How unusual the line is: the probability, with fair dice, of a house win at least this far from " +
        "theory either side (exact tails; the report's p). Red at or below the investigation level (0.05) or while " +
        "surveillance's hold alert stands; the cell's tooltip says it in words and gives the z " +
        "(standard deviations from theory), which for jackpot wagers is no yardstick"],
];

// The hold line least probable with fair dice, said in words under the hold table.
function mostUnusual(lines, names) {
  const measured = lines.filter(h => h.p_value !== null && h.p_value !== undefined);
  if (!measured.length) return null;
  const h = measured.reduce((a, b) => b.p_value < a.p_value ? b : a);
  return el("div", {class: "unusual" + (h.investigate ? " alerted" : ""), data: {field: "most_unusual", wager: h.wager}},
    "most unusual: ", el("b", {}, names[h.wager] || h.wager), " p ", el("b", {}, h.p_text), ": ", h.unusual);
}

// Hold against theory per wager and paytable, and the table's total (a p needs independent lines,
// and a table's wagers share its dice, so the total has none). `whole`: amounts in whole dollars,
// the cents in each cell's tooltip (the floor's narrow cards); `names`: the wagers' names (the board's).
function holdTable(hold, names, whole = false) {
  return el("div", {class: "holdbox"}, holdLines(hold, names, whole), mostUnusual(hold || [], names));
}

function holdLines(hold, names, whole) {
  const lines = hold || [];
  const amount = (c, cls) => el("td", {class: cls, title: whole ? money(c) : undefined}, whole ? dollars(c) : money(c));
  const sum = k => lines.reduce((s, h) => s + h[k], 0);
  const total = lines.length > 1 ? el("tr", {class: "total", data: {field: "hold_total"}},
    el("td", {class: "wager"}, "all wagers", el("span", {class: "paytable"}, sum("settled"), " settled")),
    amount(sum("handle_cents")), amount(sum("house_win_cents"), sum("house_win_cents") < 0 ? "neg" : "pos"),
    el("td", {data: {field: "hold_pct"}}, pct(sum("house_win_cents"), sum("handle_cents"))),
    el("td", {title: "expected house win " + money(sum("expected_house_win_cents"))},
       pct(sum("expected_house_win_cents"), sum("handle_cents"))),
    el("td", {})) : null;
  return el("table", {class: "hold"},
    el("tr", {}, HOLD_HEADS.map(([h, tip]) => el("th", {title: tip}, h))),
    lines.map(h => el("tr", {data: {wager: h.wager}},
      el("td", {class: "wager", title: h.wager + " · paytable " + h.paytable}, names[h.wager] || h.wager,
         el("span", {class: "paytable"}, paytableShort(h.paytable), " · ", h.settled, " settled")),
      amount(h.handle_cents), amount(h.house_win_cents, h.house_win_cents < 0 ? "neg" : "pos"),
      el("td", {data: {field: "hold_pct"}}, pct(h.house_win_cents, h.handle_cents)),
      el("td", {title: "expected house win " + money(h.expected_house_win_cents)},
         pct(h.expected_house_win_cents, h.handle_cents)),
      el("td", {class: h.alerted || h.investigate ? "alerted" : "", data: {field: "p_value"},
                title: (h.unusual ? `p ${h.p_text}: ${h.unusual}. ` : "no decision by the dice yet. ") +
                       `House win ${money(h.house_win_cents)} against ${money(h.expected_house_win_cents)} expected, ` +
                       `z ${Number(h.z_score).toFixed(2)} (standard deviation ${money(h.std_dev_cents)})`},
         h.p_text ?? "—"))),
    total);
}

function alertList(alerts, field) {
  if (!alerts || !alerts.length) return el("div", {class: "none", data: {field}}, "none");
  return el("ul", {class: "alerts", data: {field}},
    alerts.map(a => el("li", {data: {alert: a.alert}}, el("b", {}, a.alert), " seq ", a.seq, " ", timeOf(a.ts), ": ", a.message)));
}

// What each line of a table's layout means, for its tooltip; the wagers' lines are the board's words.
const TIPS = {
  shooter: "The shooter now, the position they throw from, the hand's number at this table, and how many valid " +
           "throws this hand has had",
  point: "The pass-line point (off: the next throw is a come-out roll); wagers in action: side wagers placed and " +
         "not yet settled; settled: side wagers settled at this table",
};

const OPEN_ALERTS = "An alert is open while what raised it still stands: a sequence gap while the table is suspended, " +
  "a hold anomaly while its line is beyond the threshold, a four-point Fire Bet while that shooter's Fire layout " +
  "shows four points or more. Large wins, resumptions, dice bias and position anomalies are news, not open matters: " +
  "they show as the last alert and under the table page's recent alerts.";


// A pushed stream (server-sent events): `snapshot` first, then `update`s; reconnects by itself.
function follow(url, onSnapshot, onUpdate, onStatus, onBrokers) {
  const source = new EventSource(url);
  source.addEventListener("snapshot", e => { onStatus("live"); onSnapshot(JSON.parse(e.data)); });
  source.addEventListener("update", e => onUpdate(JSON.parse(e.data)));
  if (onBrokers) source.addEventListener("brokers", e => onBrokers(JSON.parse(e.data).brokers_lost));
  source.onerror = () => onStatus("reconnecting…");
  return source;
}

// House win against theory over event time, with the expected band (theory ± 2 standard deviations).
function holdChart(canvas) {
  return new Chart(canvas, {
    type: "line",
    data: {datasets: [
      {label: "theory + 2σ", data: [], borderWidth: 0, pointRadius: 0, fill: false, borderColor: "rgba(120,200,255,.3)", backgroundColor: "rgba(120,200,255,.18)"},
      {label: "theory − 2σ", data: [], borderWidth: 0, pointRadius: 0, fill: "-1", borderColor: "rgba(120,200,255,.3)", backgroundColor: "rgba(120,200,255,.18)"},
      {label: "theory", data: [], borderDash: [6, 4], pointRadius: 0, borderColor: "#7cf", borderWidth: 1.5},
      {label: "house win", data: [], pointRadius: 1.5, borderColor: "#fd4", backgroundColor: "#fd4", borderWidth: 2},
    ]},
    options: {animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
      plugins: {legend: {labels: {color: "#ddd", boxWidth: 12}}},
      scales: {
        x: {type: "linear", ticks: {color: "#bbb", callback: v => timeOf(v), maxTicksLimit: 6}, grid: {color: "#244"}},
        y: {ticks: {color: "#bbb", callback: v => money(v)}, grid: {color: "#244"}}}},
  });
}

function setHoldSeries(chart, points) {
  // points: [ts, settled, house_win, expected, sd]
  const p = points || [];
  chart.data.datasets[0].data = p.map(q => ({x: q[0], y: q[3] + 2 * q[4]}));
  chart.data.datasets[1].data = p.map(q => ({x: q[0], y: q[3] - 2 * q[4]}));
  chart.data.datasets[2].data = p.map(q => ({x: q[0], y: q[3]}));
  chart.data.datasets[3].data = p.map(q => ({x: q[0], y: q[2]}));
  chart.update("none");
}

const DISTRIBUTIONS = {
  fire_points: "Fire Bet: distinct points made by the seven-out",
  bonus_all_small: "Bonus Craps: All Small before a 7",
  bonus_all_tall: "Bonus Craps: All Tall before a 7",
  bonus_all_or_nothing: "Bonus Craps: All or Nothing before a 7",
  hot_roller: "Hot Roller: numbers complete at the first 7",
  hand_length: "Hand length (Hot Shooter: throws, come-out to seven-out; 40 = 40 or more)",
};

// Observed share of each outcome against its exact probability (craps_streams.odds).
// A win/lose race (Bonus Craps: its wager complete or "7 first") is drawn on a log scale: its win
// bar, well under 5 %, would be a sliver beside a "7 first" bar of over 95 %.
function frequencyChart(canvas, logScale = false) {
  const y = logScale
    ? {type: "logarithmic", min: 0.001, max: 1, ticks: {color: "#bbb", callback: v => [0.001, 0.01, 0.1, 1].includes(v) ? (100 * v) + "%" : ""},
       grid: {color: "#244"}}
    : {ticks: {color: "#bbb", callback: v => (100 * v).toFixed(0) + "%"}, grid: {color: "#244"}};
  return new Chart(canvas, {
    type: "bar",
    data: {labels: [], datasets: [
      {label: "observed", data: [], backgroundColor: "#fd4"},
      {label: "exact", data: [], backgroundColor: "rgba(120,200,255,.7)"},
    ]},
    options: {animation: false, responsive: true, maintainAspectRatio: false,
      plugins: {legend: {labels: {color: "#ddd", boxWidth: 12}}, title: {display: true, color: "#eee", text: ""}},
      scales: {x: {ticks: {color: "#bbb"}, grid: {color: "#244"}}, y}},
  });
}

function setFrequencies(chart, name, observed, exact) {
  const labels = Object.keys(exact || {});
  const counts = observed || {};
  const n = labels.reduce((s, k) => s + (counts[k] || 0), 0);
  chart.data.labels = labels;
  chart.data.datasets[0].data = labels.map(k => n ? (counts[k] || 0) / n : 0);
  chart.data.datasets[1].data = labels.map(k => exact[k]);
  chart.options.plugins.title.text = `${DISTRIBUTIONS[name] || name} · n = ${n}`;
  chart.update("none");
}

function frequencyCharts(container) {
  const charts = {};
  for (const name of Object.keys(DISTRIBUTIONS)) {
    const canvas = el("canvas", {data: {chart: name}});
    container.append(el("div", {class: "chartbox"}, canvas));
    charts[name] = frequencyChart(canvas, name.startsWith("bonus_"));
  }
  return charts;
}
