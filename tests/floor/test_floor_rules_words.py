"""The pages say each table's own Rules Submission: a table opened with its own Fire Bet paytable
(`fire_custom`, § 601a.2) shows its own pays on the table page and in its floor card, the default
table the default ones; the table page shows the codes of its markers, settlements and kind in
words, and its settlements' column headers stand apart at a tablet's width. Served from a replayed
floor (no broker) in headless Chromium; screenshots at 820 and 1400 px in the test's directory."""
from __future__ import annotations

import asyncio
import base64
import pathlib
from urllib.parse import quote

import pytest

from craps_streams.codec import to_json_line
from craps_streams.sim.floor import floor_events

from tests.floor.page_shots import floor_in_chromium
from tests.floor.replayed import ReplayedFloor

CUSTOM = {"fire_custom": {"3": 10, "4": 50, "6": 500}}
CUSTOM_TABLE = '<img src=x onerror="window.__pwned=1">T002'  # a hostile id, with its own paytable
WIDTHS = (820, 1400)

TABLE_JS = r"""(() => {
  const q = s => [...document.querySelectorAll(s)];
  // Where each header's text lies (not its cell): the space between two is what the eye sees.
  const textBoxes = sel => q(sel).map(th => {
    const r = document.createRange(); r.selectNodeContents(th); return r.getBoundingClientRect(); });
  const gaps = boxes => boxes.slice(1).map((r, i) => r.left - boxes[i].right);
  return {
    pwned: window.__pwned ?? null, csp: window.__cspViolations,
    kind: document.querySelector('#now [data-field="kind"]')?.textContent ?? null,
    fire_title: document.querySelector('#now [data-field="fire_points"]')?.title ?? null,
    fire_marks: q('#now [data-field="fire_points"] .mk').map(m => m.textContent),
    combos: q('#now [data-field="hot_roller_combos"] .mk').map(m => m.textContent),
    bonus: q('#now [data-field="bonus_marked"] .mk').map(m => m.textContent),
    shooter_title: document.querySelector('#now .row.layout:last-child')?.title ?? null,
    rules: Object.fromEntries(q('#rules dd').map(d => [d.dataset.rule, d.previousElementSibling.textContent + ": " + d.textContent])),
    hand: q("#hand li").map(li => li.textContent),
    settlements: q('[data-settlement]').map(tr => [...tr.cells].map(c => c.textContent)),
    head_gaps: gaps(textBoxes('[data-field="settlements"] th')),
    hold_head_gaps: gaps(textBoxes('#hold table.hold th')),
    inner_width: window.innerWidth, scroll_width: (document.scrollingElement?.scrollWidth ?? 0),
  };
})()"""

FLOOR_JS = r"""(() => Object.fromEntries([...document.querySelectorAll("#tables [data-table]")].map(c =>
  [c.dataset.table, {fire: c.querySelector('[data-field="fire_points"]')?.title ?? null,
                     kind: c.querySelector('[data-field="kind"]')?.textContent ?? null}])))()"""


def history() -> list[str]:
    lines = []
    for record in floor_events(3, 1.0, 11, 0.0):
        if record["table_id"] == "T002" and record["type"] == "TableOpened":
            record = {**record, "rules": CUSTOM}
        lines.append(to_json_line(record))
    return lines[:int(len(lines) * 0.8)]  # mid-shift: the tables open, hands under way


async def _read(floor: ReplayedFloor, work: pathlib.Path) -> dict:
    seen: dict = {"table": {}, "floor": None}
    async with floor_in_chromium(floor, work) as (dt, port):
        async def load(url: str, js: str, ready) -> dict:
            await dt.call("Page.navigate", url=url)
            got = None
            for _ in range(100):  # the snapshot arrives over the page's event stream
                await asyncio.sleep(0.2)
                got = await dt.evaluate(js)
                if ready(got):
                    break
            await asyncio.sleep(0.5)  # the charts drawn
            return await dt.evaluate(js)

        for width in WIDTHS:
            await dt.call("Emulation.setDeviceMetricsOverride", width=width, height=1000,
                          deviceScaleFactor=1, mobile=False)
            for name, table in (("default", "T001"), ("custom", CUSTOM_TABLE)):
                url = f"http://127.0.0.1:{port}/table?id={quote(table, safe='')}"
                page = await load(url, TABLE_JS, lambda g: bool(g["fire_title"]))
                page["errors"] = dt.errors()
                seen["table"][name, width] = page
                # The top of the page (the layout, the rules, the hand, the hold): a whole
                # page's capture is seconds of work on a loaded machine.
                full = min(2000, await dt.evaluate("(document.scrollingElement?.scrollHeight ?? 0)"))
                shot = await dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                                     clip={"x": 0, "y": 0, "width": width, "height": full, "scale": 1})
                (work / f"table-{name}-{width}.png").write_bytes(base64.b64decode(shot["data"]))
        seen["floor"] = await load(f"http://127.0.0.1:{port}/", FLOOR_JS, lambda g: len(g) == 3)
    return seen


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    work = tmp_path_factory.mktemp("rules-words")
    floor = ReplayedFloor(history())
    # The contract refuses such an id (tests/rules/test_input_limits.py); the page must still show it
    # as text, as tests/floor/test_floor_hostile_ids.py gives the folded views hostile ids.
    floor.views[CUSTOM_TABLE] = {**floor.views.pop("T002"), "table_id": CUSTOM_TABLE}
    assert floor.views[CUSTOM_TABLE]["rules"] == CUSTOM
    return floor, asyncio.run(_read(floor, work)), work


