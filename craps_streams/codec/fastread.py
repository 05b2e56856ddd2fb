"""Read archive container files straight into the core's events: the fast path of archive replays.

`read_container` + `record_to_event` builds a flat dict per record and then checks it field by
field against the contract. For container files written with the current TableEvent schema, Avro
has already checked most of that: every field is present with its type (strings are str, ints int,
booleans bool, no nulls outside TableOpened.rules). What is left of the contract is cheap (the input
limits: ids of the id format, other strings non-empty and at most 64 characters, key_id and tag at
most 128; seq >= 1, ts >= 0), so a record passing those checks becomes its event directly, with its
key_id and tag (schema v2) for the tag check. Anything
else (a TableOpened, with its rules to parse; a record failing a check; a file of an older schema)
comes out as the flat record, and the caller takes the ordinary path (`record_to_event`), which
rejects it exactly as a JSON Lines replay or the worker would. The events are equal either way.

How the records are decoded. fastavro's generic reader spends about 2.7 µs a record building the
datum (two dicts and a tuple, dispatching on the schema for every field), more than the rules core
takes to apply it. `_block_decoder` generates, from the TableEvent schema itself, a decoder for
whole container blocks (the decompressed bytes fastavro's `block_reader` hands over) that reads
the Avro binary encoding of the kinds above straight into their events: about 2 µs a record, event
included. It decodes only what it is sure of (lengths and longs by the spec's zig-zag varints,
UTF-8 strictly, booleans as fastavro reads them, every kind's type string equal to its union
branch); any other record (a TableOpened, a null or unknown body, a check failing, anything odd)
is decoded by fastavro from the record's first byte and takes the generic path, and a block that
does not end where its records do is decoded again by fastavro as a whole. So the items are
exactly the generic path's (`_datum_items`, also used when the schema has a shape the generator
does not know): the tests compare both on simulated floors, on hand-made odd records and on
corrupted files.
"""
from __future__ import annotations

from io import BytesIO
from itertools import islice
from operator import itemgetter
from typing import Iterator

import fastavro
from fastavro import schemaless_reader
from fastavro.schema import to_parsing_canonical_form

from craps_streams.codec import CodecError, default_codec, read_container
from craps_streams.codec.container import record_of
from craps_streams.codec.schemas import fingerprint64
from craps_streams.rules.contract import ID_FIELDS, MAX_TAG_FIELD, MAX_TEXT, valid_id
from craps_streams.rules.events import INPUT_TYPES, NEW, TAG_FIELDS, TableOpened, field_names

EVENT_TYPES = frozenset(INPUT_TYPES.values())
PRIMITIVES = ("string", "int", "long", "boolean")
# String fields of few distinct values: decoded once into one str object per value (its hash then
# computed once), which the core's dict lookups by table and wager kind are quicker with.
CACHED_STRINGS = frozenset({"table_id", "wager", "reason", "key_id"})
# The optional fields after the body (schema v2): the authentication fields, ["null", "string"].
AFTER_BODY = TAG_FIELDS


def _plan(codec) -> dict:
    """kind -> (kind, event constructor, field getter, names of the string fields, field names,
    Avro types), for the kinds whose Avro body fields are exactly the event's own fields, all
    non-null primitives. Keyed by the kind and by the branch's full name."""
    plan = {}
    body = next(f for f in codec.event_schema.source["fields"] if f["name"] == "body")
    for branch in body["type"]:
        if not isinstance(branch, dict):
            continue
        kind = branch["name"].rpartition(".")[2]
        cls = INPUT_TYPES.get(kind)
        if cls is None or cls is TableOpened:
            continue
        own = list(field_names(cls)[3:-len(TAG_FIELDS)])
        avro = [(f["name"], f["type"]) for f in branch["fields"]]
        if [n for n, _ in avro] != own or any(t not in PRIMITIVES for _, t in avro):
            continue
        if len(own) == 0:
            get = _no_fields
        elif len(own) == 1:
            get = (lambda name: lambda v: (v[name],))(own[0])
        else:
            get = itemgetter(*own)
        entry = (kind, NEW[cls], get, tuple(n for n, t in avro if t == "string"), tuple(own),
                 tuple(t for _, t in avro))
        plan[kind] = entry
        full = codec.kinds.get(kind, (None,))[0]
        if full:
            plan[full] = entry  # fastavro names union branches by their full name
    return plan


