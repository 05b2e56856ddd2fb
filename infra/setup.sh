#!/usr/bin/env bash
# What a fresh Debian machine lacks for `make run` / `make test`, installed once (each step is
# skipped when already done):
#   infra/setup.sh run    Java and Maven, openssl, Prometheus, the Python package (with its native
#                         accelerator where cargo is present), the Kafka jars, Chart.js (npm)
#                         (and PostgreSQL with LEDGER=postgres)
#   infra/setup.sh test   the same, Chromium for the browser tests, tmux for the status panel's test and
#                         poppler-utils for the report's PDF test, PostgreSQL for the ledger's tests
#   infra/setup.sh bench  the run goal's, a JDK (javac) and the Kafka Streams contender of
#                         benchmarks/pipeline_bench.py built (benchmarks/kstreams, Maven); the
#                         benchmark builds it on demand too, so this is needed only on a machine
#                         that should run it offline later
# Debian packages need root (or password-less sudo); without it, one line says what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
goal="${1:-run}"
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v openssl >/dev/null 2>&1 || need+=(openssl)  # the broker's CA and certificate (kafka.sh secrets)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [[ $goal == test ]] && ! command -v chromium >/dev/null 2>&1; then need+=(chromium); fi
if [[ $goal == test ]] && ! command -v tmux >/dev/null 2>&1; then need+=(tmux); fi
if [[ $goal == bench ]] && ! command -v javac >/dev/null 2>&1; then need+=(openjdk-17-jdk-headless); fi
if [[ $goal == test ]] && ! command -v pdftotext >/dev/null 2>&1; then need+=(poppler-utils); fi  # the report's PDF test
# The ledger's tests start a PostgreSQL of their own (tests/postgres.py) from Debian's package.
# So does `make run LEDGER=postgres` (infra/postgres/postgres.sh).
if [[ $goal == test || ${LEDGER:-} == postgres ]] && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  need+=(postgresql)
fi
if ((${#need[@]})); then
  if [[ $(id -u) == 0 ]]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo)
  else
    echo "setup: missing ${need[*]}: run 'sudo apt-get install -y ${need[*]}', then 'make $goal' again" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]} from Debian's packages (a minute or two) ..." >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The package's build compiles the native accelerator (docs/native-core.md) where cargo is on PATH
# (rustup puts it in ~/.cargo/bin, which a non-login shell may not have), and leaves it out otherwise.
if ! command -v cargo >/dev/null 2>&1 && [[ -x "$HOME/.cargo/bin/cargo" ]]; then export PATH="$HOME/.cargo/bin:$PATH"; fi
if command -v cargo >/dev/null 2>&1; then
  echo "setup: the Python package, its dependencies and its native accelerator (cargo, a minute the first time) ..." >&2
else
  echo "setup: no cargo on PATH: the Python package without its native accelerator; the Python rules core will run" >&2
fi
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
# An editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (this machine's
# environment does) every process would compile every module from source at start: about 25 ms of
# each command's CPU (replay's start). Python still reads the .pyc written
# here, and recompiles in memory any module edited since, so a stale file is never run.
python3 -m compileall -q craps_streams >/dev/null
echo "setup: the floor view's charting library (npm) ..." >&2
infra/floor/fetch-assets.sh
infra/kafka/kafka.sh fetch
if [[ $goal == bench ]]; then
  echo "setup: the Kafka Streams pass-through of the throughput benchmark (Maven, a minute the first time) ..." >&2
  python3 benchmarks/kstreams_passthrough.py >/dev/null
fi
