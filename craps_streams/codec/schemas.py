"""Loading the Avro schemas of ``craps_streams/schemas/`` once: parsed, canonical form, fingerprint.

Every ``*.avsc`` file of the schema directory holds one top-level named schema. A file may refer to
a named type defined in another file by its name: references are inlined at load time (first use
inlined, later uses by name, as Avro requires) so each loaded schema is self-contained, which is
what fingerprints, container files and independent readers need.

Old versions of a schema may be kept in ``craps_streams/schemas/history/*.avsc``: they are loaded as additional
*writer* schemas, so bytes written with them still decode (resolved to the current schema).

The directory is ``craps_streams/schemas/``, shipped inside the package, unless the process's edge
names another (the setting CRAPS_SCHEMA_DIR, handed over with ``use_schema_dir``).
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import msgspec

from craps_streams.codec.errors import CodecError

# fastavro is imported where a schema is parsed or fingerprinted, not here: every command's edge
# imports this module (`settings.use` names the schema directory), and a JSON Lines replay never
# parses a schema.

NAMESPACE = "casino.craps.v1"
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_NAMED = ("record", "enum", "fixed", "error")
# The contract travels with the code: package data, never looked for outside the package.
PACKAGED_SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


_schema_dir = [PACKAGED_SCHEMAS]


def use_schema_dir(path: Path | str | None) -> None:
    """Read the schemas from `path` (None: the package's) in this process: called by the edge,
    before the first message is encoded or decoded (the default codec is loaded once)."""
    _schema_dir[0] = Path(path) if path is not None else PACKAGED_SCHEMAS


def default_schema_dir() -> Path:
    """The schemas shipped inside the package (``craps_streams/schemas/``, the same in a checkout,
    an editable install and a wheel), unless the edge named another (``use_schema_dir``)."""
    return _schema_dir[0]


class LoadedSchema(msgspec.Struct, frozen=True):
    name: str  # unqualified record name, e.g. "WagerSettled"
    fullname: str  # e.g. "casino.craps.v1.WagerSettled"
    path: Path | None
    source: dict  # the self-contained JSON schema (references inlined)
    parsed: dict  # fastavro.parse_schema(source)
    canonical: str  # Parsing Canonical Form
    fingerprint: bytes  # CRC-64-AVRO of the canonical form, 8 bytes little-endian


def fingerprint64(canonical: str) -> bytes:
    """CRC-64-AVRO (Rabin) fingerprint of a Parsing Canonical Form, as the 8 little-endian bytes
    that the Avro single-object encoding puts after its ``C3 01`` marker."""
    from fastavro.schema import fingerprint

    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


def _fullname(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _collect_definitions(schema, namespace: str | None, out: dict[str, dict]) -> None:
    if isinstance(schema, list):
        for s in schema:
            _collect_definitions(s, namespace, out)
    elif isinstance(schema, dict):
        t = schema.get("type")
        if t in _NAMED:
            full = _fullname(schema["name"], schema.get("namespace", namespace))
            ns = full.rpartition(".")[0] or None
            out.setdefault(full, (schema, ns))
            for f in schema.get("fields", ()):
                _collect_definitions(f["type"], ns, out)
        elif t == "array":
            _collect_definitions(schema["items"], namespace, out)
        elif t == "map":
            _collect_definitions(schema["values"], namespace, out)
        elif isinstance(t, (dict, list)):
            _collect_definitions(t, namespace, out)


def _inline(schema, namespace: str | None, defs: dict, seen: set[str]):
    """A copy of `schema` with references to types defined elsewhere inlined at first use."""
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return schema
        full = _fullname(schema, namespace)
        if full not in defs and schema in defs:
            full = schema
        if full in seen:
            return full
        if full not in defs:
            raise CodecError(f"unknown named type {schema!r} (namespace {namespace!r})")
        definition, def_ns = defs[full]
        inlined = _inline(definition, def_ns, defs, seen)
        if isinstance(inlined, dict):
            inlined = dict(inlined)
            inlined["name"] = full.rpartition(".")[2]
            ns = full.rpartition(".")[0]
            if ns:
                inlined["namespace"] = ns
        return inlined
    if isinstance(schema, list):
        return [_inline(s, namespace, defs, seen) for s in schema]
    if isinstance(schema, dict):
        t = schema.get("type")
        out = dict(schema)
        if t in _NAMED:
            full = _fullname(schema["name"], schema.get("namespace", namespace))
            seen.add(full)
            ns = full.rpartition(".")[0] or None
            if "fields" in schema:
                out["fields"] = [dict(f, type=_inline(f["type"], ns, defs, seen)) for f in schema["fields"]]
        elif t == "array":
            out["items"] = _inline(schema["items"], namespace, defs, seen)
        elif t == "map":
            out["values"] = _inline(schema["values"], namespace, defs, seen)
        elif isinstance(t, (dict, list)):
            out["type"] = _inline(t, namespace, defs, seen)
        elif isinstance(t, str) and t not in PRIMITIVES:  # {"type": "SomeNamedType"}
            return _inline(t, namespace, defs, seen)
        return out
    raise CodecError(f"not a schema: {schema!r}")


def make_loaded(source: dict, path: Path | None = None) -> LoadedSchema:
    """Parse one self-contained schema (a JSON object) into a LoadedSchema."""
    import fastavro
    from fastavro.schema import to_parsing_canonical_form

    try:
        parsed = fastavro.parse_schema(copy.deepcopy(source), _force=True)
        canonical = to_parsing_canonical_form(parsed)
    except Exception as e:
        raise CodecError(f"invalid schema {path or source.get('name')!r}: {e}") from e
    fullname = parsed["name"]
    return LoadedSchema(
        name=fullname.rpartition(".")[2], fullname=fullname, path=path, source=source,
        parsed=parsed, canonical=canonical, fingerprint=fingerprint64(canonical),
    )


def load_texts(texts: dict[str, str]) -> dict[str, dict]:
    """Self-contained JSON schemas from a set of ``.avsc`` texts (key: file name) that may refer to
    each other's named types."""
    raw: dict[str, dict] = {}
    for key, text in texts.items():
        try:
            raw[key] = json.loads(text)
        except ValueError as e:
            raise CodecError(f"{key}: not JSON: {e}") from e
    defs: dict[str, tuple[dict, str | None]] = {}
    for schema in raw.values():
        _collect_definitions(schema, None, defs)
    return {key: _inline(schema, None, defs, set()) for key, schema in raw.items()}


def load_dir(schema_dir: Path | str | None = None) -> dict[str, LoadedSchema]:
    """The current schemas of a directory, keyed by unqualified record name."""
    d = Path(schema_dir) if schema_dir is not None else default_schema_dir()
    paths = sorted(d.glob("*.avsc"))
    if not paths:
        raise CodecError(f"no .avsc schemas in {d}")
    sources = load_texts({str(p): p.read_text(encoding="utf-8") for p in paths})
    out: dict[str, LoadedSchema] = {}
    for p in paths:
        loaded = make_loaded(sources[str(p)], p)
        if loaded.name in out:
            raise CodecError(f"record {loaded.name} defined by both {out[loaded.name].path} and {p}")
        out[loaded.name] = loaded
    return out


def load_history(schema_dir: Path | str | None = None) -> list[LoadedSchema]:
    """Older writer schemas kept in ``<schema dir>/history/*.avsc`` (each self-contained)."""
    d = (Path(schema_dir) if schema_dir is not None else default_schema_dir()) / "history"
    return [make_loaded(json.loads(p.read_text(encoding="utf-8")), p) for p in sorted(d.glob("*.avsc"))]
