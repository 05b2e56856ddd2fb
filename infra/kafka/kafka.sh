#!/usr/bin/env bash
# Kafka 4.x for dev, tests and CI: one KRaft node (broker+controller in one JVM), or with --nodes 3
# a cluster of three such nodes on loopback (docs/operating/cluster.md).
# Jars come from Maven Central via infra/kafka/pom.xml; no Kafka tarball, no Docker.
#
#   infra/kafka/kafka.sh fetch    # download jars into infra/kafka/lib (idempotent)
#   infra/kafka/kafka.sh start    # format storage if needed, launch the broker in the background
#   infra/kafka/kafka.sh wait     # block until the broker serves requests (timeout -> log tail, exit 1)
#   infra/kafka/kafka.sh up       # start + wait + create the roles' SCRAM logins (secured mode)
#   infra/kafka/kafka.sh secrets  # make the CA, broker cert and role credentials if missing
#   infra/kafka/kafka.sh users    # (re)create every role's SCRAM login from its client config
#   infra/kafka/kafka.sh rotate-password ROLE   # new password for ROLE, applied to the broker
#   infra/kafka/kafka.sh rotate-cert            # new broker certificate from the CA (restart after)
#   infra/kafka/kafka.sh stop     # SIGTERM, wait, then SIGKILL
#   infra/kafka/kafka.sh status   # exit 0 if running, 3 if not
#   infra/kafka/kafka.sh logs [N] # tail the broker log
#   infra/kafka/kafka.sh reset    # stop and delete the data dir
#   infra/kafka/kafka.sh kill     # SIGKILL (a crash, for fault drills)
#   infra/kafka/kafka.sh restart  # stop, start, wait; on a cluster one node at a time, each back
#                                 # in sync before the next (a rolling restart)
#
# A cluster: every command above with --nodes N (or KAFKA_NODES=N), on all N nodes, or with
# --node I on node I only (start, wait, stop, kill, restart, status, logs, reset):
#   infra/kafka/kafka.sh up --nodes 3             # three nodes on 127.0.0.1:19092-19094
#   infra/kafka/kafka.sh kill --nodes 3 --node 2  # node 2 crashes
#   infra/kafka/kafka.sh start --nodes 3 --node 2 # ... and comes back
#
# Environment:
#   KAFKA_NODES            nodes (1, or 3 for a cluster)          default: 1
#   KAFKA_DATA_DIR         data dir (logs, metadata, pid, log)   default: $REPO/.kafka-data
#   KAFKA_CLUSTER_DIR      a cluster's data dirs (node-1 ...)     default: $REPO/.kafka-cluster
#   KAFKA_PORT             client port on 127.0.0.1 (SASL_SSL)    default: 9092
#                          (a cluster: node I's is KAFKA_PORT + I - 1, default 19092)
#   KAFKA_SECURITY         sasl_ssl | plaintext (plaintext: only to measure what security costs)
#                                                                 default: sasl_ssl
#   CRAPS_SECRETS_DIR      CA, broker cert, passwords, client configs (0700, files 0600)
#                                                                 default: $REPO/.secrets
#   CRAPS_BROKER_SAN       the broker certificate's names         default: IP:127.0.0.1,DNS:localhost
#   KAFKA_CONTROLLER_PORT  KRaft controller port on 127.0.0.1     default: 9093
#                          (a cluster: KAFKA_CONTROLLER_PORT + I - 1, default 19192)
#   KAFKA_VERSION          org.apache.kafka:kafka_2.13 version    default: from pom.xml (4.4.0)
#   KAFKA_LIB_DIR          where the jars go                      default: infra/kafka/lib
#   KAFKA_HEAP_OPTS        default: -Xms1g -Xmx1g (a cluster's nodes: -Xms768m -Xmx768m)
#   KAFKA_GC_OPTS          the collector's flags                  default: -XX:+UseZGC
#   KAFKA_JVM_OPTS         extra JVM flags
#   KAFKA_WAIT_TIMEOUT     seconds for `wait`                     default: 90
#   KAFKA_STOP_TIMEOUT     seconds before SIGKILL in `stop`       default: 30
#   KAFKA_LOG_LEVEL        root log level                         default: INFO
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LIB="${KAFKA_LIB_DIR:-$HERE/lib}"

