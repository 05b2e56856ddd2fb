# Stopping what infra/run-floor.sh started, whatever became of its terminal. Sourced by
# infra/run-floor.sh (and by tests/operating/test_run_floor_cleanup.py, which runs it with stdout a
# closed pipe).
#
# `make run 2>&1 | tee run.log` and Ctrl-C: the Ctrl-C ends `tee` too, so stdout and stderr are a
# pipe nobody reads any more. A status line written there kills the shell (SIGPIPE), or fails
# under `set -e` (EPIPE), and whatever the cleanup had not stopped yet keeps running: the broker
# above all. So the cleanup ignores SIGPIPE, runs without `set -e`, stops the processes first,
# writes its own lines and kafka.sh's into $RUN/stop.log, and tells the terminal last, `|| true`.
#
# The caller sets:
#   pids            the background processes it started (stopped with TERM, KILL after STOP_TIMEOUT s)
#   started_kafka   1 when this run started the broker (then `kafka.sh stop`); anything else: left running
#   started_postgres  1 when this run started the ledger's PostgreSQL (then `postgres.sh stop`, PG_DIR
#                   naming it); anything else: left running
#   RUN             the run's directory (default .run), for stop.log
#   KAFKA_SH        the broker script (default infra/kafka/kafka.sh)
#   POSTGRES_SH     the PostgreSQL script (default infra/postgres/postgres.sh)
#   STOP_TIMEOUT    seconds a process has to end after TERM (default 20)

_floor_alive() {  # a process that still runs (a zombie waiting to be reaped has ended)
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)"
  [[ -n $state && $state != Z ]]
}

floor_cleanup() {
  trap - INT TERM HUP EXIT
  trap '' PIPE
  set +e
  local log="${RUN:-.run}/stop.log" pid deadline left
  mkdir -p "$(dirname "$log")" 2>/dev/null
  {
    echo "$(date -u +%FT%TZ) stopping: ${pids[*]:-no processes}"
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    deadline=$((SECONDS + ${STOP_TIMEOUT:-20}))
    while :; do
      left=()
      for pid in "${pids[@]}"; do _floor_alive "$pid" && left+=("$pid"); done
      ((${#left[@]} == 0)) && break
      if ((SECONDS >= deadline)); then
        echo "still running after ${STOP_TIMEOUT:-20} s, killed: ${left[*]}"
        kill -KILL "${left[@]}" 2>/dev/null
        break
      fi
      sleep 0.2
    done
    ((${#pids[@]})) && wait "${pids[@]}" 2>/dev/null
    # After the ledger (one of the pids): its last batch is committed or rolled back by then.
    if [[ ${started_postgres:-0} == 1 ]]; then "${POSTGRES_SH:-infra/postgres/postgres.sh}" stop; fi
    if [[ ${started_kafka:-0} == 1 ]]; then "${KAFKA_SH:-infra/kafka/kafka.sh}" stop; fi
    echo "$(date -u +%FT%TZ) stopped"
  } >>"$log" 2>&1 </dev/null
  echo "craps-streams stopped (what was stopped: $log)" >&2 2>/dev/null || true
}

# The traps: Ctrl-C, TERM, a closed terminal (HUP) and the script's own end all stop everything.
# Ctrl-C is how an operator ends a run: stopped cleanly, the run exits 0 (make would report an exit
# of 130 as `make: *** [Makefile:20: run] Error 130`, a failure it was not). TERM and HUP keep their
# signal's status: something else ended the run. A foreground child that Ctrl-C ended first can
# make `set -e` end the script with its 130 before bash runs the INT trap: the EXIT trap reads that
# 130 as the same Ctrl-C.
floor_stop_on_exit() {
  trap 'floor_cleanup; exit 0' INT
  trap 'floor_cleanup; exit 143' TERM
  trap 'floor_cleanup; exit 129' HUP
  trap 'floor_status=$?; floor_cleanup; if [ "$floor_status" -eq 130 ]; then exit 0; fi' EXIT
}
