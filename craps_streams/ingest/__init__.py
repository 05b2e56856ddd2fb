"""Ingestion: table events from files or a simulated floor into craps.table-events."""
