"""The build of the optional accelerator (docs/native-core.md): setuptools-rust compiles the Rust
crate in native/ into `craps_streams.accelerator._native` when a Rust toolchain is on PATH, and leaves it out,
with one line, when there is none (`optional=True`): the package then runs its Python core.
Everything else of the build is declared in pyproject.toml."""
import os
import runpy
from pathlib import Path

from setuptools import setup
from setuptools_rust import Binding, RustExtension

NATIVE = Path(__file__).resolve().parent / "native"
# The digest of the crate's sources goes into the extension (SOURCE_DIGEST): craps_streams/accelerator/rules.py
# refuses an extension built in place from other sources than native/ now holds.
# The directory it is built from goes in too (SOURCE_DIR): where that check reads the sources, so an
# installed extension whose directory holds no sources (a wheel) is not checked.
# cargo inherits both from this environment (lib.rs reads them with env!).
os.environ["CRAPS_NATIVE_SOURCE"] = runpy.run_path(str(NATIVE / "source_digest.py"))["source_digest"](NATIVE)
os.environ["CRAPS_NATIVE_SOURCE_DIR"] = str(NATIVE)

setup(
    rust_extensions=[
        RustExtension(
            "craps_streams.accelerator._native",
            path="native/Cargo.toml",
            binding=Binding.PyO3,
            optional=True,
            debug=False,  # an editable install builds the release profile too (the speed is the point)
            args=["--locked"],
        )
    ],
)
