#!/usr/bin/env bash
# Single-node Kafka 4.x broker (KRaft, broker+controller in one JVM) for dev, tests and CI.
# Jars come from Maven Central via infra/kafka/pom.xml; no Kafka tarball, no Docker.
#
#   infra/kafka/kafka.sh fetch    # download jars into infra/kafka/lib (idempotent)
#   infra/kafka/kafka.sh start    # format storage if needed, launch the broker in the background
#   infra/kafka/kafka.sh wait     # block until the broker serves requests (timeout -> log tail, exit 1)
#   infra/kafka/kafka.sh up       # start + wait
#   infra/kafka/kafka.sh stop     # SIGTERM, wait, then SIGKILL
#   infra/kafka/kafka.sh status   # exit 0 if running, 3 if not
#   infra/kafka/kafka.sh logs [N] # tail the broker log
#   infra/kafka/kafka.sh reset    # stop and delete the data dir
#
# Environment:
#   KAFKA_DATA_DIR         data dir (logs, metadata, pid, log)   default: $REPO/.kafka-data
#   KAFKA_PORT             PLAINTEXT client port on 127.0.0.1     default: 9092
#   KAFKA_CONTROLLER_PORT  KRaft controller port on 127.0.0.1     default: 9093
#   KAFKA_VERSION          org.apache.kafka:kafka_2.13 version    default: from pom.xml (4.4.0)
#   KAFKA_LIB_DIR          where the jars go                      default: infra/kafka/lib
#   KAFKA_HEAP_OPTS        default: -Xms256m -Xmx512m
#   KAFKA_JVM_OPTS         extra JVM flags
#   KAFKA_WAIT_TIMEOUT     seconds for `wait`                     default: 90
#   KAFKA_STOP_TIMEOUT     seconds before SIGKILL in `stop`       default: 30
#   KAFKA_LOG_LEVEL        root log level                         default: INFO
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LIB="${KAFKA_LIB_DIR:-$HERE/lib}"
DATA="${KAFKA_DATA_DIR:-$REPO/.kafka-data}"
PORT="${KAFKA_PORT:-9092}"
CPORT="${KAFKA_CONTROLLER_PORT:-9093}"
PIDFILE="$DATA/kafka.pid"
LOGFILE="$DATA/kafka.log"
CONF="$DATA/server.properties"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
# G1 with short pauses, like kafka-run-class.sh; CDS is on by default in JDK 17.
JVM_OPTS="${KAFKA_JVM_OPTS:-} -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true"
LOG4J="-Dlog4j2.configurationFile=file:$HERE/log4j2.properties -Dkafka.logs.dir=$DATA"

log() { echo "kafka.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

pom_version() { sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/pom.xml" | head -n1; }
WANT_VERSION="${KAFKA_VERSION:-$(pom_version)}"

have_jars() {
  [[ -f "$LIB/.fetched" ]] && [[ "$(cat "$LIB/.fetched")" == "$WANT_VERSION" ]] \
    && compgen -G "$LIB/kafka_2.13-$WANT_VERSION.jar" >/dev/null
}

cmd_fetch() {
  if have_jars; then
    log "jars for kafka $WANT_VERSION already in $LIB"
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found (apt-get install -y maven)"
  command -v java >/dev/null || die "java not found (apt-get install -y openjdk-17-jre-headless)"
  log "fetching kafka_2.13 $WANT_VERSION and runtime deps from Maven Central into $LIB ..."
  local tmp="$LIB.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$(dirname "$LIB")"
  local mvnlog="$LIB.mvn.log"
  # Maven's output goes to a file (shown only on failure); a person waiting sees a count of the
  # artifacts downloaded so far, on one line.
  if ! mvn -B -f "$HERE/pom.xml" "-Dkafka.version=$WANT_VERSION" \
        dependency:copy-dependencies -DincludeScope=runtime "-DoutputDirectory=$tmp" 2>&1 \
      | tee "$mvnlog" | awk '/Downloaded from/ { n++; printf "\rkafka.sh: %d artifacts downloaded", n > "/dev/stderr"; fflush() }
                              END { if (n) print "" > "/dev/stderr" }'; then  # pipefail: mvn's status
    cat "$mvnlog" >&2
    rm -rf "$tmp"
    die "maven fetch failed (is kafka_2.13:$WANT_VERSION on Maven Central? try KAFKA_VERSION=4.1.1)"
  fi
  rm -f "$mvnlog"
  compgen -G "$tmp/kafka_2.13-$WANT_VERSION.jar" >/dev/null || { rm -rf "$tmp"; die "kafka jar missing after fetch"; }
  echo "$WANT_VERSION" >"$tmp/.fetched"
  rm -rf "$LIB"
  mv "$tmp" "$LIB"
  log "fetched $(ls "$LIB"/*.jar | wc -l) jars ($(du -sh "$LIB" | cut -f1))"
}

# pid of our running broker, or nothing. Guards against stale pid files / pid reuse.
running_pid() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid; pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

log_tail() {
  local n="${1:-60}"
  if [[ -f "$LOGFILE" ]]; then
    log "---- last $n lines of $LOGFILE ----"
    tail -n "$n" "$LOGFILE" >&2
    log "---- end of log ----"
  fi
  if [[ -f "$DATA/format.log" && ! -f "$DATA/metadata/meta.properties" ]]; then
    log "---- $DATA/format.log ----"; cat "$DATA/format.log" >&2
  fi
}

render_config() {
  mkdir -p "$DATA/logs" "$DATA/metadata"
  # Keep the data dir out of git without touching the repo's .gitignore.
  [[ -f "$DATA/.gitignore" ]] || echo '*' >"$DATA/.gitignore"
  sed -e "s#@@PORT@@#$PORT#g" -e "s#@@CONTROLLER_PORT@@#$CPORT#g" -e "s#@@DATA_DIR@@#$DATA#g" \
    "$HERE/server.properties" >"$CONF"
}

# Kafka cluster ids are 16 random bytes in unpadded URL-safe base64 (22 chars).
# Avoid a leading '-', which argparse would take for an option (Kafka's Uuid does the same).
new_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* ]] && { echo "$id"; return; }
  done
}

