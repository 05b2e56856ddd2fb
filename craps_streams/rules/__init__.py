"""The rules core: pure (no clock, randomness or I/O in `apply`); the Python core imports the standard
library and msgspec only. `apply(state, event) -> (state, outputs, verdict)`.

The Python core (craps_streams/rules/table.py and the kind modules) is the specification: `apply`
here is its. The package's build adds, where cargo is present, an optional native accelerator
(craps_streams/accelerator/, native/; docs/native-core.md) that settles the common path by the same
facts and hands every other case back to this core. Which of the two settles is chosen by the
command that runs and handed to the settling step: craps_streams/accelerator/rules.py `rules_core`.
"""
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
from craps_streams.rules.table import TableState, apply

__all__ = [
    "ComeBetsOnly", "ContractError", "DEFAULT_RULES", "DiceThrown", "EventRejected", "MarkerCleared",
    "MarkerPlaced", "RulesSubmission", "ShooterChanged", "SurveillanceAlerted", "TableClosed",
    "TableOpened", "TableState", "WagerChangeRequested", "WagerPlaced", "WagerSettled", "apply",
    "event_to_record", "malformed", "output_to_record", "record_to_event", "record_to_output",
    "rules_from_record",
]
