"""Backward-compatibility gate for the Avro schemas (usable from CI).

Backward compatible means: a reader using the NEW schema can read everything written with the OLD
one, so consumers can be upgraded before producers, and archives and topics written before the
change stay readable. Two independent checks, both with reader = new, writer = old:

1. ``static_problems``: the Avro schema-resolution rules (field defaults, type promotions, unions,
   enums, named types) applied to the two schemas; explains each problem with a path. Record names
   are compared by full name (or reader alias), as fastavro resolves them.
2. ``sample_problems``: sample datums generated from the old schema (covering every union branch,
   enum symbol, null and non-null option, extreme ints) are written with fastavro using the old
   schema and read back with ``reader_schema=new``.

``check_repo`` compares each ``craps_streams/schemas/*.avsc`` of the working tree with its version at a git
revision (default HEAD, read with ``git show``; a file new in the working tree is compared with
itself). Command line::

    python -m craps_streams.codec.compatibility [--rev HEAD] [--schema-dir schemas]

exits 1 and lists the problems when a schema is not backward compatible.
"""
from __future__ import annotations

import argparse
import copy
import io
import subprocess
import sys
from pathlib import Path

import fastavro

from craps_streams.codec.schemas import (
    PRIMITIVES,
    _collect_definitions,
    _fullname,
    default_schema_dir,
    load_texts,
)

_PROMOTIONS = {
    "int": {"int", "long", "float", "double"},
    "long": {"long", "float", "double"},
    "float": {"float", "double"},
    "string": {"string", "bytes"},
    "bytes": {"bytes", "string"},
}
_NAMED = ("record", "enum", "fixed", "error")


# ---------------------------------------------------------------- static check


class _Ctx:
    def __init__(self, schema):
        self.defs: dict[str, tuple[dict, str | None]] = {}
        _collect_definitions(schema, None, self.defs)

    def resolve(self, t, ns):
        """(normalized type, namespace to use inside it)."""
        if isinstance(t, str):
            if t in PRIMITIVES:
                return t, ns
            full = _fullname(t, ns)
            if full not in self.defs and t in self.defs:
                full = t
            if full not in self.defs:
                raise ValueError(f"unknown named type {t!r}")
            definition, def_ns = self.defs[full]
            return definition, def_ns
        if isinstance(t, dict):
            kind = t.get("type")
            if kind in _NAMED:
                full = _fullname(t["name"], t.get("namespace", ns))
                return t, full.rpartition(".")[0] or None
            if isinstance(kind, str) and kind in PRIMITIVES:
                return kind, ns  # {"type": "long", "logicalType": ...}: resolution is by base type
            if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in ("array", "map")):
                return self.resolve(kind, ns)
        return t, ns


def _kind(t) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, list):
        return "union"
    return t["type"]


def _names(t, ns) -> set[str]:
    full = _fullname(t["name"], t.get("namespace", ns))
    space = full.rpartition(".")[0] or None
    return {full} | {_fullname(a, space) for a in t.get("aliases", ())}


def _matches(r, rns, w, wns) -> bool:
    """Avro's 'match' used to pick a reader union branch for a writer type."""
    rk, wk = _kind(r), _kind(w)
    if rk in PRIMITIVES and wk in PRIMITIVES:
        return rk in _PROMOTIONS.get(wk, {wk})
    if rk != wk:
        return False
    if rk in _NAMED:
        return _fullname(w["name"], w.get("namespace", wns)) in _names(r, rns)
    return rk in ("array", "map")


