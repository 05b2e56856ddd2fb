"""The report's files: the HTML page in headless Chromium with its plots drawn (Chart.js: a chart per
plot, its points and bars counted, its canvas painted), nothing fetched from a network; the PDF's
pages (pdftotext) and its plots (pdfimages); the CSV columns."""
from __future__ import annotations

import asyncio
import base64
import csv
import os
import re
import shutil
import subprocess
from datetime import date

import aiohttp
import pytest

from craps_streams.report import files
from craps_streams.report.figures import COLUMNS
from tests.chromium import open_page, start_chromium, stop_chromium
from tests.report.report_fixtures import floor, ms, report, write

PAGE_JS = """(() => {
  // pixels painted on a canvas, and those of a colour (within 40 of it on each channel)
  const ink = (c, rgb) => {
    const x = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let any = 0, hue = 0;
    for (let i = 0; i < x.length; i += 4) {
      if (!x[i + 3]) continue;
      any++;
      if (rgb && Math.abs(x[i] - rgb[0]) < 40 && Math.abs(x[i + 1] - rgb[1]) < 40 && Math.abs(x[i + 2] - rgb[2]) < 40) hue++;
    }
    return {any, hue};
  };
  const heights = (ch, i) => ch.getDatasetMeta(i).data.map(b => Math.abs(b.base - b.y));
  const hold = [...document.querySelectorAll('#hold-plots .plot')].map(p => {
    const c = p.querySelector('canvas'), ch = Chart.getChart(c), box = c.getBoundingClientRect();
    const line = ch.getDatasetMeta(0).data;
    return {table: p.dataset.table, points: +p.dataset.points, title: p.querySelector('figcaption').textContent,
            drawn: line.filter(q => Number.isFinite(q.x) && Number.isFinite(q.y) && !q.skip).length,
            band: ch.data.datasets.some(d => d.fill === '-1' && d.data.length === line.length),
            ink: ink(c, [217, 72, 1]), width: box.width, height: box.height};
  });
  const handle = document.querySelector('#handle-plot canvas'), handleChart = Chart.getChart(handle);
  return {
    hold,
    drawn: +document.body.dataset.plotsDrawn, canvases: document.querySelectorAll('canvas').length,
    charts: window.reportCharts.length,
    bars: heights(handleChart, 0).length, barsWanted: +document.getElementById('handle-plot').dataset.bars,
    barHeights: heights(handleChart, 0).filter(h => h > 0).length, handleInk: ink(handle, [49, 163, 84]),
    outcomes: [...document.querySelectorAll('#outcome-plots .plot')].map(p => {
      const c = p.querySelector('canvas'), ch = Chart.getChart(c);
      return {wager: p.dataset.wager, results: +p.dataset.results, title: p.querySelector('figcaption').textContent,
              labels: ch.data.labels, observed: heights(ch, 0), expected: heights(ch, 1), ink: ink(c, [117, 107, 177])};
    }),
    tables: [...document.querySelectorAll('#table-rows tr[data-table]')].map(r => [r.dataset.table, +r.dataset.houseWinCents]),
    fetched: document.querySelectorAll('script[src], link[href], img[src], iframe').length,
    rejections: +document.getElementById('rejections-count').textContent,
  };
})()"""


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report-pages")
    records = floor(3, 4.0, ms("2026-01-05T15:00:00-05:00"), seed=12, bad_rate=0.02)
    rep = report(write(tmp / "floor.jsonl", records), date(2026, 1, 5))
    files.write_csv(rep, tmp / "out")
    html = files.write_html(rep, tmp / "out" / "report.html")
    return rep, html, tmp


def test_the_csv_files_have_their_documented_columns(made):
    rep, _, tmp = made
    for grain, columns in COLUMNS.items():
        with open(tmp / "out" / f"{grain}.csv", newline="") as fo:
            rows = list(csv.reader(fo))
        assert rows[0] == list(columns)
        assert len(rows) - 1 == len(rep[grain]) > 0
    with open(tmp / "out" / "tables.csv", newline="") as fo:
        rows = list(csv.DictReader(fo))
    assert [int(r["house_win_cents"]) for r in rows] == [r["house_win_cents"] for r in rep["tables"]]
    assert {r["investigate"] for r in rows} <= {"yes", "no"}
    # the documented columns are those written (docs/reports.md lists every one)
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "reports.md")).read()
    for columns in COLUMNS.values():
        for c in columns:
            assert f"`{c}`" in doc, c