format_storage() {
  if [[ -f "$DATA/metadata/meta.properties" ]]; then
    return 0
  fi
  local cid; cid="$(new_cluster_id)"
  log "formatting storage in $DATA (cluster id $cid)"
  # shellcheck disable=SC2086
  if ! java $HEAP_OPTS $LOG4J -cp "$LIB/*" kafka.tools.StorageTool format \
        -t "$cid" -c "$CONF" --ignore-formatted >"$DATA/format.log" 2>&1; then
    cat "$DATA/format.log" >&2
    die "storage format failed"
  fi
}

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    log "already running (pid $pid) on 127.0.0.1:$PORT, data $DATA"
    return 0
  fi
  have_jars || cmd_fetch
  for p in "$PORT" "$CPORT"; do
    port_open "$p" && die "127.0.0.1:$p is already in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT, or stop it)"
  done
  render_config
  format_storage
  rm -f "$PIDFILE"
  [[ -f "$LOGFILE" ]] && mv -f "$LOGFILE" "$LOGFILE.prev"
  # setsid: own session, so the caller's Ctrl-C / process-group kill doesn't hit the broker.
  # shellcheck disable=SC2086
  setsid nohup java $HEAP_OPTS $JVM_OPTS $LOG4J -cp "$LIB/*" kafka.Kafka "$CONF" \
    >"$LOGFILE" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  log "started kafka $WANT_VERSION (pid $(cat "$PIDFILE")) on 127.0.0.1:$PORT, data $DATA, log $LOGFILE"
}

# Ready = the broker logged "Kafka Server started" (it is registered and unfenced,
# so metadata/produce work) AND its client port accepts connections.
cmd_wait() {
  local timeout="${KAFKA_WAIT_TIMEOUT:-90}" start=$SECONDS pid
  while :; do
    if ! pid="$(running_pid)"; then
      log "broker is not running"
      log_tail 80
      return 1
    fi
    if grep -q 'Kafka Server started' "$LOGFILE" 2>/dev/null && port_open "$PORT"; then
      log "broker ready on 127.0.0.1:$PORT after $((SECONDS - start))s (pid $pid)"
      return 0
    fi
    if (( SECONDS - start >= timeout )); then
      log "timed out after ${timeout}s waiting for 127.0.0.1:$PORT"
      log_tail 80
      return 1
    fi
    sleep 0.2
  done
}

cmd_stop() {
  local pid timeout="${KAFKA_STOP_TIMEOUT:-30}" start=$SECONDS
  if ! pid="$(running_pid)"; then
    log "not running"
    rm -f "$PIDFILE"
    return 0
  fi
  log "stopping pid $pid (SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if (( SECONDS - start >= timeout )); then
      log "still alive after ${timeout}s, SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.2
  done
  rm -f "$PIDFILE"
  log "stopped after $((SECONDS - start))s"
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    local ready="starting"
    grep -q 'Kafka Server started' "$LOGFILE" 2>/dev/null && port_open "$PORT" && ready="ready"
    echo "running ($ready) pid=$pid port=$PORT controller_port=$CPORT data=$DATA version=$WANT_VERSION"
    return 0
  fi
  echo "stopped data=$DATA"
  return 3
}

cmd_reset() {
  cmd_stop
  [[ -n "$DATA" && "$DATA" != "/" && "$DATA" != "$REPO" ]] || die "refusing to delete '$DATA'"
  rm -rf "$DATA"
  log "deleted $DATA"
}

usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

case "${1:-}" in
  fetch)  cmd_fetch ;;
  start)  cmd_start ;;
  wait)   cmd_wait ;;
  up)     cmd_start && cmd_wait ;;
  stop)   cmd_stop ;;
  status) cmd_status ;;
  logs)   tail -n "${2:-100}" "$LOGFILE" ;;
  reset)  cmd_reset ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