def _no_fields(values) -> tuple:
    return ()


# ---------------------------------------------------------------- the generated block decoder


class _Odd(Exception):
    """Raised inside the generated decoder: this record is not one it decodes itself."""


def _long_at(data: bytes, pos: int) -> tuple[int, int]:
    """(zig-zag varint at pos, position after it): the multi-byte case; _Odd beyond 64 bits."""
    b = data[pos]
    v = b & 0x7F
    shift = 7
    while b & 0x80:
        pos += 1
        b = data[pos]
        v |= (b & 0x7F) << shift
        shift += 7
    if v >> 64:
        raise _Odd
    return (v >> 1) ^ -(v & 1), pos + 1


def _length_at(data: bytes, pos: int) -> tuple[int, int]:
    n, pos = _long_at(data, pos)
    if n < 0:
        raise _Odd
    return n, pos


# A one-byte varint (b < 128) by table: its zig-zag value, and its value as a length (None for a
# negative one); None for the first byte of a longer varint.
_ZIGZAG = tuple((b >> 1) ^ -(b & 1) if b < 128 else None for b in range(256))
_LENGTH = tuple(b >> 1 if b < 128 and not b & 1 else None for b in range(256))
_BOOLEAN = (False,) + (True,) * 255  # as fastavro reads one: any byte but 0 is true


def _emit_long(var: str, ind: str) -> list[str]:
    """Code reading the zig-zag varint at `pos` into `var`: one byte by table, longer ones (a ts
    takes six) unrolled, byte by byte; _Odd beyond ten bytes or 64 bits, as no writer writes."""
    out = [f"{ind}{var} = zigzag[data[pos]]",
           f"{ind}if {var} is None:",
           f"{ind}    v = data[pos] & 127"]
    for i in range(1, 10):
        ind += "    "
        last = i == 9  # the tenth byte holds bit 63 only
        out += [f"{ind}b = data[pos + {i}]",
                f"{ind}if b < {2 if last else 128}:",
                f"{ind}    v |= b << {7 * i}",
                f"{ind}    pos += {i + 1}",
                f"{ind}    {var} = (v >> 1) ^ -(v & 1)",
                f"{ind}else:"]
        out += [f"{ind}    raise _Odd"] if last else [f"{ind}    v |= (b & 127) << {7 * i}"]
    return out + [f"{ind[:len(ind) - 4 * 9]}else:", f"{ind[:len(ind) - 4 * 9]}    pos += 1"]


def _emit_string(var: str, ind: str, decode: bool = True, cached: bool = False) -> list[str]:
    # A slice past the end does not fail, but leaves `pos` beyond the end: the next read fails,
    # or the block's last record ends beyond it; either way fastavro decodes it (see `decode`).
    out = [f"{ind}ln = length[data[pos]]",
           f"{ind}if ln is None:",
           f"{ind}    ln, pos = _length_at(data, pos)",
           f"{ind}else:",
           f"{ind}    pos += 1",
           f"{ind}end = pos + ln"]
    if cached:  # one str object per value (a table id): decoded once, its hash computed once
        out += [f"{ind}raw = data[pos:end]",
                f"{ind}{var} = strings.get(raw)",
                f"{ind}if {var} is None:",
                f"{ind}    {var} = raw.decode()",
                f"{ind}    if len(strings) < 20_000:",
                f"{ind}        strings[raw] = {var}"]
    else:
        out.append(f"{ind}{var} = data[pos:end]{'.decode()' if decode else ''}")
    return out + [f"{ind}pos = end"]