def test_the_json_file_is_json_dumps_with_an_indent_byte_for_byte(made, tmp_path):
    import json

    rep = made[0]
    hostile = {**rep, "title": "T\u00e9 <script>\u2028\"\\ \U0001f3b2", "floor": rep["floor"][:3]}
    for doc in (rep, hostile):
        path = files.write_json(doc, tmp_path / "report.json")
        assert path.read_bytes() == (json.dumps(doc, indent=1) + "\n").encode()
    # a NaN is no JSON for the formatter: the pure-Python encoder writes it, the same way
    odd = {**hostile, "investigate_at": float("nan")}
    assert files.write_json(odd, tmp_path / "odd.json").read_bytes() == (json.dumps(odd, indent=1) + "\n").encode()


@pytest.mark.timeout(300)
def test_chromium_draws_the_report_with_its_plots(made):
    rep, html, tmp = made
    assert re.search(r"""(src|href)=["']https?:""", html.read_text()) is None
    chromium, port = start_chromium(tmp)
    try:
        page, shot = asyncio.run(_look(port, html.as_uri()))
    finally:
        stop_chromium(chromium)
    hold = rep["plots"]["hold"]
    outcomes = rep["plots"]["outcomes"]
    # one chart per plot, each drawn on its own canvas
    assert page["drawn"] == page["charts"] == page["canvases"] == len(hold) + 1 + len(outcomes)
    assert [h["table"] for h in page["hold"]] == sorted(hold) == ["T001", "T002", "T003"]
    for h in page["hold"]:
        n = len(hold[h["table"]])
        assert n > 20 and h["points"] == n and h["drawn"] == n, h
        assert h["title"] == f"{h['table']}: hold % through the period"
        assert h["band"] and h["width"] > 300 and h["height"] > 150
        assert h["ink"]["any"] > 5000 and h["ink"]["hue"] > 200, h  # the hold line, in its colour
    assert page["bars"] == page["barsWanted"] == len(rep["plots"]["handle_by_hour"]["floor_cents"]) == 24
    assert page["barHeights"] == sum(1 for c in rep["plots"]["handle_by_hour"]["floor_cents"] if c)
    assert page["handleInk"]["hue"] > 2000
    assert [(o["wager"], o["results"]) for o in page["outcomes"]] == [(o["wager"], len(o["results"])) for o in outcomes]
    for drawn, o in zip(page["outcomes"], outcomes):
        assert drawn["labels"] == [r["label"] for r in o["results"]]
        assert len(drawn["observed"]) == len(drawn["expected"]) == len(o["results"])
        assert drawn["ink"]["hue"] > 200, drawn
        assert drawn["title"].endswith(f"({o['paytable']}): {o['wagers']:,} wagers")
        for r, height in zip(o["results"], drawn["observed"]):
            # a win seen once shows a bar of its own beside a loss bar a hundred times taller (log scale)
            assert (height >= 10) if r["observed"] else (height == 0), (o["wager"], r, height)
    assert page["tables"] == [[r["table_id"], r["house_win_cents"]] for r in rep["tables"]]
    assert page["fetched"] == 0
    assert page["rejections"] == rep["exceptions"]["rejections"]["count"] > 0
    png = tmp / "report.png"
    png.write_bytes(shot)
    assert png.stat().st_size > 50_000
    if os.environ.get("CRAPS_REPORT_SCREENSHOT"):  # to look at it
        shutil.copy(png, os.environ["CRAPS_REPORT_SCREENSHOT"])


async def _look(port: int, url: str):
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        dt, ws = await open_page(http, port, url)
        try:
            for _ in range(100):
                if await dt.evaluate("document.readyState") == "complete":
                    break
                await asyncio.sleep(0.2)
            page = await dt.evaluate(PAGE_JS)
            await dt.call("Emulation.setDeviceMetricsOverride", width=1400, height=2000, deviceScaleFactor=1,
                          mobile=False)
            shot = await dt.call("Page.captureScreenshot", format="png")
            assert not dt.errors(), dt.errors()
            return page, base64.b64decode(shot["data"])
        finally:
            await ws.close()


