"""The mark of the tests that hold the native accelerator to the Python core.

They need the accelerator installed (the package's build compiles it where cargo is on PATH). Where
it is not, they are skipped, saying why: the Python core, which every other test runs, is then the
only core. CI (infra/test.sh) sets CRAPS_CORE=native wherever cargo is present, and with that an
accelerator that is missing, stale or refused is an error at import (streams/rules/__init__.py), so
there these tests can never be skipped."""
from __future__ import annotations

import pytest

from streams.rules import native

requires_accelerator = pytest.mark.skipif(
    native.PROBLEM is not None, reason=f"no native accelerator to compare: {native.PROBLEM}")