# The command, then its options: --nodes N (a cluster), --node I (one of its nodes); the rest
# (a role, a line count) are the command's own arguments.
CMD="${1:-}"
(( $# )) && shift
NODES="${KAFKA_NODES:-1}"
ONLY_NODE=""
ARGS=()
while (( $# )); do
  case "$1" in
    --nodes) NODES="${2:-}"; shift 2 || true ;;
    --nodes=*) NODES="${1#*=}"; shift ;;
    --node) ONLY_NODE="${2:-}"; shift 2 || true ;;
    --node=*) ONLY_NODE="${1#*=}"; shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
[[ "$NODES" =~ ^[1-9]$ ]] || { echo "kafka.sh: ERROR: --nodes must be 1 to 9, got '$NODES'" >&2; exit 2; }
if [[ -n "$ONLY_NODE" ]] && ! { [[ "$ONLY_NODE" =~ ^[1-9]$ ]] && (( ONLY_NODE <= NODES )); }; then
  echo "kafka.sh: ERROR: --node must be 1 to $NODES, got '$ONLY_NODE'" >&2; exit 2
fi

if (( NODES == 1 )); then
  DATA="${KAFKA_DATA_DIR:-$REPO/.kafka-data}"
  PORT_BASE="${KAFKA_PORT:-9092}"
  CPORT_BASE="${KAFKA_CONTROLLER_PORT:-9093}"
  # ZGC, not kafka-run-class.sh's G1: a transaction is five requests in series and waits out any
  # stop-the-world pause inside it. Measured side by side on a 2-core machine at a floor's real
  # load (benchmarks/pipeline_bench.py, 240 s runs): G1 with 512 MB stopped the broker 665-690 ms
  # per run, 10-40 ms a young collection (a live set of ~200 MB to scan); ZGC with 1 GB stopped it
  # 9-21 ms per run, never 5 ms at once, for the same throughput. ZGC marks and moves concurrently
  # and needs headroom: a fixed 1 GB heap (Xms = Xmx, no resizing). CDS is on by default in JDK 17.
  HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms1g -Xmx1g}"
  REPLICATION_FACTOR=1
  MIN_ISR=1
else
  CLUSTER_DIR="${KAFKA_CLUSTER_DIR:-$REPO/.kafka-cluster}"
  PORT_BASE="${KAFKA_PORT:-19092}"
  CPORT_BASE="${KAFKA_CONTROLLER_PORT:-19192}"
  # Three JVMs on a 2-core, 24 GB machine: 768 MB each (ZGC's headroom over a node's live set of
  # about 200 MB), 2.3 GB of heap in all.
  HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms768m -Xmx768m}"
  # Every topic on three nodes, a write acknowledged (acks=all) once two of them have it: one node
  # may be lost without losing a record or stopping the floor.
  REPLICATION_FACTOR=$(( NODES < 3 ? NODES : 3 ))
  MIN_ISR=$(( REPLICATION_FACTOR >= 3 ? 2 : 1 ))
fi
GC_OPTS="${KAFKA_GC_OPTS:--XX:+UseZGC}"
# The KRaft voters, every node (node I's controller listener is on CPORT_BASE + I - 1), and where
# clients start: every node's client port.
QUORUM_VOTERS=""
BOOTSTRAP_LIST=""
for ((i = 1; i <= NODES; i++)); do
  QUORUM_VOTERS+="${QUORUM_VOTERS:+,}$i@127.0.0.1:$((CPORT_BASE + i - 1))"
  BOOTSTRAP_LIST+="${BOOTSTRAP_LIST:+,}127.0.0.1:$((PORT_BASE + i - 1))"
done

