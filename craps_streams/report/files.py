"""A report on disk: CSV (one file per grain), JSON, a self-contained HTML page, and its PDF.

    write_csv(report, dir)    tables.csv, kinds.csv, shifts.csv, floor.csv (columns: docs/reports.md)
    write_json(report, path)  the whole report
    write_html(report, path)  the page: Jinja2 template (report.html, package data), the plots' series as
                              JSON drawn by Chart.js in the browser (both inline); nothing fetched
                              when it is viewed
    print_pdf(html, pdf)      the page printed by headless Chromium (--print-to-pdf)
"""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from craps_streams.report.figures import COLUMNS
from craps_streams.report.rows import CHUNK, RowFile, chunks_of
from craps_streams.rules.wording import WAGER_NAMES
from craps_streams.metrics.unusual import p_text

CSV_FILES = {grain: f"{grain}.csv" for grain in COLUMNS}


def _cell(v) -> str:
    if v is None:
        return ""
    if v is True or v is False:
        return "yes" if v else "no"
    if isinstance(v, float):
        return repr(v) if v and (abs(v) < 1e-4) else f"{v:.10g}"
    return str(v)


def write_csv(report: dict, out_dir) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for grain, name in CSV_FILES.items():
        path = out / name
        with open(path, "w", newline="", encoding="utf-8") as fo:
            w = csv.writer(fo, lineterminator="\n")
            columns = COLUMNS[grain]
            w.writerow(columns)
            for row in report[grain]:
                w.writerow([_cell(row[c]) for c in columns])
        written.append(path)
    return written


def laid_out(value) -> bytes:
    """`json.dumps(value, indent=1)`, byte for byte: encoded in one line by the json module's C
    encoder (its own numbers and escapes), then laid out one value a line by msgspec's formatter,
    which keeps every token as it is. json.dumps with an indent is the module's pure-Python
    encoder, several times slower; a value with a NaN (not JSON, which the formatter refuses) is
    written by it. ASCII (json.dumps escapes the rest)."""
    import msgspec

    line = json.dumps(value).encode()
    try:
        return msgspec.json.format(line, indent=1)
    except msgspec.DecodeError:
        return json.dumps(value, indent=1).encode()


def write_json(report: dict, path) -> Path:
    """The report as `json.dumps(report, indent=1)` writes it, byte for byte (`laid_out`), a
    top-level value at a time, and a grain's rows a chunk of them at a time (on disk or not:
    rows.py `RowFile`), each chunk laid out and set one level deeper: the document is never whole
    in memory, nor are two copies of it."""
    path = Path(path)
    with open(path, "wb") as fo:
        fo.write(b"{")
        for i, (key, value) in enumerate(report.items()):
            fo.write(b"\n " if i == 0 else b",\n ")
            fo.write(json.dumps(key).encode() + b": ")
            if isinstance(value, RowFile) or (type(value) is list and len(value) > CHUNK):
                _write_rows(fo, value)
            else:
                fo.write(laid_out(value).replace(b"\n", b"\n "))
        fo.write(b"\n}\n" if report else b"}\n")
    return path


def _write_rows(fo, rows) -> None:
    """A list of rows (or a `RowFile`) as the value of a top-level key: `[`, its items one level
    deeper than `laid_out` of a chunk sets them (each line of the chunk's body one space further
    in), `]`."""
    if not len(rows):
        fo.write(b"[]")
        return
    fo.write(b"[")
    for i, chunk in enumerate(chunks_of(rows)):
        body = laid_out(chunk)[1:-2]  # "\n {...},\n {...}" without "[" and "\n]"
        fo.write((b"," if i else b"") + body.replace(b"\n", b"\n "))
    fo.write(b"\n ]")


def dollars(cents) -> str:
    if cents is None:
        return ""
    if isinstance(cents, float):
        cents = round(cents)
    sign = "-" if cents < 0 else ""
    cents = abs(int(cents))
    return f"{sign}${cents // 100:,}.{cents % 100:02d}"


def pct(v) -> str:
    return "" if v is None else f"{v:.2f}%"


# ---------------------------------------------------------------- the page

# Chart.js, the floor view's copy (fetched at setup by infra/floor/fetch-assets.sh, MIT), read as a
# file and put inline: the page draws its plots in the reader's browser and fetches nothing.
CHART_JS = ("floor", "static", "vendor", "chart.umd.js")


def chart_js() -> str:
    """Chart.js's source; RuntimeError when it was never fetched."""
    path = resources.files("craps_streams").joinpath(*CHART_JS)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError:
        raise RuntimeError(f"the page's charting library is missing ({'/'.join(CHART_JS)}): "
                           "run infra/floor/fetch-assets.sh (make install does)") from None
    if "</script" in source.lower() or "<!--" in source:
        raise RuntimeError("the charting library cannot be put inline in a <script> element")
    return source