@pytest.mark.timeout(300)
def test_the_pdf_has_the_expected_pages(made):
    rep, html, tmp = made
    assert shutil.which("pdftotext"), "pdftotext is not installed: apt-get install -y poppler-utils (infra/setup.sh test)"
    pdf = files.print_pdf(html, tmp / "report.pdf")
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    texts = [subprocess.run(["pdftotext", "-layout", "-f", str(i), "-l", str(i), str(pdf), "-"],
                            capture_output=True, text=True, check=True).stdout for i in range(1, pages + 1)]
    # each section starts a page, in order
    starts = {}
    for heading in ("Side wagers: gaming day 2026-01-05", "Per table", "Per shift", "Hold against theory",
                    "Exceptions", "Rules Submission in force", "Provenance"):
        found = [i for i, t in enumerate(texts) if t.lstrip().startswith(heading)]
        assert found, f"no page starts with {heading!r}"
        starts[heading] = found[0]
    assert list(starts.values()) == sorted(starts.values())
    assert starts["Side wagers: gaming day 2026-01-05"] == 0
    first = texts[0]
    assert "Floor totals" in first and "month_to_date" in first and "year_to_date" in first
    assert "day:2026-01-05" in first  # a scope is never broken across lines
    rules_page = texts[starts["Rules Submission in force"]]
    assert "4 points 24 to 1" in rules_page and "All Small needs" not in rules_page
    assert "the point numbers 4, 5, 6, 8, 9, 10" in " ".join(rules_page.split())
    total = next(r for r in rep["floor"] if r["scope"] == "day:2026-01-05" and r["wager"] == "all")
    assert files.dollars(total["house_win_cents"]) in first
    tables_page = texts[starts["Per table"]]
    for row in rep["tables"]:
        assert row["table_id"] in tables_page and files.dollars(row["handle_cents"]) in tables_page
    plots = "".join(texts[starts["Hold against theory"]:starts["Exceptions"]])
    for t in ("T001", "T002", "T003"):
        assert f"{t}: hold % through the period" in plots
    assert "Floor handle by hour" in plots
    # every plot printed: each chart's canvas is an image on the plots' pages (pdfimages), none blank
    listed = subprocess.run(["pdfimages", "-list", "-f", str(starts["Hold against theory"] + 1),
                             "-l", str(starts["Exceptions"]), str(pdf)],
                            capture_output=True, text=True, check=True).stdout.splitlines()[2:]
    wanted = len(rep["plots"]["hold"]) + 1 + len(rep["plots"]["outcomes"])
    assert len([x for x in listed if x.split()[2] == "image"]) == wanted, listed
    images = tmp / "pdf-images"
    images.mkdir()
    subprocess.run(["pdfimages", "-png", "-f", str(starts["Hold against theory"] + 1), "-l", str(starts["Exceptions"]),
                    str(pdf), str(images / "plot")], check=True)
    drawn = [png for png in sorted(images.glob("plot-*.png")) if png.stat().st_size > 3_000]
    assert len(drawn) >= wanted, sorted((p.name, p.stat().st_size) for p in images.iterdir())


def test_the_page_is_the_same_from_the_compiled_template_and_from_a_damaged_cache(made, tmp_path, monkeypatch):
    rep, _, _ = made
    cache_in = files._template_cache
    monkeypatch.setattr(files, "_template_cache", lambda: None)
    fresh = files.render_html(rep)  # compiled from the template's text, nothing cached
    cache = tmp_path / "templates"
    cache.mkdir()
    monkeypatch.setattr(files, "_template_cache", lambda: cache_in(str(cache)))
    assert files.render_html(rep) == fresh  # compiles, and writes the compiled template
    (cached,) = cache.iterdir()
    assert cached.stat().st_size > 1000
    assert files.render_html(rep) == fresh  # loads it
    cached.write_bytes(b"j2 not a compiled template")  # damaged: compiled again, and written again
    assert files.render_html(rep) == fresh
    assert cached.read_bytes() != b"j2 not a compiled template"
    monkeypatch.setattr(files, "_template_cache", lambda: cache_in(str(tmp_path / "gone")))
    assert files.render_html(rep) == fresh  # a cache that cannot be written is no failure
    assert not (tmp_path / "gone").exists()
