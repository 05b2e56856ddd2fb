#!/usr/bin/env bash
# Builds the native rules core (native/, Rust + PyO3) into streams/rules/_native<EXT_SUFFIX>, the
# extension streams/rules/native.py loads (docs/native-core.md). Run by infra/setup.sh and
# `make install` after the pip install; CI runs it the same way. Needs cargo (rustup.rs) and the
# Python that will import it (PYTHON, default python3: its version and ABI name the file).
#     bash native/build.sh            # cargo build --release --locked, then the copy
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
py=${PYTHON:-python3}
if ! command -v cargo >/dev/null 2>&1; then
  [[ -x "$HOME/.cargo/bin/cargo" ]] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "native/build.sh: cargo not found: install Rust (https://rustup.rs), then run it again" >&2
  exit 1
fi
# PyO3 builds against this interpreter (not a pyenv shim): its sysconfig names the extension.
interp=$("$py" -c 'import sys; print(sys.executable)')
suffix=$("$interp" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
export PYO3_PYTHON="$interp"
# The sources' digest goes into the extension (SOURCE_DIGEST): streams/rules/native.py refuses an
# extension built from other sources than native/ holds (native/source_digest.py says why).
CRAPS_NATIVE_SOURCE=$("$interp" "$here/source_digest.py" "$here")
export CRAPS_NATIVE_SOURCE
cargo build --release --locked --quiet --manifest-path "$here/Cargo.toml"
target=${CARGO_TARGET_DIR:-$here/target}
case "$(uname -s)" in
  Darwin) lib="$target/release/libcraps_native.dylib" ;;
  *) lib="$target/release/libcraps_native.so" ;;
esac
dest="$root/streams/rules/_native$suffix"
# Copied to a temporary name and renamed: a process that has the old file mapped keeps it.
cp "$lib" "$dest.tmp"
mv -f "$dest.tmp" "$dest"
echo "native/build.sh: $dest" >&2
