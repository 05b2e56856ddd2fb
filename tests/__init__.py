"""The test suite (a regular package, so `tests.*` imports never resolve to another distribution's
top-level `tests` package installed in site-packages)."""
