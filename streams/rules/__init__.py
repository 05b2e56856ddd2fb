"""The rules core: pure, standard library only. `apply(state, event) -> (state, outputs, verdict)`."""
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
from streams.rules.table import TableState, apply

__all__ = [
    "ComeBetsOnly", "ContractError", "DEFAULT_RULES", "DiceThrown", "EventRejected", "MarkerCleared",
    "MarkerPlaced", "RulesSubmission", "ShooterChanged", "SurveillanceAlerted", "TableClosed",
    "TableOpened", "TableState", "WagerChangeRequested", "WagerPlaced", "WagerSettled", "apply",
    "event_to_record", "malformed", "output_to_record", "record_to_event", "record_to_output",
    "rules_from_record",
]