# The node the commands below act on: its id, data dir, ports and files.
select_node() {
  NODE_ID="$1"
  (( NODES == 1 )) || DATA="$CLUSTER_DIR/node-$NODE_ID"
  PORT=$((PORT_BASE + NODE_ID - 1))
  CPORT=$((CPORT_BASE + NODE_ID - 1))
  PIDFILE="$DATA/kafka.pid"
  LOGFILE="$DATA/kafka.log"
  CONF="$DATA/server.properties"
  # Every pause the collector takes is logged (gc.log beside kafka.log, rotated): a transaction is
  # five requests in series and waits out any pause that falls inside it.
  GC_LOG="-Xlog:gc,safepoint:file=$DATA/gc.log:time,uptime,level,tags:filecount=3,filesize=20M"
  JVM_OPTS="-server $GC_OPTS $GC_LOG -Djava.awt.headless=true ${KAFKA_JVM_OPTS:-}"
  LOG4J="-Dlog4j2.configurationFile=file:$HERE/log4j2.properties -Dkafka.logs.dir=$DATA"
}
select_node 1
SECRETS="${CRAPS_SECRETS_DIR:-$REPO/.secrets}"
SECURITY="${KAFKA_SECURITY:-sasl_ssl}"
# The names clients reach the broker by (its certificate's SAN). docker-compose.yml adds DNS:kafka.
BROKER_SAN="${CRAPS_BROKER_SAN:-IP:127.0.0.1,DNS:localhost}"
# One principal per role (README, Security). admin: the only super user a person uses; broker: the
# broker's own inter-broker login (super user); kraft: the controller listener's PLAIN login.
# The roles of craps_streams/kafka/settings.py; their principals' names (User:<name>) where they differ.
ROLES=(controller worker archive audit viewer floor ledger admin)
principal_of() { case "$1" in controller) echo table-controller ;; floor) echo floor-view ;; *) echo "$1" ;; esac; }

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

# The security mode the data dir was formatted with (none recorded: before the broker was secured).
formatted_security() { cat "$DATA/security" 2>/dev/null || echo plaintext; }

# pid of our running broker, or nothing. Guards against stale pid files / pid reuse.
running_pid() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid; pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # No pipe here: under pipefail, grep -q's early exit fails the writer with SIGPIPE.
  grep -qa 'kafka\.Kafka' "/proc/$pid/cmdline" 2>/dev/null || return 1
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
}

# ---------------------------------------------------------------- secrets (first start)
# openssl, not Python's `cryptography`: kafka.sh must make them before any Python is installed,
# and openssl is on every Linux machine that can run Kafka.

new_password() { openssl rand -base64 33 | tr -d '/+=\n' | cut -c1-40; }

# The client config of a role, in the shape Kafka's own tools read (--command-config, .properties).
write_client_config() {  # ROLE PASSWORD
  local f="$SECRETS/clients/$1.properties"
  ( umask 077
    cat >"$f.tmp" <<PROPS
# Kafka client config of the craps-streams role '$1' (made by infra/kafka/kafka.sh; secret: 0600).
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$(principal_of "$1")" password="$2";
ssl.truststore.type=PEM
ssl.truststore.location=$SECRETS/ca.crt
ssl.endpoint.identification.algorithm=https
PROPS
    mv -f "$f.tmp" "$f" )
}

sign_broker_cert() {  # into $SECRETS/broker.{key,crt,pem}
  local tmp="$SECRETS/.broker.$$"
  ( umask 077; mkdir -p "$tmp"
    openssl req -new -newkey rsa:2048 -noenc -keyout "$tmp/broker.key" -out "$tmp/broker.csr" \
      -subj "/O=craps-streams/CN=localhost" 2>/dev/null
    printf '%s\n' "subjectAltName=$BROKER_SAN" "basicConstraints=critical,CA:FALSE" \
      "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth,clientAuth" >"$tmp/ext"
    openssl x509 -req -in "$tmp/broker.csr" -CA "$SECRETS/ca.crt" -CAkey "$SECRETS/ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -days 397 -sha256 -extfile "$tmp/ext" -out "$tmp/broker.crt" 2>/dev/null
    # Kafka's PEM keystore: the unencrypted PKCS#8 key, then the certificate chain.
    cat "$tmp/broker.key" "$tmp/broker.crt" "$SECRETS/ca.crt" >"$tmp/broker.pem"
    mv -f "$tmp/broker.key" "$tmp/broker.crt" "$tmp/broker.pem" "$SECRETS/"
    rm -rf "$tmp" ) || { rm -rf "$tmp"; die "could not sign the broker certificate"; }
}

