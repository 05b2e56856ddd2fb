"""The native extension has one face: only the modules of craps_streams/accelerator/ reach
`_native`, and its stub (`_native.pyi`) types every name the extension exposes."""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FACE = ROOT / "craps_streams" / "accelerator"
# The extension reached: imported, or an attribute of it read (not an attribute such as `self._native`).
REACHES = re.compile(r"import _native\b|accelerator\._native\b(?!\.pyi)|(?<![\w.])_native\.(?!pyi\b)\w")


def test_only_the_accelerator_reaches_the_extension():
    outside = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "craps_streams").rglob("*.py"))
               if FACE not in p.parents and REACHES.search(p.read_text())]
    assert outside == []
    inside = [p.name for p in sorted(FACE.glob("*.py")) if REACHES.search(p.read_text())]
    assert {"rules.py", "avro.py", "tags.py", "watch.py", "quiet.py", "lane.py"} <= set(inside), inside


def _stub_names() -> set[str]:
    tree = ast.parse((FACE / "_native.pyi").read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_stub_types_every_name_the_face_reads():
    used = set()
    for path in FACE.glob("*.py"):
        used |= set(re.findall(r"(?<![\w.])_native\.(?!pyi\b)([A-Za-z_]\w*)", path.read_text()))
    assert used and not used - _stub_names(), sorted(used - _stub_names())


def test_the_stub_types_what_the_extension_exposes():
    from craps_streams.accelerator import rules

    if rules._native is None:  # not built here: the names read are still typed (above)
        return
    exposed = {n for n in dir(rules._native) if not n.startswith("_")}
    assert exposed <= _stub_names() and _stub_names() <= exposed, (exposed, _stub_names())
    assert (FACE / "py.typed").is_file()
