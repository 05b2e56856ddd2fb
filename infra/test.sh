#!/usr/bin/env bash
# `make test`: every test CI runs, on the real broker. Starts the broker if it is not up and stops
# it again at the end (a broker that was already running is left as it was). About 10 minutes on a
# 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
started=0
stop_broker() { if [[ $started == 1 ]]; then infra/kafka/kafka.sh stop || true; fi; }
trap stop_broker EXIT
if ! infra/kafka/kafka.sh status >/dev/null 2>&1; then
  started=1  # before `up`: an interrupt while it starts stops it too
  infra/kafka/kafka.sh up
fi
start=$SECONDS
status=0
# Where cargo is present the package's build compiled the native accelerator (infra/setup.sh):
# CRAPS_CORE=native makes a missing or stale build an error instead of a quiet fall to the Python core.
if command -v cargo >/dev/null 2>&1 || [[ -x "$HOME/.cargo/bin/cargo" ]]; then
  export CRAPS_CORE=native
else
  echo "make test: no cargo, no native accelerator: the suite runs on the Python rules core" >&2
fi
if [[ $# == 0 ]]; then
  # The documentation site: a broken link or a page missing from the navigation fails the build
  # (mkdocs.yml's `validation`, turned into errors by --strict; not -q, which would hide them).
  site="$(mktemp -d)"
  if ! docs_log="$(NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --site-dir "$site" 2>&1)"; then
    echo "$docs_log" >&2
    echo "make test: mkdocs build --strict failed" >&2
    status=1
  fi
  rm -rf "$site"
  # The tests that need no broker are CPU-bound and independent: two processes (pytest-xdist) on
  # the two cores halve their time. The broker's tests run after them, one at a time, alone: they
  # time sessions, transactions and kills, and share the one broker.
  python3 -m pytest -ra -p no:cacheprovider -m 'not kafka' -n 2 || status=$?
  python3 -m pytest -ra -p no:cacheprovider -m 'kafka and not faults' || status=$?
  # `craps_streams.rules.apply` is the native core where it is built (docs/native-core.md): the rules,
  # golden and authenticity suites run once more on the Python code (its rules core and its tag
  # check, the references), so both stay tested through them (besides tests/native/,
  # the lockstep harness, which holds the native code to them).
  CRAPS_CORE=python python3 -m pytest -q -p no:cacheprovider -m 'not kafka' -n 2 tests/rules tests/golden tests/authenticity || status=$?
else
  python3 -m pytest -ra -p no:cacheprovider "$@" || status=$?
fi
echo "make test: $((SECONDS - start)) s of tests, exit $status" >&2
exit $status