cmd_secrets() {
  command -v openssl >/dev/null || die "openssl not found (apt-get install -y openssl)"
  ( umask 077; mkdir -p "$SECRETS/clients" )
  chmod 700 "$SECRETS" "$SECRETS/clients"
  [[ -f "$SECRETS/.gitignore" ]] || ( umask 077; echo '*' >"$SECRETS/.gitignore" )
  if [[ ! -f "$SECRETS/ca.crt" ]]; then
    log "making the local CA in $SECRETS"
    ( umask 077
      openssl req -x509 -new -newkey rsa:3072 -noenc -keyout "$SECRETS/ca.key.tmp" -out "$SECRETS/ca.crt.tmp" \
        -days 3650 -sha256 -subj "/O=craps-streams/CN=craps-streams local CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
      mv -f "$SECRETS/ca.key.tmp" "$SECRETS/ca.key"; mv -f "$SECRETS/ca.crt.tmp" "$SECRETS/ca.crt" ) \
      || die "could not make the CA"
    rm -f "$SECRETS/broker.pem"  # a new CA: the old broker certificate no longer chains to it
  fi
  if [[ ! -f "$SECRETS/broker.pem" ]]; then
    log "signing the broker certificate (SAN $BROKER_SAN)"
    sign_broker_cert
  fi
  local name
  for name in broker kraft; do
    [[ -f "$SECRETS/$name.password" ]] || ( umask 077; new_password >"$SECRETS/$name.password" )
  done
  for name in "${ROLES[@]}"; do
    [[ -f "$SECRETS/clients/$name.properties" ]] || write_client_config "$name" "$(new_password)"
  done
  chmod 600 "$SECRETS"/*.* "$SECRETS"/clients/*
}

cmd_rotate_password() {
  local role="${1:-}" r ok=0
  for r in "${ROLES[@]}"; do [[ "$r" == "$role" ]] && ok=1; done
  (( ok )) || die "rotate-password ROLE: one of ${ROLES[*]}"
  # Set on the broker first (as the administrator), then written to the role's client config.
  env -u CRAPS_KAFKA_CONFIG CRAPS_SECRETS_DIR="$SECRETS" PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m craps_streams.cli access rotate "$role" --bootstrap "$BOOTSTRAP_LIST" \
    || die "could not rotate the password of $role"
}

cmd_rotate_cert() {
  cmd_secrets
  sign_broker_cert
  if (( NODES == 1 )); then
    log "new broker certificate in $SECRETS/broker.pem: restart the broker (kafka.sh stop && kafka.sh up)"
  else
    log "new broker certificate in $SECRETS/broker.pem: restart the nodes one at a time (kafka.sh restart --nodes $NODES)"
  fi
}

# The roles' SCRAM logins, upserted by the administrator (craps_streams/kafka/access.py); idempotent.
cmd_users() {
  [[ "$SECURITY" == sasl_ssl ]] || return 0
  env -u CRAPS_KAFKA_CONFIG CRAPS_SECRETS_DIR="$SECRETS" PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m craps_streams.cli access users --bootstrap "$BOOTSTRAP_LIST" \
    || die "could not create the roles' logins"
}

secret_of() { tr -d '\n' <"$SECRETS/$1.password"; }
role_password() { sed -n 's/.*password="\([^"]*\)".*/\1/p' "$SECRETS/clients/$1.properties"; }

# The listeners and their security. Appended to the rendered server.properties (0600: passwords).
render_security() {
  if [[ "$SECURITY" == plaintext ]]; then
    cat <<PROPS

############################# Listeners: PLAINTEXT (KAFKA_SECURITY=plaintext, benchmarks only) ####
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
PROPS
    return
  fi
  local kraft; kraft="$(secret_of kraft)"
  cat <<PROPS

############################# Listeners: TLS + SASL/SCRAM-SHA-512 #############################
listeners=SASL_SSL://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=SASL_SSL://127.0.0.1:$PORT
# The broker talks to itself over SASL_SSL (transaction markers), as its own principal.
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="$(secret_of broker)";
# The KRaft controller listener is on loopback in the same JVM. A PLAINTEXT one is refused by the
# authorizer (CLUSTER_ACTION denied to ANONYMOUS): SASL PLAIN with its own super-user login.
sasl.mechanism.controller.protocol=PLAIN
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="kraft" password="$kraft" user_kraft="$kraft";
ssl.keystore.type=PEM
ssl.keystore.location=$SECRETS/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$SECRETS/ca.crt
ssl.enabled.protocols=TLSv1.3,TLSv1.2
ssl.client.auth=none

############################# Authorization #############################
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
# admin: the administrator (topics, ACLs, logins); broker, kraft: the broker's own logins.
super.users=User:admin;User:broker;User:kraft
PROPS
}

render_config() {
  mkdir -p "$DATA/logs" "$DATA/metadata"
  # Keep the data dir out of git without touching the repo's .gitignore.
  [[ -f "$DATA/.gitignore" ]] || echo '*' >"$DATA/.gitignore"
  (( NODES == 1 )) || [[ -f "$CLUSTER_DIR/.gitignore" ]] || echo '*' >"$CLUSTER_DIR/.gitignore"
  [[ "$SECURITY" == sasl_ssl || "$SECURITY" == plaintext ]] || die "KAFKA_SECURITY must be sasl_ssl or plaintext"
  [[ "$SECURITY" == plaintext ]] || cmd_secrets
  ( umask 077
    { sed -e "s#@@PORT@@#$PORT#g" -e "s#@@CONTROLLER_PORT@@#$CPORT#g" -e "s#@@DATA_DIR@@#$DATA#g" \
        -e "s#@@NODE_ID@@#$NODE_ID#g" -e "s#@@QUORUM_VOTERS@@#$QUORUM_VOTERS#g" \
        -e "s#@@REPLICATION_FACTOR@@#$REPLICATION_FACTOR#g" -e "s#@@MIN_ISR@@#$MIN_ISR#g" \
        "$HERE/server.properties"; render_security; } >"$CONF.tmp"
    mv -f "$CONF.tmp" "$CONF" )
  chmod 600 "$CONF"
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
  local cid
  if (( NODES == 1 )); then
    cid="$(new_cluster_id)"
  else  # every node of a cluster is formatted with the cluster's one id
    [[ -f "$CLUSTER_DIR/cluster.id" ]] || new_cluster_id >"$CLUSTER_DIR/cluster.id"
    cid="$(cat "$CLUSTER_DIR/cluster.id")"
  fi
  log "formatting storage in $DATA (cluster id $cid)"
  local scram=()
  if [[ "$SECURITY" == sasl_ssl ]]; then
    # The logins the broker needs before anyone can log in: its own and the administrator's. The
    # other roles' logins are made by the administrator once the broker is up (cmd_users).
    scram=(--add-scram "SCRAM-SHA-512=[name=broker,password=$(secret_of broker)]"
           --add-scram "SCRAM-SHA-512=[name=admin,password=$(role_password admin)]")
  fi
  # StorageTool prints every SCRAM salt and salted password: its output never goes to a log file;
  # on failure it is shown with those values masked.
  local out
  # shellcheck disable=SC2086
  if ! out="$(java $HEAP_OPTS $LOG4J -cp "$LIB/*" kafka.tools.StorageTool format \
        -t "$cid" -c "$CONF" --ignore-formatted "${scram[@]}" 2>&1)"; then
    sed -E 's/(salt|saltedPassword|password|storedKey|serverKey)([=:])[^,) ]*/\1\2****/Ig' <<<"$out" >&2
    die "storage format failed"
  fi
  rm -f "$DATA/format.log"  # written by earlier versions of this script, with the salts in it
}

cmd_start() {
  local pid
  if pid="$(running_pid)"; then
    [[ "$(formatted_security)" == "$SECURITY" ]] \
      || die "a broker with KAFKA_SECURITY=$(formatted_security) is running on $DATA: \`kafka.sh stop\` it first"
    log "already running (pid $pid) on 127.0.0.1:$PORT, data $DATA"
    return 0
  fi
  have_jars || cmd_fetch
  for p in "$PORT" "$CPORT"; do
    port_open "$p" && die "127.0.0.1:$p is already in use by another process (set KAFKA_PORT / KAFKA_CONTROLLER_PORT, or stop it)"
  done
  render_config
  # A data dir formatted for one security mode has the other's logins (or none): never mixed. One
  # from before the broker was secured is moved aside (kept, not deleted) and a new one formatted.
  if [[ -f "$DATA/metadata/meta.properties" && "$(formatted_security)" != "$SECURITY" ]]; then
    (( NODES == 1 )) || die "node $NODE_ID ($DATA) was formatted with KAFKA_SECURITY=$(formatted_security): \`kafka.sh reset --nodes $NODES\` first"
    local aside; aside="$DATA.$(formatted_security)-$(date +%Y%m%d-%H%M%S)"
    log "$DATA was formatted with KAFKA_SECURITY=$(formatted_security): moved to $aside, formatting a new one"
    mv "$DATA" "$aside"
    render_config
  fi
  format_storage
  echo "$SECURITY" >"$DATA/security"
  rm -f "$PIDFILE"
  [[ -f "$LOGFILE" ]] && mv -f "$LOGFILE" "$LOGFILE.prev"
  # setsid: own session, so the caller's Ctrl-C / process-group kill doesn't hit the broker.
  # shellcheck disable=SC2086
  setsid nohup java $HEAP_OPTS $JVM_OPTS $LOG4J -cp "$LIB/*" kafka.Kafka "$CONF" \
    >"$LOGFILE" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  log "started kafka $WANT_VERSION$( ((NODES > 1)) && echo " node $NODE_ID") (pid $(cat "$PIDFILE")) on 127.0.0.1:$PORT, data $DATA, log $LOGFILE"
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
      log "broker$( ((NODES > 1)) && echo " node $NODE_ID") ready on 127.0.0.1:$PORT after $((SECONDS - start))s (pid $pid)"
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
    if [[ "$(formatted_security)" != "$SECURITY" ]]; then
      echo "running pid=$pid port=$PORT security=$(formatted_security), not the wanted $SECURITY data=$DATA"
      return 4
    fi
    local ready="starting"
    grep -q 'Kafka Server started' "$LOGFILE" 2>/dev/null && port_open "$PORT" && ready="ready"
    echo "running ($ready) pid=$pid port=$PORT security=$SECURITY controller_port=$CPORT data=$DATA version=$WANT_VERSION$( ((NODES > 1)) && echo " node=$NODE_ID")"
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

# A crash, for fault drills: SIGKILL, no controlled shutdown.
cmd_kill() {
  local pid
  if ! pid="$(running_pid)"; then
    log "not running"
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$PIDFILE"
  log "killed pid $pid$( ((NODES > 1)) && echo " (node $NODE_ID)")"
}

# ---------------------------------------------------------------- a cluster: every node, or --node I

node_list() { if [[ -n "$ONLY_NODE" ]]; then echo "$ONLY_NODE"; else seq 1 "$NODES"; fi; }

# Run a per-node command on each selected node in turn.
on_nodes() {
  local i rc=0
  for i in $(node_list); do select_node "$i"; "$@" || rc=$?; done
  return "$rc"
}

# Every node is told to stop at once: stopped one by one, the last two would wait out their
# controlled shutdown with the quorum already gone.
cluster_stop() {
  local i pids=() rc=0
  for i in $(node_list); do ( select_node "$i"; cmd_stop ) & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || rc=$?; done
  return "$rc"
}

# 0: every selected node running and of the wanted security; 3: none running; 5: some not running
# (4: a node of another security mode, as for one node).
cluster_status() {
  local i rc up=0 down=0 other=0
  for i in $(node_list); do
    select_node "$i"
    printf 'node %d: ' "$i"
    rc=0; cmd_status || rc=$?
    case "$rc" in 0) up=$((up + 1)) ;; 3) down=$((down + 1)) ;; *) other=$((other + 1)) ;; esac
  done
  (( other == 0 )) || return 4
  (( down == 0 )) && return 0
  (( up == 0 )) && return 3
  return 5
}

