"use strict";
const charts = frequencyCharts(document.getElementById("charts"));
window.__charts = charts;
async function refresh() {
  const doc = await (await fetch("api/observed")).json();
  for (const [name, chart] of Object.entries(charts)) setFrequencies(chart, name, doc.observed[name], doc.exact[name]);
  document.getElementById("meta").textContent = `${doc.tables} tables · updated ${timeOf(Date.now())}`;
}
// Pushed: the floor stream says when something changed; the counts are then read once.
let pending = false;
follow("events/floor", () => refresh(), () => {
  if (pending) return;
  pending = true;
  setTimeout(() => { pending = false; refresh(); }, 1000);
}, () => {});
