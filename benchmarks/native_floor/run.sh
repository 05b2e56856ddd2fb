#!/bin/sh
# The native-core floor experiment (docs/native-core-floor.md), in one command:
#     benchmarks/native_floor/run.sh [--rounds 7]      build the crate, check, time (medians)
#     benchmarks/native_floor/run.sh --callgrind      + instructions per variant (valgrind, minutes)
# Needs cargo, crapssim==0.4.1 and the project importable (run from a checkout).
set -e
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONHASHSEED=0
py=$("${PYTHON:-python3}" -c "import sys; print(sys.executable)")  # the interpreter itself, not a pyenv shim (valgrind)
if [ "$1" = "--callgrind" ]; then
    shift
    nice -n 19 "$py" "$root/benchmarks/native_floor_bench.py" "$@" --rounds 1 >/dev/null  # builds
    out=$(mktemp -d)
    for v in null_apply floor_bare floor_fields floor_reads floor_collected floor_tuples floor_apply \
             tier2_loop tier2_apply tier2_apply_attr python crapssim; do
        nice -n 19 valgrind --tool=callgrind --toggle-collect=_operator_call --callgrind-out-file="$out/$v" \
            "$py" "$root/benchmarks/native_floor_bench.py" --no-build --only "$v" 2>"$out/$v.log"
        printf '%-16s %15s instructions\n' "$v" "$(sed -n 's/^summary: //p' "$out/$v")"
    done
    rm -rf "$out"
else
    exec nice -n 19 "$py" "$root/benchmarks/native_floor_bench.py" "$@"
fi