cluster_reset() {
  cluster_stop
  if [[ -n "$ONLY_NODE" ]]; then  # one node's disk lost: it is formatted again at its next start
    on_nodes cmd_reset
    return
  fi
  [[ -n "$CLUSTER_DIR" && "$CLUSTER_DIR" != "/" && "$CLUSTER_DIR" != "$REPO" ]] || die "refusing to delete '$CLUSTER_DIR'"
  rm -rf "$CLUSTER_DIR"
  log "deleted $CLUSTER_DIR"
}

# Until no partition of any topic has fewer in-sync replicas than replicas (a restarted node has
# caught up): the next node may then go down without a partition dropping below its minimum ISR.
wait_in_sync() {
  [[ "$SECURITY" == sasl_ssl ]] || { sleep 5; return 0; }
  env -u CRAPS_KAFKA_CONFIG CRAPS_SECRETS_DIR="$SECRETS" PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" \
    python3 -m craps_streams.kafka.cluster in-sync --bootstrap "$BOOTSTRAP_LIST" --timeout "${KAFKA_WAIT_TIMEOUT:-90}" \
    || die "partitions still under-replicated after node $NODE_ID came back"
}

# One node at a time: stop, start, ready, every partition in sync again, then the next.
cmd_restart() {
  local i
  if (( NODES == 1 )); then
    cmd_stop && cmd_start && cmd_wait
    return
  fi
  for i in $(node_list); do
    select_node "$i"
    log "rolling restart: node $i"
    cmd_stop && cmd_start && cmd_wait && wait_in_sync
  done
}