def _compat(r, rns, w, wns, rc: _Ctx, wc: _Ctx, path: str, seen: set, out: list[str]) -> None:
    r, rns = rc.resolve(r, rns)
    w, wns = wc.resolve(w, wns)
    if isinstance(w, list):
        for i, branch in enumerate(w):
            _compat(r, rns, branch, wns, rc, wc, f"{path}<branch {i}: {_label(branch)}>", seen, out)
        return
    if isinstance(r, list):
        for branch in r:
            b, bns = rc.resolve(branch, rns)
            if _matches(b, bns, w, wns):
                _compat(b, bns, w, wns, rc, wc, path, seen, out)
                return
        out.append(f"{path}: writer type {_label(w)} matches no branch of the reader union "
                   f"[{', '.join(_label(b) for b in r)}]")
        return
    rk, wk = _kind(r), _kind(w)
    if not _matches(r, rns, w, wns):
        if rk == wk and rk in _NAMED:
            out.append(f"{path}: {rk} name changed: {_fullname(w['name'], w.get('namespace', wns))} -> "
                       f"{_fullname(r['name'], r.get('namespace', rns))} (keep the name or add the old one "
                       f"to the reader's aliases)")
        else:
            out.append(f"{path}: writer type {_label(w)} cannot be read as {_label(r)}")
        return
    if rk in _NAMED:
        key = (_fullname(r["name"], r.get("namespace", rns)), _fullname(w["name"], w.get("namespace", wns)))
        if key in seen:
            return
        seen = seen | {key}
    if rk in ("record", "error"):
        wfields = {f["name"]: f for f in w["fields"]}
        for f in r["fields"]:
            wf = wfields.get(f["name"])
            if wf is None:
                wf = next((wfields[a] for a in f.get("aliases", ()) if a in wfields), None)
            if wf is None:
                if "default" not in f:
                    out.append(f"{path}.{f['name']}: new field without a default (old data has no value for it)")
                continue
            _compat(f["type"], rns, wf["type"], wns, rc, wc, f"{path}.{f['name']}", seen, out)
    elif rk == "enum":
        missing = [s for s in w["symbols"] if s not in r["symbols"]]
        if missing and "default" not in r:
            out.append(f"{path}: enum symbols {missing} removed and the reader enum has no default")
    elif rk == "fixed":
        if r["size"] != w["size"]:
            out.append(f"{path}: fixed size {w['size']} -> {r['size']}")
    elif rk == "array":
        _compat(r["items"], rns, w["items"], wns, rc, wc, f"{path}[]", seen, out)
    elif rk == "map":
        _compat(r["values"], rns, w["values"], wns, rc, wc, f"{path}{{}}", seen, out)


def _label(t) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, list):
        return "union"
    if t.get("type") in _NAMED:
        return f"{t['type']} {t['name']}"
    return str(t.get("type"))


def static_problems(old: dict, new: dict) -> list[str]:
    """Why data written with `old` cannot be read with `new` (empty: compatible)."""
    out: list[str] = []
    try:
        _compat(new, None, old, None, _Ctx(new), _Ctx(old), _label(new) if isinstance(new, dict) else "$",
                set(), out)
    except (KeyError, TypeError, ValueError) as e:
        out.append(f"cannot analyse schemas: {type(e).__name__}: {e}")
    return out


# ---------------------------------------------------------------- samples


_INTS = (0, 1, -1, 2**31 - 1, -(2**31), 123456)
_LONGS = (0, 1, -1, 2**63 - 1, -(2**63), 1_700_000_000_000)


def sample_datums(schema: dict, count: int | None = None) -> list:
    """Deterministic datums valid for `schema`: sample k takes branch k (mod n) of every union and
    symbol k of every enum, so together they cover every branch and symbol."""
    ctx = _Ctx(schema)
    widths = [3]

    def scan(t, ns, seen):
        t, ns = ctx.resolve(t, ns)
        if isinstance(t, list):
            widths.append(len(t))
            for b in t:
                scan(b, ns, seen)
        elif isinstance(t, dict):
            k = t["type"]
            if k in _NAMED:
                full = _fullname(t["name"], t.get("namespace", ns))
                if full in seen:
                    return
                seen.add(full)
            if k == "enum":
                widths.append(len(t["symbols"]))
            for f in t.get("fields", ()):
                scan(f["type"], ns, seen)
            if k == "array":
                scan(t["items"], ns, seen)
            if k == "map":
                scan(t["values"], ns, seen)

    scan(schema, None, set())
    n = count if count is not None else max(widths) * 2
    return [_sample(schema, None, ctx, k, 0) for k in range(n)]


def _sample(t, ns, ctx: _Ctx, k: int, depth: int):
    t, ns = ctx.resolve(t, ns)
    if isinstance(t, list):
        order = range(len(t))
        if depth > 6:  # recursive types: prefer a branch that ends the recursion
            order = sorted(order, key=lambda i: _kind(ctx.resolve(t[i], ns)[0]) not in PRIMITIVES)
            i = next(iter(order))
        else:
            i = k % len(t)
        branch, bns = ctx.resolve(t[i], ns)
        value = _sample(branch, bns, ctx, k, depth + 1)
        if isinstance(branch, dict) and branch.get("type") in _NAMED:
            return (_fullname(branch["name"], branch.get("namespace", bns)), value)
        return value
    kind = _kind(t)
    if kind == "null":
        return None
    if kind == "boolean":
        return k % 2 == 0
    if kind == "int":
        return _INTS[k % len(_INTS)]
    if kind == "long":
        return _LONGS[k % len(_LONGS)]
    if kind in ("float", "double"):
        return (k - 2) * 1.5
    if kind == "bytes":
        return bytes(range(k % 4))
    if kind == "string":
        return ("", "x", f"sample-{k}", "ünïcødé")[k % 4]
    if kind == "enum":
        return t["symbols"][k % len(t["symbols"])]
    if kind == "fixed":
        return bytes([k % 256]) * t["size"]
    if kind == "array":
        return [] if depth > 6 else [_sample(t["items"], ns, ctx, k + i, depth + 1) for i in range(k % 3)]
    if kind == "map":
        return {} if depth > 6 else {f"k{i}": _sample(t["values"], ns, ctx, k + i, depth + 1) for i in range(k % 3)}
    if kind in ("record", "error"):
        return {f["name"]: _sample(f["type"], ns, ctx, k, depth + 1) for f in t["fields"]}
    raise ValueError(f"cannot sample {t!r}")


