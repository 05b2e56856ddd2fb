"""The simulated dealers enter events as a table's equipment does: without the controller's fields."""
from __future__ import annotations

import json

from craps_streams.sim.dealers import entry_of


def test_an_entry_carries_no_controller_field_and_names_its_request():
    line = entry_of({"type": "DiceThrown", "table_id": "T001", "seq": 7, "ts": 5, "key_id": "k", "tag": "t",
                     "die1": 1, "die2": 2})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"type": "DiceThrown", "table_id": "T001", "die1": 1, "die2": 2,
                                "request_id": "sim.T001.7"}


def test_a_torn_line_is_entered_as_it_is_on_one_line():
    assert entry_of('{"type": "Dice\nThrown"') == b'{"type": "Dice Thrown"\n'


def test_the_dealers_keep_the_floors_time_at_its_speed():
    from craps_streams.sim.dealers import Pace

    now = [100.0]
    pace = Pace(speed=2.0, clock=lambda: now[0])
    assert pace.wait(None) == 0.0
    assert pace.wait(10_000) == 0.0  # the first stamped record starts the floor's clock
    now[0] = 101.0
    assert pace.wait(14_000) == 1.0  # 4 s of floor time at speed 2, 1 s already gone
    assert pace.wait(11_000) == 0.0  # late: at once