@pytest.mark.parametrize("width", WIDTHS)
def test_each_table_shows_its_own_fire_paytable(pages, width):
    _, seen, work = pages
    default, custom = seen["table"]["default", width], seen["table"]["custom", width]
    for page in (default, custom):
        assert page["errors"] == [] and page["csp"] == [] and page["pwned"] is None, work
        assert 0 < page["scroll_width"] <= page["inner_width"], f"the page scrolls sideways: {work}"
        assert page["fire_marks"] == ["4", "5", "6", "8", "9", "10"]
        assert len(page["combos"]) == 14 and page["combos"][:2] == ["1-3", "2-2"]
        assert page["bonus"] == ["2", "3", "4", "5", "6", "8", "9", "10", "11", "12"]
    assert "Pays from 4 points, at the seven-out: fewer than 4 points lose; 4 points 24 to 1" in default["fire_title"]
    assert "Pays from 3 points, at the seven-out: fewer than 3 points lose; 3 points 10 to 1; " \
           "4-5 points 50 to 1; 6 points 500 to 1" in custom["fire_title"]
    assert "Pays from 4" not in custom["fire_title"]
    # The rules in force, written out on the page (not only in a tooltip).
    assert custom["rules"]["fire"].startswith("Fire Bet (§ 623a.11): the distinct points")
    assert custom["rules"]["fire"].endswith("fewer than 3 points lose; 3 points 10 to 1; 4-5 points 50 to 1; "
                                            "6 points 500 to 1")
    assert default["rules"]["fire"].endswith("4 points 24 to 1; 5 points 249 to 1; 6 points 999 to 1")
    for page in (default, custom):
        assert "All Small needs 2-6 (34 to 1)" in page["rules"]["bonus"]
        assert "Pays at the seven-out from 2 complete numbers" in page["rules"]["hot_roller"]


def test_hot_shooter_words_where_it_is_offered(pages):
    floor, seen, _ = pages
    for name, table in (("default", "T001"), ("custom", CUSTOM_TABLE)):
        page, kind = seen["table"][name, 1400], floor.views[table]["kind"]
        assert page["kind"] == {"live": "live", "hybrid": "hybrid", "fully_automated": "fully automated electronic"}[kind]
        assert ("hot_shooter" in page["rules"]) == (kind != "live")
        assert "Pushes at 8-15 throws, pays from 16 throws" in page["shooter_title"]


@pytest.mark.parametrize("width", WIDTHS)
def test_codes_are_shown_in_words(pages, width):
    _, seen, work = pages
    for name in ("default", "custom"):
        page = seen["table"][name, width]
        text = " ".join(page["hand"]) + " ".join(" ".join(row) for row in page["settlements"])
        assert page["hand"] and page["settlements"], work
        for code in ("combo-", "point-", "total-", "number-", "seven_out", "fully_automated", "points=",
                     "numbers=", "throws=", "all_small", "all_or_nothing", "hot_roller", "hot_shooter"):
            assert code not in text, (code, name, width)
        assert min(page["head_gaps"]) >= 8, f"settlement headers run together at {width} px: {work}"
        assert len(page["hold_head_gaps"]) == 5 and min(page["hold_head_gaps"]) >= 8, \
            f"hold headers run together at {width} px: {work}"


def test_the_floor_cards_carry_each_tables_own_words(pages):
    floor, seen, _ = pages
    cards = seen["floor"]
    assert set(cards) == set(floor.views)
    assert "Pays from 3 points" in cards[CUSTOM_TABLE]["fire"]
    assert "Pays from 4 points" in cards["T001"]["fire"] and "Pays from 4 points" in cards["T003"]["fire"]
    assert "_" not in "".join(c["kind"] for c in cards.values())
