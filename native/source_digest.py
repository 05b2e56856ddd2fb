"""The digest of the native accelerator's sources: the package's build (setup.py) builds it into the
extension (`SOURCE_DIGEST`), and craps_streams/accelerator/rules.py compares it with the sources beside it at
import (an editable install, or a checkout with a build in place).

Why: a rule changed in native/src/ (or a checkout that moved to newer sources) without a rebuild
would leave the old extension settling by the old rule, silently. With the digest, an extension
built from other sources than the checkout holds is refused (the Python core, the reference,
settles instead, and `CRAPS_CORE=native` fails saying to rebuild). Standard library only, so
setup.py runs it before anything of the package can be imported.

    python native/source_digest.py [NATIVE_DIR]    # prints the digest
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

# Everything that decides the built code: the manifest, the locked crate versions, every source file.
FILES = ("Cargo.toml", "Cargo.lock")


def source_digest(native_dir: Path) -> str:
    """SHA-256 over each file's path (relative, /-separated), length and bytes, in a fixed order."""
    digest = hashlib.sha256()
    paths = [native_dir / name for name in FILES] + sorted((native_dir / "src").rglob("*.rs"))
    for path in paths:
        content = path.read_bytes()
        digest.update(f"{path.relative_to(native_dir).as_posix()}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


if __name__ == "__main__":
    print(source_digest(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent))
