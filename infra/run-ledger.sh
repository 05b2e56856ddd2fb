# Finance's ledger for infra/run-floor.sh (docs/operating/ledger.md): this run's settlements,
# alerts and rejections in SQL. Sourced by infra/run-floor.sh (and by
# tests/operating/test_run_ledger.py, which runs it on the real broker and stops it with Ctrl-C).
#
# Each run is a new floor whose ids start again from 1: a new database too.
#   LEDGER=sqlite     (the default) a file, $RUN/ledger.db
#   LEDGER=postgres   a PostgreSQL of the run's own (infra/postgres/postgres.sh: Debian's package,
#                     its data in $PG_DIR, default $RUN/postgres, TLS, a login per role), started
#                     unless it runs already, then stopped with the run (run-floor-cleanup.sh)
#   CRAPS_LEDGER_DB   set: a database of the operator's, used as it is
#
# The caller sets RUN, LEDGER, LEDGER_PORT (its /metrics), pids and started_postgres (0); the
# function adds the ledger to pids, sets started_postgres=1 when it started the PostgreSQL, and
# ledger_where (for the banner).

floor_ledger_start() {
  if [[ -n "${CRAPS_LEDGER_DB:-}" ]]; then
    ledger_where="the database of \$CRAPS_LEDGER_DB"
  elif [[ $LEDGER == postgres ]]; then
    export PG_DIR="${PG_DIR:-$RUN/postgres}"
    if ! infra/postgres/postgres.sh status >/dev/null 2>&1; then
      started_postgres=1  # before `up`: a Ctrl-C while it starts stops it too
      infra/postgres/postgres.sh up
    fi
    infra/postgres/postgres.sh database ledger --fresh
    # The ledger's login in its environment, not on its command line (ps shows every user that).
    CRAPS_LEDGER_DB="$(infra/postgres/postgres.sh url ledger)"
    export CRAPS_LEDGER_DB
    ledger_where="PostgreSQL on 127.0.0.1:$(cat "$PG_DIR/port"), database ledger (finance's login: infra/postgres/postgres.sh url finance)"
  else
    export CRAPS_LEDGER_DB="sqlite:///$RUN/ledger.db"
    rm -f "$RUN/ledger.db" "$RUN/ledger.db-wal" "$RUN/ledger.db-shm"
    ledger_where="$RUN/ledger.db (sqlite3)"
  fi
  craps-streams ledger --metrics-port "$LEDGER_PORT" --loglevel info >"$RUN/ledger.log" 2>&1 &
  pids+=($!)
}
