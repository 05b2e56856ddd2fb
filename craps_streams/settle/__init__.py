"""The one application step of a message, shared by the live worker and replay (see step.py)."""
from craps_streams.settle.step import settle_event, undecodable_rejection

__all__ = ["settle_event", "undecodable_rejection"]
