"""The rules core: pure (no clock, randomness or I/O in `apply`); the Python core imports the standard
library and msgspec only. `apply(state, event) -> (state, outputs, verdict)`.

The Python core (craps_streams/rules/table.py and the kind modules) is the specification. The package's
build adds, where cargo is present, an optional native accelerator (`craps_streams.rules._native`,
native/; docs/native-core.md) that settles the common path by the same facts and hands every
other case back to the Python core (craps_streams/rules/native.py).

Which core `apply` is, chosen once at import, in this one place: the worker and replay take this
`apply` (craps_streams/settle/step.py). `CRAPS_CORE=python`: the Python core. `CRAPS_CORE=native`: the
accelerator, or an error at import saying why it cannot be used. Unset: the accelerator when it is
installed and accepted, else the Python core, with `CORE_NOTE` saying why (the worker logs it).
`CORE` says which ("python" or "native").
"""
import os as _os

from craps_streams.rules.contract import (
    ContractError,
    event_to_record,
    malformed,
    output_to_record,
    record_to_event,
    record_to_output,
)
from craps_streams.rules.events import (
    ComeBetsOnly,
    DiceThrown,
    EventRejected,
    MarkerCleared,
    MarkerPlaced,
    ShooterChanged,
    SurveillanceAlerted,
    TableClosed,
    TableOpened,
    WagerChangeRequested,
    WagerPlaced,
    WagerSettled,
)
from craps_streams.rules.submission import DEFAULT_RULES, RulesSubmission, rules_from_record
from craps_streams.rules.table import TableState
from craps_streams.rules.table import apply as _python_apply

CORE = _os.environ.get("CRAPS_CORE", "")
if CORE not in ("", "python", "native"):
    raise ImportError(f"CRAPS_CORE={CORE!r}: python or native (unset: native when built)")
CORE_NOTE = None  # why the Python core settles where the native one was not refused
if CORE != "python":
    from craps_streams.rules import native as _native_core

    if CORE == "native":
        _native_core.require()  # asked for: an error, saying why, when it cannot be used
    CORE_NOTE = _native_core.PROBLEM
    CORE = "native" if CORE_NOTE is None else "python"
apply = _native_core.apply if CORE == "native" else _python_apply

__all__ = [
    "ComeBetsOnly", "ContractError", "DEFAULT_RULES", "DiceThrown", "EventRejected", "MarkerCleared",
    "MarkerPlaced", "RulesSubmission", "ShooterChanged", "SurveillanceAlerted", "TableClosed",
    "CORE", "CORE_NOTE", "TableOpened", "TableState", "WagerChangeRequested", "WagerPlaced", "WagerSettled", "apply",
    "event_to_record", "malformed", "output_to_record", "record_to_event", "record_to_output",
    "rules_from_record",
]
