"""The test suite (a package, so that `tests.*` imports find this one and not a `tests` package some
other distribution put in site-packages)."""