def _emit_field(var: str, avro_type: str, ind: str) -> list[str]:
    if avro_type == "string":
        return _emit_string(var, ind)
    if avro_type in ("int", "long"):
        return _emit_long(var, ind)
    if avro_type == "boolean":
        return [f"{ind}{var} = boolean[data[pos]]",
                f"{ind}pos += 1"]
    raise ValueError(avro_type)


def _block_decoder(codec, plan: dict):
    """`decode(data, count, n, slow) -> items` for the current TableEvent schema (`n` the number of
    the block's first record in the file, `slow(data, start, n)` the generic path's item of the
    record at `start` and the position after it), or None when its shape is not [primitive fields
    with table_id, seq, ts and type..., body union]."""
    top = codec.event_schema.source["fields"]
    at = next((i for i, f in enumerate(top) if f["name"] == "body"), None)
    if at is None or [(f["name"], f["type"]) for f in top[at + 1:]] != [(n, ["null", "string"]) for n in AFTER_BODY]:
        return None
    common = top[:at]
    if any(f["type"] not in PRIMITIVES for f in common) or \
            {f["name"]: f["type"] for f in common if f["name"] in ("table_id", "seq", "ts", "type")} != \
            {"table_id": "string", "seq": "long", "ts": "long", "type": "string"}:
        return None
    ns = {"strings": {}, "_Odd": _Odd, "_length_at": _length_at, "_ZIGZAG": _ZIGZAG, "_LENGTH": _LENGTH,
          "_BOOLEAN": _BOOLEAN, "valid_id": valid_id, "good_ids": set()}
    lines = ["def decode(data, count, n0, slow):",
             "    zigzag, length, boolean = _ZIGZAG, _LENGTH, _BOOLEAN",
             "    size = len(data)",
             "    pos = 0",
             "    items = []",
             "    app = items.append",
             "    for _ in range(count):",
             "        start = pos",
             "        try:"]
    ind = " " * 12
    for f in common:
        if f["name"] == "type":
            lines += _emit_string("type_", ind, decode=False)  # compared as bytes to the branch
        elif f["name"] in CACHED_STRINGS:
            lines += _emit_string(f"c_{f['name']}", ind, cached=True)
        else:
            lines += _emit_field(f"c_{f['name']}", f["type"], ind)
    lines += _emit_long("branch", ind)
    first = True
    for index, branch in enumerate(next(f for f in top if f["name"] == "body")["type"]):
        if not isinstance(branch, dict):
            continue
        kind = branch["name"].rpartition(".")[2]
        p = plan.get(kind)
        if p is None:
            continue  # a TableOpened or a kind without its event: the record path
        _, new, _, strings, own, types = p
        ns[f"new_{kind}"] = new
        ns[f"type_{kind}"] = kind.encode()
        lines.append(f"{ind}{'if' if first else 'elif'} branch == {index}:")
        first = False
        sub = ind + "    "
        for i, (name, t) in enumerate(zip(own, types)):
            lines += _emit_string(f"f{i}", sub, cached=True) if t == "string" and name in CACHED_STRINGS \
                else _emit_field(f"f{i}", t, sub)
        for name in AFTER_BODY:  # a union ["null", "string"]: its branch index, then the string
            lines += [f"{sub}u = data[pos]",
                      f"{sub}pos += 1",
                      f"{sub}if u == 2:"]
            lines += _emit_string(f"a_{name}", sub + "    ", cached=name in CACHED_STRINGS)
            lines += [f"{sub}elif u == 0:",
                      f"{sub}    a_{name} = None",
                      f"{sub}else:",
                      f"{sub}    raise _Odd"]
        # The contract's input limits (`craps_streams.rules.contract`): ids of the id format (a table id
        # checked once, then remembered), other strings at most MAX_TEXT, tag fields MAX_TAG_FIELD.
        checks = [f"type_ == type_{kind}", "(c_table_id in good_ids or valid_id(c_table_id))",
                  "c_seq >= 1", "c_ts >= 0"]
        checks += [f"valid_id(f{own.index(s)})" if s in ID_FIELDS else f"0 < len(f{own.index(s)}) <= {MAX_TEXT}"
                   for s in strings]
        checks += [f"(a_{name} is None or len(a_{name}) <= {MAX_TAG_FIELD})" for name in AFTER_BODY]
        args = ", ".join(["c_table_id", "c_seq", "c_ts"] + [f"f{i}" for i in range(len(own))]
                         + [f"a_{name}" for name in AFTER_BODY])
        lines += [f"{sub}if {' and '.join(checks)}:",
                  f"{sub}    if len(good_ids) < 20_000:",
                  f"{sub}        good_ids.add(c_table_id)",
                  f"{sub}    app(new_{kind}({args}))",
                  f"{sub}    continue"]
    if first:
        return None
    lines += ["        except (_Odd, IndexError, UnicodeDecodeError):",
              "            pass",
              "        item, pos = slow(data, start, n0 + len(items))",
              "        app(item)",
              "    if pos != size:",
              "        raise _Odd",
              "    return items"]
    exec("\n".join(lines), ns)  # noqa: S102 - generated from the schema above, no outside text
    decode = ns["decode"]
    decode.source = "\n".join(lines)
    return decode


