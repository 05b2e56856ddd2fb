"""The floor page of a replayed floor in headless Chromium at a chosen width: its layout measured
from the DOM and a screenshot. Serves the pages without a broker (tests/floor/replayed.py folds a
simulated history through the rules core and the view's folds, as the view's agents do).

The README's picture of the floor view is made with it:

    python3 -m tests.floor.page_shots docs/images/floor-view.png

(six tables at 1400 px, reduced to 256 colours with Pillow to keep the file small).
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import pathlib
import sys
import tempfile

from aiohttp import web

from craps_streams.app.web_security import WebConfig
from craps_streams.codec import to_json_line
from craps_streams.floor.hub import ChangeHub
from craps_streams.floor.web import make_floor_web
from craps_streams.sim.floor import floor_events

from tests.chromium import chromium_tab
from tests.conftest import free_port
from tests.floor.replayed import ReplayedFloor

# What the page shows, measured: the page's own width against the window's, and per card its box,
# its hold table's box and the widest right edge of a cell (a cell cut off at the card's edge, or
# spilling over it, shows here), plus the text of what the tests read.
LAYOUT_JS = r"""(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width}; };
  const text = (el, f) => [...el.querySelectorAll(`[data-field="${f}"]`)].map(x => x.textContent.trim());
  return {
    inner_width: window.innerWidth, scroll_width: (document.scrollingElement?.scrollWidth ?? 0),
    csp: window.__cspViolations, legend: document.getElementById("legend")?.textContent ?? "",
    cards: [...document.querySelectorAll("#tables [data-table]")].map(c => {
      const t = c.querySelector("table.hold");
      const style = getComputedStyle(c);
      return {
        table_id: c.dataset.table, card: box(c),
        content_right: c.getBoundingClientRect().right - parseFloat(style.borderRightWidth) - parseFloat(style.paddingRight),
        hold: t ? box(t) : null, hold_scroll: t ? t.scrollWidth : 0, hold_client: t ? t.clientWidth : 0,
        cell_right: t ? Math.max(...[...t.querySelectorAll("td, th")].map(x => x.getBoundingClientRect().right)) : 0,
        hold_pct: text(c, "hold_pct"), p_values: text(c, "p_value"), most_unusual: text(c, "most_unusual")[0] ?? null,
        last_alert: text(c, "last_alert")[0] ?? null,
        open_alerts: [...c.querySelectorAll('[data-field="alerts_open"] [data-alert]')].map(a => a.dataset.alert),
        hot_shooter: c.querySelector('[data-field="hot_shooter_throws"]')?.parentElement.textContent ?? null,
      };
    }),
  };
})()"""


def floor_history(tables: int = 8, hours: float = 3.0, seed: int = 7, share: float = 0.8,
                  gap_table: str | None = "T004") -> list[str]:
    """A simulated floor cut at `share` of its events (the tables still open, hands under way), one
    late event of `gap_table` missing (that table suspended, its sequence_gap alert open)."""
    lines = [to_json_line(record) for record in floor_events(tables, hours, seed, 0.0)]
    lines = lines[:int(len(lines) * share)]
    if gap_table:
        at = [i for i, x in enumerate(lines) if json.loads(x)["table_id"] == gap_table]
        del lines[at[-5]]
    return lines


@contextlib.asynccontextmanager
async def floor_in_chromium(floor: ReplayedFloor, profile: pathlib.Path, hub: ChangeHub | None = None):
    """The floor view's pages of `floor` served on a free port (its changes told through `hub`),
    and a Chromium tab: yields (the tab's DevTools client, the port). Both are stopped whatever the
    outcome."""
    port = free_port()
    runner = web.AppRunner(make_floor_web(floor, hub or ChangeHub(), WebConfig(), "1"), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port).start()
        async with chromium_tab(profile) as dt:
            yield dt, port
    finally:
        await runner.cleanup()


async def _shoot(floor: ReplayedFloor, widths: list[int], out: pathlib.Path | None, profile: pathlib.Path,
                 height: int = 1000) -> dict[int, dict]:
    layouts = {}
    async with floor_in_chromium(floor, profile) as (dt, port):
        for width in widths:
            await dt.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                          deviceScaleFactor=1, mobile=False)
            await dt.call("Page.navigate", url=f"http://127.0.0.1:{port}/")
            layout = None
            for _ in range(100):  # the snapshot arrives over the page's event stream
                await asyncio.sleep(0.2)
                layout = await dt.evaluate(LAYOUT_JS)
                if len(layout["cards"]) == len(floor.table_ids()):
                    break
            await asyncio.sleep(0.3)  # fonts and layout settled
            layout = await dt.evaluate(LAYOUT_JS)
            layout["errors"] = dt.errors()
            layouts[width] = layout
            if out is not None:
                full = await dt.evaluate("(document.scrollingElement?.scrollHeight ?? 0)")
                shot = await dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                     clip={"x": 0, "y": 0, "width": width, "height": full, "scale": 1})
                (out / f"floor-{width}.png").write_bytes(base64.b64decode(shot["data"]))
    return layouts


def floor_page_layouts(floor: ReplayedFloor, widths: list[int], workdir: pathlib.Path,
                       screenshots: bool = True) -> dict[int, dict]:
    """The floor page's layout at each width; its full-page screenshots in `workdir`/floor-W.png."""
    profile = workdir / "chromium"
    profile.mkdir()
    return asyncio.run(_shoot(floor, widths, workdir if screenshots else None, profile))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    target = pathlib.Path(argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        floor_page_layouts(ReplayedFloor(floor_history(tables=6)), [1400], work)
        from PIL import Image  # only for the picture: a palette PNG is a third of the size

        target.parent.mkdir(parents=True, exist_ok=True)
        with Image.open(work / "floor-1400.png") as shot:
            shot.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(target, optimize=True)
    print(f"{target}: {target.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
