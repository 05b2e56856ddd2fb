"""The optional native accelerator (docs/native-core.md): the Rust extension `_native` (native/,
built by setup.py where cargo is present) behind one typed face, a module per path it serves:

- `rules`: the native rules core, and the choice of the core that settles (`rules_core`, `choose`);
- `avro`: the Avro block reader and the output writer (craps_streams/codec);
- `tags`: the tag check's keys (craps_streams/authenticity);
- `watch`: a table's surveillance and the Chernoff bound (craps_streams/surveillance);
- `quiet`: runs of quiet events settled in one call (craps_streams/settle/quiet.py);
- `lane`: the JSON Lines lane and its line writer (replay);
- `report`: a report's books (craps_streams/report/build.py).

Only these modules reach `_native` (its types: `_native.pyi`; tests/architecture checks it). Each
path's function answers None where the accelerator is not in use (`rules.in_use`: not built,
refused, or the Python core chosen), and its caller then takes the Python path. The facts each
path works by (formats, fields, thresholds, wordings) are its caller's, handed in: the Rust code
holds none of them.
"""
