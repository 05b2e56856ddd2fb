#!/usr/bin/env bash
# A PostgreSQL of the project's own for the ledger (docs/operating/ledger.md): Debian's package
# (apt-get install -y postgresql), a data directory of its own, loopback only, TLS required
# (a CA and a server certificate made here with openssl, clients verify it: sslmode=verify-full),
# SCRAM logins, one per role: `postgres` administers, `ledger` owns the ledger's databases and
# writes them, `finance` may only read them. `make run LEDGER=postgres` and the tests
# (tests/postgres.py) start theirs with it.
#
#   infra/postgres/postgres.sh up              # made at the first start (certificates, logins, initdb), started
#   infra/postgres/postgres.sh database NAME [--fresh]   # a ledger database (--fresh: dropped first)
#   infra/postgres/postgres.sh url ROLE [NAME] # the role's SQLAlchemy URL of database NAME (default ledger)
#   infra/postgres/postgres.sh psql [ARGS]     # psql as `postgres`
#   infra/postgres/postgres.sh restart         # fast shutdown, then start
#   infra/postgres/postgres.sh stop [--immediate]  # fast shutdown (--immediate: without a checkpoint)
#   infra/postgres/postgres.sh status          # exit 0 if running, 3 if not
#   infra/postgres/postgres.sh reset           # stop and delete the directory
#
# Environment:
#   PG_DIR        the directory: data/, log, the CA and certificate, the logins' passwords (0600)
#                                                             default: $REPO/.run/postgres
#   PG_PORT       the port on 127.0.0.1 (kept in $PG_DIR/port by `up`)   default: 5433
#   PG_FSYNC      on | off (off: a test cluster, never a floor's)        default: on
#   PG_CERT_DAYS  the CA's and certificate's validity                    default: 825
#
# initdb refuses root: as root, the directory belongs to the `postgres` user and the server's
# tools run under runuser (the one that runs the ledger reads the CA and the passwords as root).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
# Absolute: the server resolves the paths in its configuration from its data directory.
DIR="$(realpath -m "${PG_DIR:-$REPO/.run/postgres}")"
CMD="${1:-}"
(( $# )) && shift

bin_dir() {
  local found
  found="$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -n 1 || true)"
  if [[ -z $found ]]; then
    echo "postgres.sh: PostgreSQL is not installed: apt-get install -y postgresql" >&2
    exit 1
  fi
  dirname "$found"
}

as_postgres() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port() { cat "$DIR/port" 2>/dev/null || echo "${PG_PORT:-5433}"; }

running() { [[ -d $DIR/data ]] && as_postgres "$(bin_dir)/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; }

make_tls() {
  local days="${PG_CERT_DAYS:-825}"
  openssl req -x509 -new -newkey rsa:2048 -noenc -keyout "$DIR/ca.key" -out "$DIR/ca.crt" -days "$days" \
    -subj "/CN=craps-streams ledger postgres CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
  openssl req -new -newkey rsa:2048 -noenc -keyout "$DIR/server.key" -out "$DIR/server.csr" \
    -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$DIR/server.ext"
  openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.crt" -CAkey "$DIR/ca.key" -CAcreateserial \
    -days "$days" -extfile "$DIR/server.ext" -out "$DIR/server.crt" 2>/dev/null
  chmod 600 "$DIR/ca.key" "$DIR/server.key"
}

# The directory, its certificates, logins and cluster, made once; the server left stopped.
init() {
  [[ -f $DIR/data/PG_VERSION ]] && return 0
  local bin role
  bin="$(bin_dir)"
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  (umask 077
   for role in postgres ledger finance; do
     [[ -s $DIR/$role.password ]] || openssl rand -hex 16 >"$DIR/$role.password"
   done)
  [[ -f $DIR/server.crt ]] || make_tls
  [[ $(id -u) == 0 ]] && chown -R postgres "$DIR"
  if ! as_postgres test -r "$DIR/postgres.password"; then
    echo "postgres.sh: the postgres user cannot enter $DIR: give it a directory it can reach (PG_DIR)" >&2
    exit 1
  fi
  local sync=()
  [[ ${PG_FSYNC:-on} == off ]] && sync=(--no-sync)
  as_postgres "$bin/initdb" -D "$DIR/data" -A scram-sha-256 -U postgres --pwfile="$DIR/postgres.password" \
    "${sync[@]}" >"$DIR/initdb.log"
  cat >>"$DIR/data/postgresql.conf" <<CONF

# craps-streams (infra/postgres/postgres.sh): loopback only, TLS, a socket directory of its own
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
ssl = on
ssl_cert_file = '$DIR/server.crt'
ssl_key_file = '$DIR/server.key'
fsync = ${PG_FSYNC:-on}
CONF
  # TLS and SCRAM only over TCP; the administrator's socket needs its password too.
  printf 'local all postgres scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n' >"$DIR/data/pg_hba.conf"
  [[ $(id -u) == 0 ]] && chown postgres "$DIR/data/pg_hba.conf"
  touch "$DIR/roles-missing"
}

start() {
  echo "${PG_PORT:-$(port)}" >"$DIR/port"
  as_postgres "$(bin_dir)/pg_ctl" -D "$DIR/data" -o "-p $(port)" -l "$DIR/log" -w -t 60 start >/dev/null
}

psql_() {
  PGPASSWORD="$(cat "$DIR/postgres.password")" PGOPTIONS="-c client_min_messages=warning" PGSSLMODE=verify-full PGSSLROOTCERT="$DIR/ca.crt" \
    "$(bin_dir)/psql" -h 127.0.0.1 -p "$(port)" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"
}

make_roles() {
  [[ -f $DIR/roles-missing ]] || return 0
  psql_ -d postgres <<SQL
CREATE ROLE ledger LOGIN PASSWORD '$(cat "$DIR/ledger.password")';
CREATE ROLE finance LOGIN PASSWORD '$(cat "$DIR/finance.password")';
SQL
  rm -f "$DIR/roles-missing"
}

# A database `ledger` writes and `finance` only reads (docs/operating/ledger.md, the databases).
database() {
  local name="${1:?database NAME}" fresh="${2:-}"
  [[ $name =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "postgres.sh: not a database name: $name" >&2; exit 2; }
  if [[ $fresh == --fresh ]]; then
    psql_ -d postgres -c "DROP DATABASE IF EXISTS $name WITH (FORCE)"
  fi
  if [[ -z $(psql_ -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$name'") ]]; then
    psql_ -d postgres <<SQL
CREATE DATABASE $name OWNER ledger;
REVOKE ALL ON DATABASE $name FROM PUBLIC;
GRANT CONNECT ON DATABASE $name TO ledger, finance;
SQL
    psql_ -d "$name" <<SQL
REVOKE ALL ON SCHEMA public FROM PUBLIC;
GRANT ALL ON SCHEMA public TO ledger;
GRANT USAGE ON SCHEMA public TO finance;
ALTER DEFAULT PRIVILEGES FOR ROLE ledger IN SCHEMA public GRANT SELECT ON TABLES TO finance;
SQL
  fi
}

case "$CMD" in
  up)
    init
    running || start
    make_roles
    ;;
  database) database "$@" ;;
  url)
    role="${1:?url ROLE [DATABASE]}"
    printf 'postgresql+psycopg://%s:%s@127.0.0.1:%s/%s?sslmode=verify-full&sslrootcert=%s\n' \
      "$role" "$(cat "$DIR/$role.password")" "$(port)" "${2:-ledger}" "$DIR/ca.crt"
    ;;
  psql) psql_ "$@" ;;
  restart)
    as_postgres "$(bin_dir)/pg_ctl" -D "$DIR/data" -o "-p $(port)" -l "$DIR/log" -m fast -w -t 60 restart >/dev/null
    ;;
  stop)
    mode=fast
    [[ ${1:-} == --immediate ]] && mode=immediate
    if running; then as_postgres "$(bin_dir)/pg_ctl" -D "$DIR/data" -m "$mode" -w -t 60 stop >/dev/null; fi
    echo "postgres.sh: stopped ($DIR)"
    ;;
  status)
    if running; then echo "postgres.sh: running on 127.0.0.1:$(port) ($DIR)"; else echo "postgres.sh: not running"; exit 3; fi
    ;;
  reset)
    if running; then as_postgres "$(bin_dir)/pg_ctl" -D "$DIR/data" -m fast -w stop >/dev/null; fi
    rm -rf "$DIR"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
