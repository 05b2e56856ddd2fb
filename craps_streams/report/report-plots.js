"use strict";
// The report's plots, drawn by Chart.js from the series the page carries (files.plot_series): each
// table's hold against theory and its band, the floor's handle by hour, each wager's outcomes
// against the exact odds. Drawn at once, without animation, so a print (the PDF) shows them all;
// document.body.dataset.plotsDrawn says how many were drawn.
(() => {
  const series = JSON.parse(document.getElementById("plot-data").textContent);
  Chart.defaults.font.family = '"DejaVu Sans", Arial, sans-serif';
  Chart.defaults.font.size = 9;
  Chart.defaults.color = "#222";
  const common = {animation: false, responsive: false, devicePixelRatio: 2, events: ["mousemove", "mouseout"]};
  const two = n => String(n).padStart(2, "0");
  const charts = [];

  // The time axis in the report's time zone: a tick at UTC time v is labelled with the offset of
  // the point nearest it (the points carry theirs: a period may cross a change of clocks).
  function localLabel(ts, offsets, v) {
    let lo = 0, hi = ts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ts[mid] < v) lo = mid + 1; else hi = mid;
    }
    const d = new Date(v + offsets[lo] * 60000);
    return `${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
  }

  // A tick every so many minutes or hours, at most about six across the period.
  function timeStep(span) {
    const minutes = [5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080, 20160];
    const m = minutes.find(m => span / (m * 60000) <= 6);
    return (m || 43200) * 60000;
  }

  function hold(canvas, h) {
    const xy = ys => ys.map((y, i) => ({x: h.ts[i], y}));
    const low = h.theory.map((t, i) => t - h.band[i]), high = h.theory.map((t, i) => t + h.band[i]);
    const lo = Math.max(Math.min(...h.hold, ...low), -100) - 2, hi = Math.min(Math.max(...h.hold, ...high), 100) + 2;
    return new Chart(canvas, {
      type: "line",
      data: {datasets: [
        {label: "hold", data: xy(h.hold), borderColor: "#d94801", backgroundColor: "#d94801", borderWidth: 1.2,
         pointRadius: 1.5, order: 0},
        {label: "theoretical hold", data: xy(h.theory), borderColor: "#3182bd", borderWidth: 1, pointRadius: 0, order: 1},
        {label: "", data: xy(low), borderWidth: 0, pointRadius: 0, fill: false, order: 3},
        {label: "theory ± 1.96 sd", data: xy(high), borderWidth: 0, pointRadius: 0, fill: "-1",
         backgroundColor: "rgba(158,202,225,.5)", borderColor: "rgba(158,202,225,.5)", order: 2},
      ]},
      options: {...common, parsing: false, normalized: true,
        plugins: {legend: {labels: {boxWidth: 10, font: {size: 8}, filter: item => item.text !== ""}}},
        scales: {
          x: {type: "linear", ticks: {stepSize: timeStep(h.ts[h.ts.length - 1] - h.ts[0]), maxRotation: 30,
                                       callback: v => localLabel(h.ts, h.offset, v)}},
          y: {min: lo, max: hi, title: {display: true, text: "%"}}}},
    });
  }

  function handle(canvas, d) {
    return new Chart(canvas, {
      type: "bar",
      data: {labels: d.labels, datasets: [{label: "handle ($)", data: d.dollars, backgroundColor: "#31a354"}]},
      options: {...common, plugins: {legend: {display: false}},
        scales: {x: {ticks: {minRotation: 60, maxRotation: 60, autoSkip: true, maxTicksLimit: 24}},
                 y: {title: {display: true, text: "handle ($)"}}}},
    });
  }

  // Counts on a log scale that keeps zero (log10(1 + n)), so a rare win's bar shows beside a loss bar
  // a hundred times taller; a decade of headroom above the tallest bar for the legend.
  const up = n => Math.log10(1 + n), down = v => Math.pow(10, v) - 1;

  function outcome(canvas, o) {
    const top = Math.max(0, ...o.observed, ...o.expected);
    const raw = [o.observed, o.expected];
    const decades = [];  // 1, 10, 100, ... (0 is the axis itself)
    for (let n = 1; n <= top * 10; n *= 10) decades.push(n);
    return new Chart(canvas, {
      type: "bar",
      data: {labels: o.labels, datasets: [
        {label: "observed", data: o.observed.map(up), backgroundColor: "#756bb1"},
        {label: "expected (exact odds)", data: o.expected.map(up), backgroundColor: "#bcbddc"},
      ]},
      options: {...common,
        plugins: {legend: {position: "top", labels: {boxWidth: 10, font: {size: 8}}},
                  tooltip: {callbacks: {label: c => `${c.dataset.label}: ${raw[c.datasetIndex][c.dataIndex].toLocaleString("en-US")}`}}},
        scales: {x: {ticks: {minRotation: 45, maxRotation: 45, autoSkip: false, font: {size: 7}}},
                 y: {min: 0, max: top > 0 ? up(top * 10) : 1,
                     afterBuildTicks: axis => { axis.ticks = decades.filter(n => up(n) <= axis.max).map(n => ({value: up(n)})); },
                     ticks: {callback: v => Math.round(down(v)).toLocaleString("en-US")},
                     title: {display: true, text: "wagers"}}}},
    });
  }

  const holdCanvases = document.querySelectorAll("#hold-plots canvas");
  series.hold.forEach((h, i) => charts.push(hold(holdCanvases[i], h)));
  if (series.handle) charts.push(handle(document.querySelector("#handle-plot canvas"), series.handle));
  const outcomeCanvases = document.querySelectorAll("#outcome-plots canvas");
  series.outcomes.forEach((o, i) => charts.push(outcome(outcomeCanvases[i], o)));
  window.reportCharts = charts;
  document.body.dataset.plotsDrawn = String(charts.length);
})();
