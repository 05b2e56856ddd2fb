"""Table events in Avro Object Container Files, for replay archives.

A container file holds the writer schema in its header, so any Avro tool reads it
(``fastavro``, apache ``avro`` ``DataFileReader``, ``avro-tools tojson``). Records are the flat
dicts of ``encode_event``; on disk they are ``casino.craps.v1.TableEvent`` datums.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import fastavro
from fastavro.schema import to_parsing_canonical_form

from craps_streams.codec.errors import CodecError
from craps_streams.codec.inflate import install as _inflate_with_isal
from craps_streams.codec.schemas import fingerprint64
from craps_streams.codec.wire import AvroCodec, default_codec

_inflate_with_isal()  # every container this process reads (craps_streams/codec/inflate.py)

SCHEMA_VERSION_KEY = "casino.craps.schema_version"


def default_container_codec() -> str:
    """"zstandard" when the zstandard module is installed, else "deflate" (always available)."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return "deflate"
    return "zstandard"


def write_container(path, records: Iterable[dict], codec: str | None = None, *,
                    sync_interval: int = 64_000, metadata: dict[str, str] | None = None,
                    avro_codec: AvroCodec | None = None) -> int:
    """Write table-event records to an Avro container file; the number written.

    `path` is a path (written to a temporary name next to it, then renamed, so a crash never leaves
    half a file under the final name) or a writable binary file object. `codec` defaults to
    ``default_container_codec()``.
    """
    c = avro_codec or default_codec()
    codec = codec or default_container_codec()
    count = 0

    def datums():
        nonlocal count
        for record in records:
            yield c.event_datum(record)
            count += 1

    meta = {SCHEMA_VERSION_KEY: str(c.event_schema.source.get("schema_version", 1)), **(metadata or {})}

    def write(fo):
        try:
            fastavro.writer(fo, c.event_schema.parsed, datums(), codec=codec, sync_interval=sync_interval,
                            metadata=meta)
        except CodecError:
            raise
        except Exception as e:
            raise CodecError(f"cannot write container: {type(e).__name__}: {e}") from e

    if hasattr(path, "write"):
        write(path)
        return count
    final = Path(path)
    tmp = final.with_name(final.name + ".tmp")
    try:
        with open(tmp, "wb") as fo:
            write(fo)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    return count


def read_container(path, *, avro_codec: AvroCodec | None = None) -> Iterator[dict]:
    """Stream the table-event records of an Avro container file (a path or a readable, seekable
    binary file object). Files written with an older TableEvent schema are resolved to the current
    one. Any problem is a CodecError."""
    c = avro_codec or default_codec()
    if hasattr(path, "read"):
        yield from _read(path, c)
    else:
        with open(path, "rb") as fo:
            yield from _read(fo, c)


def _read(fo, c: AvroCodec) -> Iterator[dict]:
    start = fo.tell()
    try:
        reader = fastavro.reader(fo, return_record_name=True)
        writer = reader.writer_schema
        if fingerprint64(to_parsing_canonical_form(writer)) != c.event_schema.fingerprint:
            if not isinstance(writer, dict) or writer.get("name", "").rpartition(".")[2] != "TableEvent":
                raise CodecError(f"not a table-event container: writer schema {writer.get('name')!r}"
                                 if isinstance(writer, dict) else "not a table-event container")
            fo.seek(start)
            reader = fastavro.reader(fo, reader_schema=c.event_schema.parsed, return_record_name=True)
    except CodecError:
        raise
    except Exception as e:
        raise CodecError(f"not a readable Avro container: {type(e).__name__}: {e}") from e
    for n, datum in enumerate(datums(reader), 1):
        yield record_of(c, datum, n)


def datums(reader) -> Iterator[dict]:
    """The datums of an open fastavro reader; a corrupt block is a CodecError saying how many
    records came before it."""
    n = 0
    it = iter(reader)
    while True:
        try:
            datum = next(it)
        except StopIteration:
            return
        except Exception as e:
            raise CodecError(f"corrupt container after {n} records: {type(e).__name__}: {e}") from e
        n += 1
        yield datum


def record_of(c: AvroCodec, datum: dict, n: int) -> dict:
    """The flat record of the container's `n`th datum (from 1); any problem is a CodecError."""
    try:
        return c.event_record(datum)
    except CodecError:
        raise
    except Exception as e:
        raise CodecError(f"malformed record {n}: {type(e).__name__}: {e}") from e