def _native_reader(codec, plan: dict):
    """The native form of `_block_decoder` (native/src/avro.rs `BlockReader`: the same records
    read by the same rules, None for a block it leaves to this one), or None where the native code
    is not in use or the schema's shape is not [table_id, seq, ts, type, body, key_id, tag]."""
    from craps_streams.accelerator.rules import in_use

    if not in_use():
        return None
    top = codec.event_schema.source["fields"]
    if [(f["name"], f["type"]) for f in top[:4]] != \
            [("table_id", "string"), ("seq", "long"), ("ts", "long"), ("type", "string")] or \
            [f["name"] for f in top[4:]] != ["body", "key_id", "tag"] or AFTER_BODY != ("key_id", "tag"):
        return None
    codes = {"int": "long", "long": "long", "boolean": "boolean"}
    branches = []
    for branch in top[4]["type"]:
        p = plan.get(branch["name"].rpartition(".")[2]) if isinstance(branch, dict) else None
        if p is None:
            branches.append(None)
            continue
        kind, new, _, _, own, types = p
        branches.append((kind.encode(), new, [
            codes[t] if t != "string" else
            ("id" if name in ID_FIELDS else "text") + ("*" if name in CACHED_STRINGS else "")
            for name, t in zip(own, types)]))
    from craps_streams.accelerator.avro import block_reader

    return block_reader(tuple(branches), "key_id" in CACHED_STRINGS)


_PLAN = None
_DECODER = None
_NATIVE = None


def _setup(codec):
    global _PLAN, _DECODER, _NATIVE
    if _PLAN is None:
        _PLAN = _plan(codec)
        _DECODER = _block_decoder(codec, _PLAN) or False
        _NATIVE = (_DECODER and _native_reader(codec, _PLAN)) or False
    return _PLAN, _DECODER, _NATIVE


# ---------------------------------------------------------------- reading


def _datum_item(datum: dict, plan: dict, codec, n: int, where_of):
    """The item of a fastavro datum (the generic path), the container's `n`th record (from 0)."""
    body = datum["body"]
    if body is not None:
        p = plan.get(body[0])
        if p is not None and p[0] == datum["type"]:
            table_id, seq, ts = datum["table_id"], datum["seq"], datum["ts"]
            values = body[1]
            tags = tuple(datum.get(name) for name in AFTER_BODY)
            ok = valid_id(table_id) and seq >= 1 and ts >= 0 and \
                all(t is None or len(t) <= MAX_TAG_FIELD for t in tags)
            if ok:
                for name in p[3]:
                    if not (valid_id(values[name]) if name in ID_FIELDS else 0 < len(values[name]) <= MAX_TEXT):
                        ok = False
                        break
            if ok:
                return p[1](table_id, seq, ts, *p[2](values), *tags)
    return record_of(codec, datum, n + 1), None if where_of is None else where_of(n)


