"""Prometheus metrics of the floor: handle, payouts, hold against theory, latency, lag."""
