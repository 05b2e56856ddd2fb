"""The floor page fits the screen: at a tablet's width (820 px), 1280, 1400 and 1920 px, headless
Chromium shows the page without sideways scrolling, every table card's hold table within its card
(the p column included), each line's hold % and the table's, and says what an open alert is beside
the last alert a table raised. Served from a replayed floor (no broker): eight tables mid-shift, one
suspended by a missing event, two with alerts that are no longer open."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import pytest

from tests.floor.page_shots import floor_history, floor_page_layouts
from tests.floor.replayed import ReplayedFloor

WIDTHS = [820, 1280, 1400, 1920]


def pct(part: int, whole: int) -> str:
    """The page's hold %: one decimal below 100 %, none from 100 % (JavaScript's toFixed, which
    rounds half away from zero on the double's exact value)."""
    if not whole:
        return "—"
    x = 100 * part / whole
    digits = Decimal("0.1") if abs(x) < 100 else Decimal("1")
    return f"{Decimal(x).quantize(digits, ROUND_HALF_UP)}%"


def holds_shown(view: dict) -> list[str]:
    lines = view["hold"]
    out = [pct(h["house_win_cents"], h["handle_cents"]) for h in lines]
    if len(lines) > 1:
        out.append(pct(sum(h["house_win_cents"] for h in lines), sum(h["handle_cents"] for h in lines)))
    return out


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    floor = ReplayedFloor(floor_history())
    work = tmp_path_factory.mktemp("floor-page")
    return floor, floor_page_layouts(floor, WIDTHS, work), work


def test_the_floor_is_mid_shift_with_a_suspended_table_and_past_alerts(layouts):
    floor, _, _ = layouts
    views = floor.views
    assert len(views) == 8 and not any(v["closed"] for v in views.values())
    assert [a["alert"] for a in views["T004"]["alerts_open"]] == ["sequence_gap"]
    past = [t for t, v in views.items() if v["recent_alerts"] and not v["alerts_open"]]
    assert past, "no table with an alert that is no longer open"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_page_and_every_hold_table_fit_at(layouts, width):
    floor, pages, work = layouts
    page = pages[width]
    assert page["errors"] == [] and page["csp"] == []
    assert len(page["cards"]) == len(floor.views)
    assert page["scroll_width"] <= page["inner_width"] == width, f"the page scrolls sideways: {work}/floor-{width}.png"
    for card in page["cards"]:
        where = f"{card['table_id']} at {width} px ({work}/floor-{width}.png)"
        assert card["card"]["right"] <= width, where
        assert card["hold"] is not None, where
        assert card["hold"]["left"] >= card["card"]["left"] and card["hold"]["right"] <= card["content_right"] + 0.5, where
        assert card["hold_scroll"] <= card["hold_client"], where
        assert card["cell_right"] <= card["content_right"] + 0.5, f"a hold cell is cut off: {where}"


@pytest.mark.parametrize("width", WIDTHS)
def test_each_card_gives_the_hold_percent_and_its_last_alert_at(layouts, width):
    floor, pages, _ = layouts
    for card in pages[width]["cards"]:
        view = floor.views[card["table_id"]]
        assert card["hold_pct"] == holds_shown(view), card["table_id"]
        assert [a["alert"] for a in view["alerts_open"]] == card["open_alerts"]
        last = view["recent_alerts"][0] if view["recent_alerts"] else None
        if last is None:
            assert card["last_alert"] == "last alert: none raised"
        else:
            assert card["last_alert"].startswith(f"last alert: {last['alert']} seq {last['seq']} ")
            raised = view["alerts_raised"]
            assert (f"({raised} raised)" in card["last_alert"]) == (raised > 1)
        if view["kind"] == "live":
            assert card["hot_shooter"] == "not offered on a live table"


def test_the_legend_says_what_an_open_alert_is(layouts):
    _, pages, _ = layouts
    legend = pages[1400]["legend"]
    assert "an alert is open while what raised it still stands" in legend
    for word in ("hold (house win ÷ handle)", "theory (the exact house edge", "p (how unusual: the probability, with fair dice",
                 "Hot Shooter", "Hot Roller", "Fire Bet points", "Bonus Craps", "suspended"):
        assert word in legend, word
