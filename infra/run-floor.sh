#!/usr/bin/env bash
# The main job: a local Kafka, a settling worker, the floor view, Prometheus (when installed) and a simulated floor
# fed live; shows a status panel of the floor in the terminal. Ctrl-C stops everything it started.
# NODES=3: on a local three-node cluster (infra/kafka/kafka.sh --nodes 3), every topic replicated three times.
# LEDGER=postgres: finance's ledger on a PostgreSQL of the run's own (infra/run-ledger.sh), not SQLite.
set -euo pipefail
cd "$(dirname "$0")/.."
export KAFKA_NODES="${NODES:-${KAFKA_NODES:-1}}"
if (( KAFKA_NODES > 1 )); then
  base="${KAFKA_PORT:-19092}"
  bootstrap=""
  for ((i = 0; i < KAFKA_NODES; i++)); do bootstrap+="${bootstrap:+,}127.0.0.1:$((base + i))"; done
  export CRAPS_KAFKA_BOOTSTRAP="${CRAPS_KAFKA_BOOTSTRAP:-$bootstrap}"
  # The floor view's own (faust) topics too; the pipeline's take the cluster's size by themselves.
  export CRAPS_REPLICATION_FACTOR="${CRAPS_REPLICATION_FACTOR:-$(( KAFKA_NODES < 3 ? KAFKA_NODES : 3 ))}"
fi
TABLES="${TABLES:-8}"
SPEED="${SPEED:-20}"       # times faster than real time: a throw every ~1 s per table at 20x
HOURS="${HOURS:-8}"
WEB_PORT="${CRAPS_WEB_PORT:-6066}"
FLOOR_PORT="${CRAPS_FLOOR_PORT:-6070}"
PROM_PORT="${PROM_PORT:-9090}"
LEDGER_PORT="${CRAPS_LEDGER_PORT:-6075}"
LEDGER="${LEDGER:-sqlite}"  # the ledger's database: sqlite, or postgres (a PostgreSQL of the run's own)
if [[ $LEDGER != sqlite && $LEDGER != postgres ]]; then
  echo "make run: LEDGER=$LEDGER: sqlite or postgres" >&2
  exit 2
fi
RUN=.run
KEEP_RUNS="${KEEP_RUNS:-3}"  # the topics of the newest runs are kept for replay and audit
# Each run is a fresh floor on its own topics: the simulator numbers every table's events from 1,
# so on the topics of an earlier run they would all be duplicates of what is already settled.
RUN_ID="$(date +%Y%m%d-%H%M%S)"
export CRAPS_TOPIC_PREFIX="${CRAPS_TOPIC_PREFIX:-craps.run-$RUN_ID.}"
export CRAPS_APP_ID="${CRAPS_APP_ID:-craps-streams-run-$RUN_ID}"
mkdir -p "$RUN"
# The run's context, for a second terminal: `source .run/floor.env` (the banner says so).
cat >"$RUN/floor.env" <<ENV
export CRAPS_TOPIC_PREFIX=$CRAPS_TOPIC_PREFIX
export CRAPS_APP_ID=$CRAPS_APP_ID
${CRAPS_KAFKA_BOOTSTRAP:+export CRAPS_KAFKA_BOOTSTRAP=$CRAPS_KAFKA_BOOTSTRAP}
ENV
pids=()
started_kafka=0
started_postgres=0
# Ctrl-C, TERM, a closed terminal or the end stop every process started below, and the broker if
# this run started it, even when stdout is a pipe nobody reads any more (`make run | tee`).
source infra/run-floor-cleanup.sh
floor_stop_on_exit
source infra/run-ledger.sh

infra/kafka/kafka.sh fetch
if ! infra/kafka/kafka.sh status >/dev/null 2>&1; then
  started_kafka=1  # before `up`: a Ctrl-C while it starts stops it too
  infra/kafka/kafka.sh up
fi
# A broker started before the ledger role existed: its client config and login, made once.
if [[ ! -f "${CRAPS_SECRETS_DIR:-.secrets}/clients/ledger.properties" ]]; then
  infra/kafka/kafka.sh secrets && infra/kafka/kafka.sh users
fi
python3 -m craps_streams.cli topics >/dev/null
python3 -m craps_streams.cli topics --prune-runs "$KEEP_RUNS" >&2

# The table controllers' keys (tags on every event): made at the first start into .secrets/ (0600,
# git-ignored), kept afterwards; the worker checks every event against them.
craps-streams keys init >/dev/null
# TLS and basic auth on the web side when CRAPS_WEB_CONFIG names an exporter-toolkit web config.
scheme=http
if [[ -n "${CRAPS_WEB_CONFIG:-}" ]] && grep -q '^tls_server_config:' "$CRAPS_WEB_CONFIG"; then scheme=https; fi
export CRAPS_FLOOR_URL="$scheme://127.0.0.1:$FLOOR_PORT/"