def _datum_items(datums, plan, codec, n: int, where_of) -> list:
    """Items of fastavro datums (the generic path): records numbered from `n`."""
    return [_datum_item(datum, plan, codec, k, where_of) for k, datum in enumerate(datums, n)]


def read_event_batches(path, where_of=None, *, generated: bool = True, native: bool = True,
                       batch: int = 1024) -> Iterator[list]:
    """The records of a TableEvent container in batches (same order and count as
    `read_container`; a container block's records in lists of at most `batch`, which keeps the
    core's working set in the caches): a list whose items are core events when the fast path
    applies, else `(record, where)` tuples, the flat record (dict) with `where_of(n)` (record
    number from 0 -> its source; None without `where_of`). `generated=False` uses fastavro's
    datums only; `native=False` the generated decoder without its native form."""
    codec = default_codec()
    plan, decoder, reader = _setup(codec)
    if not (native and generated):
        reader = None
    parsed = codec.event_schema.parsed
    with open(path, "rb") as fo:
        try:
            blocks = fastavro.block_reader(fo, return_record_name=True)
            current = fingerprint64(to_parsing_canonical_form(blocks.writer_schema)) == codec.event_schema.fingerprint
        except Exception as e:
            raise CodecError(f"not a readable Avro container: {type(e).__name__}: {e}") from e
        if not current:  # an older schema: resolved to the current one, records only
            fo.seek(0)
            n = 0
            records = read_container(fo)
            while True:
                chunk = list(islice(records, batch))
                if not chunk:
                    return
                yield [(r, None if where_of is None else where_of(n + i)) for i, r in enumerate(chunk)]
                n += len(chunk)

        n = 0

        def slow(data, start, k):
            """The record at `start` decoded by fastavro: (its item, position after it)."""
            if start >= len(data):
                raise _Odd  # a record before ran beyond the block: fastavro decodes the block
            buf = BytesIO(data)
            buf.seek(start)
            try:
                datum = schemaless_reader(buf, parsed, None, return_record_name=True)
            except Exception as e:
                raise CodecError(f"corrupt container after {k} records: {type(e).__name__}: {e}") from e
            return _datum_item(datum, plan, codec, k, where_of), buf.tell()

        it = iter(blocks)
        while True:
            try:
                block = next(it)
            except StopIteration:
                return
            except Exception as e:
                raise CodecError(f"corrupt container after {n} records: {type(e).__name__}: {e}") from e
            items = None
            if reader:
                try:
                    items = reader.decode(block.bytes_.getvalue(), block.num_records, n, slow)
                except _Odd:
                    items = None
            if items is None and decoder and generated:
                try:
                    items = decoder(block.bytes_.getvalue(), block.num_records, n, slow)
                except (_Odd, IndexError):
                    items = None  # the block's size and its records disagree: fastavro says how
            if items is None:
                try:
                    datums = list(block)
                except Exception as e:
                    raise CodecError(f"corrupt container after {n} records: {type(e).__name__}: {e}") from e
                items = _datum_items(datums, plan, codec, n, where_of)
            n += len(items)
            if len(items) <= batch:
                yield items
            else:
                for i in range(0, len(items), batch):
                    yield items[i:i + batch]


def read_events(path, where_of=None) -> Iterator[object]:
    """Each record of a TableEvent container as its core event when the fast path applies, else as
    the flat record (dict). Same order and count as `read_container`.

    With `where_of` (record number from 0 -> its source), yields `(item, where)` pairs instead, the
    where None for core events (only what may be rejected needs a source)."""
    pairs = where_of is not None
    for items in read_event_batches(path, where_of):
        for item in items:
            if type(item) is tuple:
                yield item if pairs else item[0]
            else:
                yield (item, None) if pairs else item
