"""The archive's hash chain: each file's digest chained into the index, so a changed, removed,
reordered or inserted file or record is detected and named.

Per archived file the index entry carries:

    sha256          SHA-256 of the file's bytes
    digests         the sidecar `<file>.digests`: one line per record, the first 16 hex digits of
                    SHA-256 of the record's deterministic JSON line (events) or of the raw line
                    (undecodable messages), in file order; it locates a change to a record position
    digests_sha256  SHA-256 of the sidecar's bytes
    prev            the chain hash of the entry before (GENESIS for the first chained entry)
    chain           SHA-256 of prev + the entry's own canonical JSON (every field but `chain`)

and the index's `chain_head` is the last entry's chain hash. Any change to a file changes its
SHA-256; to an entry (its offsets, counts, digest) changes its chain hash; removing, reordering or
inserting entries breaks the `prev` links; a file on disk that no entry names is an insertion.
Entries without `chain` were archived before the chain existed: verify reports them as unchained
(nothing can be proven about them) and the chain starts after them.

What the chain cannot stop alone: someone able to rewrite every file, every sidecar and the whole
index consistently. Against that the head is sealed: `chain_seal` = HMAC-SHA256 of the head with
the archiver's key (`.secrets/archive-key`, made by `craps-streams keys init`), which a rewrite
cannot recompute without the key; verify checks it when the key is at hand (`seal_mismatch`,
`seal_missing`). And a table event changed inside such a rewrite still fails its tag on replay.
"""
from __future__ import annotations

import difflib
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from pathlib import Path

from craps_streams.codec import read_container, to_json_line

GENESIS = "0" * 64
SIDECAR_SUFFIX = ".digests"
CHAIN_FIELDS = ("sha256", "digests_sha256", "prev", "chain")


def record_digest(record: dict) -> str:
    """The digest of one archived event record (as the container gives it back)."""
    return hashlib.sha256(to_json_line(record).encode()).hexdigest()[:16]