def plot_series(report: dict) -> dict:
    """What the page's script (report-plots.js) draws, from the report's plots' data: each table's
    hold against theory and its band, the floor's handle by hour, each wager's outcomes against the
    exact odds; with each plot's title (the page prints it as text, so it is searchable in the PDF)."""
    from datetime import datetime

    data = report["plots"]
    hold = []
    for table, points in data["hold"].items():
        if not points:
            continue
        hold.append({
            "table": table, "title": f"{table}: hold % through the period",
            "ts": [p["ts"] for p in points],
            # each point's offset from UTC, minutes: the time axis is labelled in the report's local time
            "offset": [int(datetime.fromisoformat(p["time"]).utcoffset().total_seconds()) // 60 for p in points],
            "hold": [p["hold_percent"] if p["hold_percent"] is not None else 0.0 for p in points],
            "theory": [p["theoretical_hold_percent"] or 0.0 for p in points],
            "band": [p["band_percent"] or 0.0 for p in points],
        })
    by_hour = data["handle_by_hour"]
    handle = {"title": "Floor handle by hour (local time of the hour's start)", "labels": by_hour["labels"],
              "dollars": [c / 100 for c in by_hour["floor_cents"]]} if by_hour["floor_cents"] else None
    outcomes = [{"wager": o["wager"],
                 "title": f"{WAGER_NAMES.get(o['wager'], o['wager'])} ({o['paytable']}): {o['wagers']:,} wagers",
                 "labels": [r["label"] for r in o["results"]], "observed": [r["observed"] for r in o["results"]],
                 "expected": [r["expected"] for r in o["results"]]} for o in data["outcomes"]]
    return {"hold": hold, "handle": handle, "outcomes": outcomes}


def script_json(value) -> str:
    """JSON to sit in a <script type="application/json"> element: `<`, `>` and `&` escaped, so no
    text from the history (a table id) can end the element or open another."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True) \
        .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _template_cache(directory: str | None = None):
    """Jinja2's bytecode cache, in `directory` or else in Jinja2's default one (a directory of the
    user's own, mode 0700, in the system's temporary directory, which Jinja2 checks before it uses
    it); None where there is none. Compiling the page's template to Python takes 0.03 s of CPU, a
    tenth of a day's figures. Jinja2 loads the compiled template only where its text is the one
    compiled (the text's checksum is in the cached file, with Jinja2's and Python's versions; any
    other file is compiled again), so the page is the same."""
    import jinja2

    class Cache(jinja2.FileSystemBytecodeCache):
        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:  # a full or read-only disk: the next page compiles the template again
                pass

    try:
        return Cache(directory)
    except (OSError, RuntimeError):  # no temporary directory of the user's own to be had
        return None


def render_html(report: dict) -> str:
    return "".join(_page(report))


def _page(report: dict):
    """The page's text, a piece at a time (Jinja2's `generate`): a report whose rows are on disk
    (rows.py) is read a chunk at a time as the page is written, never whole."""
    import jinja2

    here = resources.files("craps_streams.report")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             loader=jinja2.FunctionLoader(lambda name: here.joinpath(name).read_text(encoding="utf-8")),
                             bytecode_cache=_template_cache())
    # p as the panel and the floor page print it
    env.filters.update(dollars=dollars, pct=pct, prob=p_text, wager=lambda kind: WAGER_NAMES.get(kind, kind))
    template = env.get_template("report.html")
    series = plot_series(report)
    return template.generate(r=report, plots=series, json=json, plot_data=script_json(series),
                             chart_js=chart_js(), plots_js=here.joinpath("report-plots.js").read_text(encoding="utf-8"))


def write_html(report: dict, path) -> Path:
    """The page, with its plots' data and the script that draws them (RuntimeError without Chart.js)."""
    path = Path(path)
    pieces = _page(report)  # Chart.js read first: without it, no file
    with open(path, "w", encoding="utf-8") as fo:
        fo.writelines(pieces)
    return path


def chromium_binary(named: str | None = None) -> str | None:
    """`named` (the setting CRAPS_CHROMIUM), else a Chromium on the PATH."""
    return named or shutil.which("chromium") or shutil.which("chromium-browser") \
        or shutil.which("google-chrome")


def print_pdf(html_path, pdf_path, timeout_s: float = 180.0, chromium: str | None = None) -> Path:
    """The HTML page printed to PDF by headless Chromium (`chromium`, else one on the PATH);
    RuntimeError when it cannot be."""
    chromium = chromium_binary(chromium)
    if chromium is None:
        raise RuntimeError("no Chromium to print the PDF with (apt-get install -y chromium, or set CRAPS_CHROMIUM)")
    html_path, pdf_path = Path(html_path).resolve(), Path(pdf_path).resolve()
    with tempfile.TemporaryDirectory(prefix="craps-report-chromium-") as profile:
        result = subprocess.run(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", f"--user-data-dir={profile}", "--no-pdf-header-footer",
             f"--print-to-pdf={pdf_path}", html_path.as_uri()],
            capture_output=True, text=True, timeout=timeout_s, start_new_session=True)
    if result.returncode != 0 or not pdf_path.exists() or pdf_path.stat().st_size == 0:
        raise RuntimeError(f"chromium could not print {html_path}: {result.stderr.strip()[-500:]}")
    return pdf_path
