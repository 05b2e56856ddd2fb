"""Replay and audit of table histories through the rules core."""
