#!/usr/bin/env bash
# What a fresh Debian machine lacks for `make run` / `make test`, installed once (each step is
# skipped when already done):
#   infra/setup.sh run    Java and Maven, openssl, Prometheus, the Python package, the native rules
#                         core (Rust via rustup when cargo is missing; native/build.sh), the Kafka jars, Chart.js (npm)
#   infra/setup.sh test   the same, Chromium for the browser tests and tmux for the status panel's test
# Debian packages need root (or password-less sudo); without it, one line says what to run.
set -euo pipefail
cd "$(dirname "$0")/.."
goal="${1:-run}"
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v openssl >/dev/null 2>&1 || need+=(openssl)  # the broker's CA and certificate (kafka.sh secrets)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
have_cargo() { command -v cargo >/dev/null 2>&1 || [[ -x "$HOME/.cargo/bin/cargo" ]]; }
have_cargo || command -v curl >/dev/null 2>&1 || need+=(curl)  # rustup's installer, below
if [[ $goal == test ]] && ! command -v chromium >/dev/null 2>&1; then need+=(chromium); fi
if [[ $goal == test ]] && ! command -v tmux >/dev/null 2>&1; then need+=(tmux); fi
if [[ $goal == test ]] && ! command -v pdftotext >/dev/null 2>&1; then need+=(poppler-utils); fi  # the report's PDF test
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
echo "setup: the Python package and its dependencies ..." >&2
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e '.[test]'
# The native rules core (docs/native-core.md): Rust, built with cargo into streams/rules/. Debian's
# own rustc is too old for PyO3's crates; rustup installs the current stable toolchain in ~/.cargo.
if ! have_cargo; then
  echo "setup: the Rust toolchain (rustup, a minute) ..." >&2
  if ! curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y -q --profile minimal >/dev/null; then
    echo "setup: could not install Rust with rustup (is https://sh.rustup.rs reachable?): install cargo" \
         "(a current stable Rust) another way, then run 'make $goal' again" >&2
    exit 1
  fi
fi
echo "setup: the native rules core (cargo build, a minute the first time) ..." >&2
bash native/build.sh
# An editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (this machine's
# environment does) every process would compile every module from source at start: about 25 ms of
# each command's CPU (replay's start). Python still reads the .pyc written
# here, and recompiles in memory any module edited since, so a stale file is never run.
python3 -m compileall -q streams >/dev/null
echo "setup: the floor view's charting library (npm) ..." >&2
infra/floor/fetch-assets.sh
infra/kafka/kafka.sh fetch
