"""The Avro paths of the accelerator (native/src/avro.rs, avro_out.rs, avro_in.rs): the event block
reader, the output writer and the output reader, each made from the codec's facts
(craps_streams/codec/fastread.py, fastwrite.py, fastoutput.py)."""
from __future__ import annotations

from collections.abc import Callable

from craps_streams.accelerator.rules import in_use


def block_reader(branches: tuple, cache_key_id: bool):
    """A `BlockReader` of the event union's `branches` ((kind, class, field codes) or None each,
    as fastread's `_native_reader` lays them out), or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.BlockReader(branches, cache_key_id)


def output_writer(formats: list) -> Callable[[list], list] | None:
    """`messages(outputs) -> [(topic, key, value) or None]` of an `OutputWriter` of the output
    classes' `formats` (fastwrite's `_formats`), or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.OutputWriter(formats).messages


def output_reader(formats: list) -> Callable[[bytes], dict | None] | None:
    """`decode(message) -> record or None` of an `OutputReader` of the output schemas' `formats`
    (fastoutput's `_formats`), or None where the accelerator is not in use."""
    if not in_use():
        return None
    from craps_streams.accelerator import _native

    return _native.OutputReader(formats).decode
