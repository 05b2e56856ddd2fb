"""A report on disk: CSV (one file per grain), JSON, a self-contained HTML page, and its PDF.

    write_csv(report, dir)    tables.csv, kinds.csv, shifts.csv, floor.csv (columns: docs/reports.md)
    write_json(report, path)  the whole report
    write_html(report, path)  the page: Jinja2 template (report.html, package data), plots drawn by
                              matplotlib as inline SVG; nothing fetched when it is viewed
    print_pdf(html, pdf)      the page printed by headless Chromium (--print-to-pdf)
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from craps_streams.report.figures import COLUMNS
from craps_streams.report.jobs import in_processes
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


def write_json(report: dict, path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return path


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


# ---------------------------------------------------------------- plots


def _pyplot():
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "craps-streams-report",
                         "font.size": 8, "axes.titlesize": 9, "figure.dpi": 72})
    _one_mathtext_cache()
    return plt


def _one_mathtext_cache() -> None:
    """Let matplotlib's cache of parsed math text serve every figure. It is keyed by the parser, and
    each renderer makes a parser of its own (two per figure, the tight box's and the output's), so
    every log-scale tick label (`10^{2}`, as math text) was parsed anew, by pyparsing, twice per plot:
    half of an outcome plot's time. Parsers of one output type parse alike (the grammar is the
    class's), so they are made equal for the cache's key; the parses and the SVG are the same."""
    from matplotlib.mathtext import MathTextParser

    if getattr(MathTextParser, "_craps_shared", False) or not hasattr(MathTextParser("path"), "_output_type"):
        return
    MathTextParser.__eq__ = lambda a, b: type(a) is type(b) and a._output_type == b._output_type
    MathTextParser.__hash__ = lambda self: hash((MathTextParser, self._output_type))
    MathTextParser._craps_shared = True


def _svg(fig, plt) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def hold_plot(table: str, points: list[dict], plt) -> str:
    """A table's hold % through the period against its theoretical hold and the 95 % band."""
    from datetime import datetime

    xs = [datetime.fromisoformat(p["time"]) for p in points]
    hold = [p["hold_percent"] if p["hold_percent"] is not None else 0.0 for p in points]
    theory = [p["theoretical_hold_percent"] or 0.0 for p in points]
    band = [p["band_percent"] or 0.0 for p in points]
    fig, ax = plt.subplots(figsize=(4.2, 2.2))
    fill = ax.fill_between(xs, [t - b for t, b in zip(theory, band)], [t + b for t, b in zip(theory, band)],
                           color="#9ecae1", alpha=0.5, label="theory ± 1.96 sd", linewidth=0)
    fill.set_gid(f"hold-band-{table}")
    (t_line,) = ax.plot(xs, theory, color="#3182bd", linewidth=1, label="theoretical hold")
    t_line.set_gid(f"hold-theory-{table}")
    (h_line,) = ax.plot(xs, hold, color="#d94801", linewidth=1.2, marker="o", markersize=1.5, label="hold")
    h_line.set_gid(f"hold-line-{table}")
    ax.set_title(f"{table}: hold % through the period")
    ax.set_ylabel("%")
    lo = min(min(hold), min(t - b for t, b in zip(theory, band)))
    hi = max(max(hold), max(t + b for t, b in zip(theory, band)))
    ax.set_ylim(max(lo, -100) - 2, min(hi, 100) + 2)
    ax.legend(loc="best", fontsize=6)
    fig.autofmt_xdate()
    return _svg(fig, plt)


def handle_plot(handle: dict, plt) -> str:
    cents = handle["floor_cents"]
    labels = handle["labels"]
    fig, ax = plt.subplots(figsize=(9, 2.6))
    bars = ax.bar(range(len(cents)), [c / 100 for c in cents], color="#31a354")
    for i, bar in enumerate(bars):
        bar.set_gid(f"handle-bar-{i}")
    step = max(1, len(labels) // 24)
    ax.set_xticks(range(0, len(labels), step))
    ax.set_xticklabels(labels[::step], rotation=60, ha="right")
    ax.set_ylabel("handle ($)")
    ax.set_title("Floor handle by hour (local time of the hour's start)")
    return _svg(fig, plt)


def outcome_plot(o: dict, plt) -> str:
    results = o["results"]
    labels = [r["label"] for r in results]
    fig, ax = plt.subplots(figsize=(4.2, 2.4))
    xs = range(len(results))
    bars = ax.bar([x - 0.2 for x in xs], [r["observed"] for r in results], width=0.4, color="#756bb1",
                  label="observed")
    for i, bar in enumerate(bars):
        bar.set_gid(f"outcome-{o['wager']}-{i}")
    ax.bar([x + 0.2 for x in xs], [r["expected"] for r in results], width=0.4, color="#bcbddc",
           label="expected (exact odds)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=6)
    top = max((max(r["observed"], r["expected"]) for r in results), default=0)
    if top > 0:
        # A log scale, so a rare win's bar shows beside a loss bar a hundred times taller, and a
        # decade of headroom above the tallest bar for the legend.
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(0, top * 10)
    ax.set_title(f"{WAGER_NAMES.get(o['wager'], o['wager'])} ({o['paytable']}): {o['wagers']:,} wagers")
    ax.legend(fontsize=6, loc="upper center", ncol=2)
    return _svg(fig, plt)


PLOTS = {"hold": hold_plot, "handle": handle_plot, "outcome": outcome_plot}


def _plot(kind: str, *args) -> str:
    return PLOTS[kind](*args, _pyplot())


def plots(report: dict, jobs: int = 1) -> dict:
    """The page's plots as SVG, drawn in `jobs` processes (`craps_streams.report.jobs`)."""
    data = report["plots"]
    holds = [(t, pts) for t, pts in data["hold"].items() if pts]
    handle = data["handle_by_hour"] if data["handle_by_hour"]["floor_cents"] else None
    tasks = [("hold", t, pts) for t, pts in holds] + ([("handle", handle)] if handle is not None else []) \
        + [("outcome", o) for o in data["outcomes"]]
    svgs = in_processes(_plot, tasks, jobs)  # in the order one process draws them
    outcomes = svgs[len(tasks) - len(data["outcomes"]):]
    return {
        "hold": [(t, svg) for (t, _), svg in zip(holds, svgs)],
        "handle": svgs[len(holds)] if handle is not None else "",
        "outcomes": list(zip(data["outcomes"], outcomes)),
    }


# ---------------------------------------------------------------- the page


def render_html(report: dict, jobs: int = 1) -> str:
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    # p as the panel and the floor page print it
    env.filters.update(dollars=dollars, pct=pct, prob=p_text, wager=lambda kind: WAGER_NAMES.get(kind, kind))
    template = env.from_string(resources.files("craps_streams.report").joinpath("report.html").read_text(encoding="utf-8"))
    return template.render(r=report, plots=plots(report, jobs), json=json)


def write_html(report: dict, path, jobs: int = 1) -> Path:
    """The page, its plots drawn in `jobs` processes."""
    path = Path(path)
    path.write_text(render_html(report, jobs), encoding="utf-8")
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