craps-streams worker --web-port "$WEB_PORT" --loglevel info >"$RUN/worker.log" 2>&1 &
pids+=($!)

# Finance's ledger (docs/operating/ledger.md) on SQLite, or LEDGER=postgres on a PostgreSQL of the
# run's own (infra/run-ledger.sh).
floor_ledger_start

# The table controllers' /metrics, from CONTROLLER_PORT up (one port per controller, 4 tables each):
# read by the status panel and by the floor view for the events held at each table.
CONTROLLER_PORT="${CONTROLLER_PORT:-6080}"
controller_urls=()
for ((i = 0; i < (TABLES + 3) / 4; i++)); do controller_urls+=("http://127.0.0.1:$((CONTROLLER_PORT + i))/metrics"); done

# The floor view (faust-streaming): every table, live, with plots.
infra/floor/fetch-assets.sh
CRAPS_FLOOR_CONTROLLERS="$(IFS=,; echo "${controller_urls[*]}")" craps-streams floor --port "$FLOOR_PORT" --instance "run-$RUN_ID" --loglevel info >"$RUN/floor-view.log" 2>&1 &
pids+=($!)

if command -v prometheus >/dev/null 2>&1; then
  prom_config=infra/prometheus/prometheus.yml
  if [[ -n "${CRAPS_WEB_CONFIG:-}" ]]; then  # scrape the secured /metrics (TLS and basic auth: craps_streams/metrics/scrape_config.py)
    prom_config="$RUN/prometheus.yml"
    python3 -m craps_streams.metrics.scrape_config infra/prometheus/prometheus.yml >"$prom_config"
  fi
  prometheus --config.file="$prom_config" --storage.tsdb.path="$RUN/prometheus" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$RUN/prometheus.log" 2>&1 &
  pids+=($!)
  prom_api="http://127.0.0.1:$PROM_PORT"
else
  prom_api=""  # not installed (apt-get install prometheus): the panel leaves it out
  echo "Prometheus is not installed (apt-get install prometheus): the floor runs without it" >&2
fi

# The simulated floor enters its events as a real table's equipment does: at the tables'
# controllers (4 tables each), which journal, number, stamp, sign and forward them
# (docs/operating/controller.md); their journals are this run's, as its topics are.
# Their /metrics (held events, answers, refusals) from CONTROLLER_PORT up, one port per controller.
craps-streams controller simulate --tables "$TABLES" --hours "$HOURS" --speed "$SPEED" --bad-rate 0.01 \
  --per-controller 4 --journal-dir "$RUN/controllers-$RUN_ID" --http-port "$CONTROLLER_PORT" >"$RUN/floor.log" 2>&1 &
pids+=($!)

nodes_option=""
(( KAFKA_NODES > 1 )) && nodes_option=" --nodes $KAFKA_NODES"  # kafka.sh's status of this cluster
# The foreground: a status panel redrawn in place (craps-streams status: the URLs and the commands
# to follow, replay and audit are in it); plain lines every 10 s when stdout is not a terminal.
cat <<TXT

craps-streams is running: $TABLES simulated tables at ${SPEED}x real time, on topics ${CRAPS_TOPIC_PREFIX}*
(the newest $KEEP_RUNS runs' topics are kept). Logs: $RUN/*.log. The raw stream: source $RUN/floor.env; craps-streams tail
Kafka: ${CRAPS_KAFKA_BOOTSTRAP:-127.0.0.1:9092} ($KAFKA_NODES node(s): infra/kafka/kafka.sh status$nodes_option)
The gaming day's report (HTML, CSV, JSON, PDF): source $RUN/floor.env; craps-streams report --from-topic --pdf --out $RUN/report
Finance's ledger (SQL): $ledger_where, docs/operating/ledger.md
TXT
controller_metrics=()
for url in "${controller_urls[@]}"; do controller_metrics+=(--metrics-url "$url"); done
ledger_metrics=()  # the ledger's lag on the panel (CRAPS_LEDGER_PORT=0: no /metrics, no line)
(( LEDGER_PORT )) && ledger_metrics=(--ledger-url "http://127.0.0.1:$LEDGER_PORT/metrics")
craps-streams status --metrics-url "$scheme://127.0.0.1:$WEB_PORT/metrics" "${controller_metrics[@]}" --floor-url "$CRAPS_FLOOR_URL" \
  "${ledger_metrics[@]}" \
  --prometheus-url "$prom_api" --note "Ctrl-C stops everything"