def line_digest(line: bytes) -> str:
    return hashlib.sha256(line.rstrip(b"\n")).hexdigest()[:16]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fo:
        for chunk in iter(lambda: fo.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sidecar_of(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def sidecar_text(digests: list) -> bytes:
    return ("".join(d + "\n" for d in digests)).encode("ascii")


def entry_chain(prev: str, entry: dict) -> str:
    body = {k: v for k, v in entry.items() if k != "chain"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256((prev + text).encode("ascii")).hexdigest()


def seal(head: str, key: bytes) -> str:
    """The archiver's seal of a chain head: HMAC-SHA256, hex."""
    return hmac.new(key, b"craps-archive-chain-v1\n" + head.encode("ascii"), hashlib.sha256).hexdigest()


def link(entries: list, prev: str) -> str:
    """Chain `entries` (in index order, digests already set) after `prev`; the new head."""
    for e in entries:
        e["prev"] = prev
        e["chain"] = prev = entry_chain(prev, e)
    return prev


# ---------------------------------------------------------------- verifying


@dataclass(slots=True)
class ChainFinding:
    kind: str  # changed_file | removed_file | inserted_file | changed_record | removed_record |
    #            inserted_record | reordered_records | changed_entry | broken_link | head_mismatch
    file: str
    message: str
    position: int | None = None  # record position in the file (from 0), when known
    offset: int | None = None  # its topic offset, when known


@dataclass(slots=True)
class ChainReport:
    chained: int = 0
    unchained: list = field(default_factory=list)  # paths of entries archived before the chain
    findings: list = field(default_factory=list)
    head: str | None = None
    sealed: str = "no key"  # "checked" | "no key" (the seal was not checked) | "unsealed" | "mismatch"

    @property
    def ok(self) -> bool:
        return not self.findings

    def lines(self, limit: int = 50) -> list[str]:
        out = [f"TAMPERED {f.kind}: {f.file}: {f.message}" for f in self.findings[:limit]]
        if len(self.findings) > limit:
            out.append(f"... and {len(self.findings) - limit} more chain findings")
        if self.unchained:
            out.append(f"unchained: {len(self.unchained)} files archived before the hash chain "
                       f"(first {self.unchained[0]}): their integrity cannot be proven")
        out.append(self.summary())
        return out

    def summary(self) -> str:
        state = "INTACT" if self.ok else "TAMPERED"
        if not self.chained and self.unchained and self.ok:
            state = "UNCHAINED"
        return (f"chain {state}: {self.chained} files chained, {len(self.unchained)} unchained, "
                f"{len(self.findings)} findings; seal {self.sealed}; head {self.head or '-'}")


def _offset_at(entry: dict, n: int) -> int | None:
    for first, last in entry.get("offsets", ()):
        if n <= last - first:
            return first + n
        n -= last - first + 1
    return None


def _file_digests(path: Path, kind: str) -> list | None:
    """The record digests of a file as it is now; None when it cannot be read at all."""
    try:
        if kind == "events":
            return [record_digest(r) for r in read_container(path)]
        with open(path, "rb") as fo:
            return [line_digest(line) for line in fo]
    except Exception:  # noqa: BLE001 - a corrupted file: reported as changed, records unknown
        return None


def _locate(report: ChainReport, entry: dict, path: Path, rel: str) -> None:
    """Name the records of a changed file: its digests now against its sidecar's."""
    sidecar = sidecar_of(path)
    try:
        side = sidecar.read_bytes()
    except OSError:
        report.findings.append(ChainFinding("changed_file", rel, "its digests sidecar is missing: records unknown"))
        return
    if hashlib.sha256(side).hexdigest() != entry.get("digests_sha256"):
        report.findings.append(ChainFinding("changed_file", rel, "its digests sidecar was changed too: "
                                            "records unknown"))
        return
    want = side.decode("ascii").split()
    have = _file_digests(path, entry.get("kind", "events"))
    if have is None:
        report.findings.append(ChainFinding("changed_record", rel, "the file no longer decodes (corrupted "
                                            "bytes); its records cannot be read"))
        return
    if sorted(have) == sorted(want) and have != want:
        moved = [i for i, (a, b) in enumerate(zip(have, want)) if a != b]
        report.findings.append(ChainFinding(
            "reordered_records", rel, f"records reordered from position {moved[0]} (positions {moved[:10]}"
            f"{' ...' if len(moved) > 10 else ''}, offsets {[_offset_at(entry, i) for i in moved[:10]]})",
            moved[0], _offset_at(entry, moved[0])))
        return
    found = False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, want, have, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        found = True
        if tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i1, i2):
                report.findings.append(ChainFinding("changed_record", rel, f"record {k} (offset "
                                                    f"{_offset_at(entry, k)}) changed", k, _offset_at(entry, k)))
            continue
        if i2 > i1:
            report.findings.append(ChainFinding(
                "removed_record", rel, f"record{'s' if i2 - i1 > 1 else ''} {i1}..{i2 - 1} (offsets "
                f"{_offset_at(entry, i1)}..{_offset_at(entry, i2 - 1)}) removed or changed", i1, _offset_at(entry, i1)))
        if j2 > j1:
            report.findings.append(ChainFinding(
                "inserted_record", rel, f"{j2 - j1} record{'s' if j2 - j1 > 1 else ''} inserted at position {j1}",
                j1, None))
    if not found:
        report.findings.append(ChainFinding("changed_file", rel, "the bytes changed but every record is as "
                                            "archived (container framing or metadata altered)"))


def verify_chain(out_dir, index: dict, key: bytes | None = None) -> ChainReport:
    """Check every chained entry of `index` against the files of `out_dir` (see the module doc),
    and the head's seal with the archiver's `key` when given."""
    d = Path(out_dir)
    report = ChainReport(head=index.get("chain_head"))
    if key is not None and index.get("chain_head"):
        given = index.get("chain_seal")
        if given is None:
            report.sealed = "unsealed"
            report.findings.append(ChainFinding("seal_missing", "index.json", "the chain head carries no seal: "
                                                "the index was rewritten without the archiver's key"))
        elif not hmac.compare_digest(seal(index["chain_head"], key), str(given)):
            report.sealed = "mismatch"
            report.findings.append(ChainFinding("seal_mismatch", "index.json", "the chain head's seal does not "
                                                "verify: the index (and files) were rewritten"))
        else:
            report.sealed = "checked"
    entries = index.get("files", [])
    chains = {e.get("chain"): i for i, e in enumerate(entries) if e.get("chain")}
    prev = None
    for i, e in enumerate(entries):
        rel = e.get("path", f"<entry {i}>")
        if not e.get("chain"):
            report.unchained.append(rel)
            if report.chained:
                report.findings.append(ChainFinding("broken_link", rel, "an unchained entry after chained ones: "
                                                    "inserted into the index"))
            continue
        report.chained += 1
        expected_prev = GENESIS if prev is None else prev
        if e.get("prev") != expected_prev:
            j = chains.get(e.get("prev"))
            if j is not None and j > i:
                why = f"it follows {entries[j]['path']} in the chain: entries reordered"
            elif j is not None:
                between = [x.get("path") for x in entries[j + 1:i]]
                why = f"it follows {entries[j]['path']} in the chain: {', '.join(between)} inserted"
            elif e.get("prev") == GENESIS:
                why = "it starts the chain: entries before it were inserted"
            else:
                why = "the entry it follows is gone: an index entry before it was removed"
            report.findings.append(ChainFinding("broken_link", rel, why))
        if entry_chain(e.get("prev", ""), e) != e.get("chain"):
            report.findings.append(ChainFinding("changed_entry", rel, "its index entry (offsets, count, tables "
                                                "or digests) was altered"))
        prev = e.get("chain")
        path = d / rel
        if not path.exists():
            report.findings.append(ChainFinding("removed_file", rel, f"archived file removed ({e.get('count')} "
                                                f"records, offsets {e.get('first_offset')}..{e.get('last_offset')})"))
            continue
        if file_sha256(path) != e.get("sha256"):
            _locate(report, e, path, rel)
    if prev is not None and index.get("chain_head") != prev:
        report.findings.append(ChainFinding("head_mismatch", "index.json", f"chain_head {index.get('chain_head')} "
                                            f"is not the last entry's chain hash {prev}: entries removed at the end "
                                            f"or the head rewritten"))
    known = {e.get("path") for e in entries}
    for path in sorted(d.rglob("*")):
        if not path.is_file() or path.name == "index.json" or path.name.endswith(".tmp"):
            continue
        rel = path.relative_to(d).as_posix()
        base = rel[:-len(SIDECAR_SUFFIX)] if rel.endswith(SIDECAR_SUFFIX) else rel
        if base not in known and path.suffix in (".avro", ".jsonl"):
            report.findings.append(ChainFinding("inserted_file", rel, "a file the index does not name"))
    return report
