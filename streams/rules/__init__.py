"""The rules core: pure (no clock, randomness or I/O in `apply`); the Python core imports the standard
library and msgspec only, the native core is its Rust extension. `apply(state, event) -> (state, outputs, verdict)`.

Which core `apply` is, chosen once at import, in this one place (docs/native-core.md): the
worker and replay take this `apply` (streams/settle/step.py). `CRAPS_CORE=python`: the Python core
(streams/rules/table.py, the reference). `CRAPS_CORE=native`: the native core
(streams/rules/native.py: the Rust extension built by native/build.sh, the Python core for every
rare case; an error at import when it is not built). Unset: the native core when it is built
from the checkout's sources, else the Python core, with `CORE_NOTE` saying why (the worker logs
it; both settle the same bytes, tests/rules/test_native_core.py holds one to the other after every
event). `CORE` says which ("python" or "native").
"""
import os as _os

from streams.rules.contract import (
    ContractError,
    event_to_record,
    malformed,
    output_to_record,
    record_to_event,
    record_to_output,
)
from streams.rules.events import (
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
from streams.rules.submission import DEFAULT_RULES, RulesSubmission, rules_from_record
from streams.rules.table import TableState
from streams.rules.table import apply as _python_apply

# The native core is the default (session 9). Session 7 had taken it back after the broker-restart
# fault scenario duplicated 71 settlements with the worker on it; session 8 found that cause outside
# the core, for either core (records a stopping broker left open, committed by the next owner:
# streams.kafka.producers.abort_hanging is the fix), and it has passed every CI run since.
CORE = _os.environ.get("CRAPS_CORE", "")
if CORE not in ("", "python", "native"):
    raise ImportError(f"CRAPS_CORE={CORE!r}: python or native (unset: native when built)")
CORE_NOTE = None  # why the Python core settles where the native one was not refused
if CORE != "python":
    from streams.rules import native as _native_core

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