def sample_problems(old: dict, new: dict, count: int | None = None) -> list[str]:
    """Write samples of `old` with fastavro, read them with reader_schema=`new`."""
    try:
        w = fastavro.parse_schema(copy.deepcopy(old), named_schemas={}, _force=True)
        r = fastavro.parse_schema(copy.deepcopy(new), named_schemas={}, _force=True)
    except Exception as e:  # noqa: BLE001
        return [f"schema does not parse: {type(e).__name__}: {e}"]
    out = []
    for k, datum in enumerate(sample_datums(old, count)):
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, w, datum)
        except Exception as e:  # noqa: BLE001
            out.append(f"sample {k}: cannot be written with the old schema: {type(e).__name__}: {_short(e)}")
            continue
        buf.seek(0)
        try:
            fastavro.schemaless_reader(buf, w, r)
        except Exception as e:  # noqa: BLE001
            out.append(f"sample {k}: written with the old schema, unreadable with the new one: "
                       f"{type(e).__name__}: {_short(e)}")
    return out


def _short(e: Exception, limit: int = 300) -> str:
    text = str(e)
    return text if len(text) <= limit else text[:limit] + " ..."


def backward_problems(old: dict, new: dict) -> list[str]:
    """Both checks; empty when `new` can read everything written with `old`."""
    return static_problems(old, new) + sample_problems(old, new)


def is_backward_compatible(old: dict, new: dict) -> bool:
    return not backward_problems(old, new)


# ---------------------------------------------------------------- against git


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def previous_texts(schema_dir: Path, rev: str = "HEAD") -> dict[str, str]:
    """File name -> text of the ``*.avsc`` files of `schema_dir` at git revision `rev` (read-only
    git: ``ls-tree`` and ``show``); empty when not in a repository or the revision does not exist."""
    schema_dir = Path(schema_dir).resolve()
    top = _git(["rev-parse", "--show-toplevel"], schema_dir)
    if top.returncode != 0:
        return {}
    root = Path(top.stdout.strip()).resolve()
    rel = schema_dir.relative_to(root).as_posix()
    listing = _git(["ls-tree", "--name-only", f"{rev}:{rel}" if rel != "." else rev], root)
    if listing.returncode != 0:
        return {}
    out = {}
    for name in listing.stdout.splitlines():
        if name.endswith(".avsc"):
            shown = _git(["show", f"{rev}:{rel}/{name}" if rel != "." else f"{rev}:{name}"], root)
            if shown.returncode == 0:
                out[name] = shown.stdout
    return out


def check_repo(schema_dir: Path | str | None = None, rev: str = "HEAD") -> dict[str, list[str]]:
    """File name -> problems, for every schema of the working tree against its version at `rev`
    (a file new in the working tree is compared with itself; a file removed since `rev` is a
    problem)."""
    d = Path(schema_dir) if schema_dir is not None else default_schema_dir()
    current = {p.name: p.read_text(encoding="utf-8") for p in sorted(d.glob("*.avsc"))}
    previous = previous_texts(d, rev)
    results: dict[str, list[str]] = {}
    for name in sorted(set(previous) - set(current)):
        results[name] = [f"removed since {rev}: data written with it can no longer be read"]
    try:
        new_all = load_texts(current)
    except Exception as e:  # noqa: BLE001
        return {**results, "*": [f"current schemas do not load: {e}"]}
    old_texts = {name: previous.get(name, text) for name, text in current.items()}
    old_texts.update({n: t for n, t in previous.items() if n not in current})
    try:
        old_all = load_texts(old_texts)
    except Exception as e:  # noqa: BLE001
        return {**results, "*": [f"schemas at {rev} do not load: {e}"]}
    for name in current:
        results[name] = backward_problems(old_all[name], new_all[name])
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", default="HEAD", help="git revision holding the previous schemas (default HEAD)")
    ap.add_argument("--schema-dir", default=None, help="schema directory (default: the schemas inside the package)")
    args = ap.parse_args(argv)
    results = check_repo(args.schema_dir, args.rev)
    bad = 0
    for name, problems in results.items():
        print(f"{'FAIL' if problems else 'ok  '} {name}")
        for p in problems:
            print(f"     {p}")
        bad += bool(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