cluster_up() {
  on_nodes cmd_start  # every node before waiting on any: a node is ready only with a quorum
  on_nodes cmd_wait
  cmd_users
}

cluster_logs() {
  local i
  for i in $(node_list); do
    select_node "$i"
    log "---- node $i: $LOGFILE ----"
    tail -n "${ARGS[0]:-100}" "$LOGFILE" || true
  done
}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

if (( NODES > 1 )); then
  case "$CMD" in
    fetch)  cmd_fetch ;;
    start)  on_nodes cmd_start ;;
    wait)   on_nodes cmd_wait ;;
    up)     cluster_up ;;
    secrets) cmd_secrets ;;
    users)  cmd_users ;;
    rotate-password) cmd_rotate_password "${ARGS[0]:-}" ;;
    rotate-cert) cmd_rotate_cert ;;
    stop)   cluster_stop ;;
    kill)   on_nodes cmd_kill ;;
    restart) cmd_restart ;;
    status) cluster_status ;;
    logs)   cluster_logs ;;
    reset)  cluster_reset ;;
    -h|--help|help) usage ;;
    *) usage >&2; exit 2 ;;
  esac
  exit $?
fi

case "$CMD" in
  fetch)  cmd_fetch ;;
  start)  cmd_start ;;
  wait)   cmd_wait ;;
  up)     cmd_start && cmd_wait && cmd_users ;;
  secrets) cmd_secrets ;;
  users)  cmd_users ;;
  rotate-password) cmd_rotate_password "${ARGS[0]:-}" ;;
  rotate-cert) cmd_rotate_cert ;;
  stop)   cmd_stop ;;
  kill)   cmd_kill ;;
  restart) cmd_restart ;;
  status) cmd_status ;;
  logs)   tail -n "${ARGS[0]:-100}" "$LOGFILE" ;;
  reset)  cmd_reset ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
