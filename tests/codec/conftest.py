"""Codec tests: make the repository root (for ``craps_streams``) and this folder (for the shared
hypothesis strategies, ``codec_strategies``) importable whatever pytest's import mode."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)
