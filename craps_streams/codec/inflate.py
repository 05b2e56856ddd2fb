"""The deflate codec's container blocks inflated by ISA-L (the `isal` package) where it is installed.

An archive is Avro container files with the deflate codec, and inflating their blocks with zlib was
a sixth of an archive replay's CPU (and a third of `archive verify`'s). ISA-L's igzip inflates the
same raw DEFLATE streams 2.3 times as fast (0.44 s against 1.02 s for the blocks of a gaming day of
300 tables, on this machine). DEFLATE (RFC 1951) defines what a stream inflates to, so the bytes
are zlib's: tests/codec/test_inflate.py compares the two block by block, and a corrupt block fails
the read as it did.

fastavro takes each codec's block reader from its registry, `fastavro.read.BLOCK_READERS` (where it
looks a container's codec up, and where custom codecs are added); `install()` puts this one under
"deflate", once, for every container read in the process. Without isal, fastavro's own stays.
"""
from __future__ import annotations

from io import BytesIO

try:
    from isal.isal_zlib import decompress as _inflate
except ImportError:  # not installed (or no wheel for this platform): fastavro's zlib reader stays
    _inflate = None

RAW_DEFLATE = -15  # wbits: a raw stream, no zlib header (the Avro spec's deflate codec)


def _long(fo) -> int:
    """An Avro long (zig-zag varint) from a binary file."""
    shift = n = 0
    while True:
        b = fo.read(1)
        if not b:
            raise EOFError("the container ends inside a block's length")
        n |= (b[0] & 0x7F) << shift
        if b[0] < 0x80:
            return (n >> 1) ^ -(n & 1)
        shift += 7


def read_deflate_block(fo) -> BytesIO:
    """A deflate block's data inflated, as fastavro's own deflate reader returns it. `fo` is the
    container file itself (fastavro's compiled reader), or its decoder in fastavro's pure-Python
    reader."""
    if hasattr(fo, "read_bytes"):
        data = fo.read_bytes()
    else:
        size = _long(fo)
        data = fo.read(size)
        if len(data) != size:
            raise EOFError(f"the container ends inside a block: {len(data)} of {size} bytes")
    return BytesIO(_inflate(data, RAW_DEFLATE))


def install() -> bool:
    """Read deflate blocks with ISA-L from now on; whether it is installed."""
    if _inflate is None:
        return False
    import fastavro.read

    fastavro.read.BLOCK_READERS["deflate"] = read_deflate_block
    return True
