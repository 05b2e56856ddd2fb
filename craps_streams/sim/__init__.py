"""The floor simulator: realistic table histories for demos, tests and benchmarks."""
