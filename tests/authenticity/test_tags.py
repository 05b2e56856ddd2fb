"""Attacks on the tags, judged by `TagCheck` alone (pure): each forgery is a (reason, message),
each honest event None. The worker, replay and the broker tests take the same attacks further."""
from __future__ import annotations

import msgspec
import dataclasses

import pytest
from tests.authenticity.authenticity_events import ANY_TAGGED_EVENT
from tests.authenticity.authenticity_keys import key, ring_for
from hypothesis import example, given, settings
from hypothesis import strategies as st

from craps_streams.authenticity import BAD_SIGNATURE, UNKNOWN_KEY, KeyRing, TableSigner, TagCheck, signed, tag_of
from craps_streams.authenticity.canonical import canonical_bytes
from craps_streams.codec import CodecError, decode_event, encode_event, from_json_line, to_json_line
from craps_streams.rules import ContractError, event_to_record, record_to_event
from craps_streams.rules.events import DiceThrown, WagerPlaced

T0 = 1_767_225_600_000
RING = ring_for(["A", "B"])
A, B = RING.get("k-A"), RING.get("k-B")


def throw(table="A", seq=5, ts=T0, d1=6, d2=6):
    return DiceThrown(table, seq, ts, d1, d2)


def test_an_honest_event_passes():
    assert TagCheck(RING).problem(signed(A, throw())) is None


def test_a_forged_throw_without_a_key_fails():
    forged = msgspec.structs.replace(throw(), key_id="k-A", tag="A" * 43)
    assert TagCheck(RING).problem(forged)[0] == BAD_SIGNATURE


def test_a_missing_tag_fails_unless_untagged_history_is_accepted():
    check = TagCheck(RING)
    reason, message = check.problem(throw())
    assert reason == BAD_SIGNATURE and "no authentication tag" in message
    lenient = TagCheck(RING, accept_untagged=True)
    assert lenient.problem(throw()) is None and lenient.untagged == 1
    # a half tag is never accepted, not even for old history
    assert lenient.problem(msgspec.structs.replace(throw(), key_id="k-A"))[0] == BAD_SIGNATURE
    assert lenient.problem(msgspec.structs.replace(throw(), tag=signed(A, throw()).tag))[0] == BAD_SIGNATURE


def test_a_tag_replayed_from_another_event_fails():
    honest = signed(A, throw(seq=5, d1=1, d2=2))
    for other in (throw(seq=6, d1=1, d2=2), throw(seq=5, d1=6, d2=6), throw(seq=5, ts=T0 + 1, d1=1, d2=2)):
        copied = msgspec.structs.replace(other, key_id=honest.key_id, tag=honest.tag)
        reason, message = TagCheck(RING).problem(copied)
        assert reason == BAD_SIGNATURE and "does not match" in message


def test_a_tag_with_a_retired_key_fails_after_its_retirement_only():
    ring = RING.retired("k-A", T0 + 1000)
    check = TagCheck(ring)
    before, after = signed(A, throw(ts=T0 + 999)), signed(A, throw(ts=T0 + 1000))
    assert check.problem(before) is None  # history signed before the retirement still verifies
    reason, message = check.problem(after)
    assert reason == BAD_SIGNATURE and "retired" in message


def test_an_event_for_table_b_tagged_with_table_a_key_fails():
    reason, message = TagCheck(RING).problem(signed(A, throw(table="B")))
    assert reason == BAD_SIGNATURE and "not bound to table B" in message
    assert TagCheck(RING).problem(signed(B, throw(table="B"))) is None


def test_an_unknown_key_fails():
    stranger = key("k-stranger", {"A"})
    assert TagCheck(RING).problem(signed(stranger, throw()))[0] == UNKNOWN_KEY


def test_a_key_not_yet_valid_fails():
    future = key("k-future", {"A"}, not_before=T0 + 10)
    reason, message = TagCheck(KeyRing((future,))).problem(signed(future, throw(ts=T0)))
    assert reason == BAD_SIGNATURE and "valid only from" in message


def test_another_spelling_of_the_same_tag_fails():
    """base64 leaves two low bits unused in the last character: a different character with the
    same 32 bytes must not pass (one event, one tag)."""
    honest = signed(A, throw())
    last = honest.tag[-1]
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    sibling = alphabet[alphabet.index(last) ^ 1]
    for tag in (honest.tag[:-1] + sibling, honest.tag + "=", honest.tag + "\u00e9", honest.tag.lower()):
        assert TagCheck(RING).problem(msgspec.structs.replace(honest, tag=tag))[0] == BAD_SIGNATURE


def test_rotation_keeps_the_floor_running():
    """A new key from `at`; the old one still verifies events up to at + grace, not after."""
    at, grace = T0 + 60_000, 5_000
    new = key("k-A2", {"A"}, not_before=at)
    ring = RING.rotated({"A"}, at, new, grace_ms=grace)
    signer, check = TableSigner(ring), TagCheck(ring)
    assert signer.sign(throw(ts=at - 1)).key_id == "k-A"
    assert signer.sign(throw(ts=at)).key_id == "k-A2"
    assert check.problem(signed(A, throw(ts=at + grace - 1))) is None  # a late switch: still fine
    assert check.problem(signed(A, throw(ts=at + grace)))[0] == BAD_SIGNATURE
    assert check.problem(signed(new, throw(ts=at - 1)))[0] == BAD_SIGNATURE  # new key, not before at
    assert check.problem(signed(new, throw(ts=at + 10**9))) is None
    assert check.problem(signed(B, throw(table="B", ts=at + 10**9))) is None  # B untouched


def test_signer_refuses_a_table_without_a_key():
    with pytest.raises(LookupError):
        TableSigner(RING).sign(throw(table="C"))


# ---------------------------------------------------------------- any single-byte change


def _mutations(data: bytes, skip: range):
    return st.tuples(st.integers(0, len(data) - 1).filter(lambda i: i not in skip), st.integers(1, 255))


@settings(max_examples=120, deadline=None)
@given(ANY_TAGGED_EVENT, st.data())
@example(DiceThrown("A", 5, T0, 3, 4), None)
def test_any_single_byte_change_is_rejected(event, data):
    """Any single-byte change of a tagged event's JSON line (outside the tag itself) or of its Avro
    message is refused by the decoder or the contract, or rejected by the tag check: it never
    passes as an authentic event different from the one signed."""
    k = key(f"k-{event.table_id}", {event.table_id})
    honest = signed(k, event)
    check = TagCheck(KeyRing((k,)))
    assert check.problem(honest) is None
    original = canonical_bytes(honest)
    line = to_json_line(event_to_record(honest)).encode()
    at = line.index(b'"tag":"') + 7
    avro = encode_event(event_to_record(honest))
    if data is None:  # the pinned example: the first die
        cases = [(line, line.index(b'"die1":') + 7, ord("5"))]
    else:
        i, b = data.draw(_mutations(line, range(at, at + 43)))
        j, c = data.draw(_mutations(avro, range(0)))
        cases = [(line, i, b), (avro, j, c)]
    for message, i, b in cases:
        changed = bytearray(message)
        if changed[i] == b:
            continue
        changed[i] = b
        try:
            record = from_json_line(bytes(changed)) if message is line else decode_event(bytes(changed))
            forged = record_to_event(record)
        except (CodecError, ContractError):
            continue  # refused before the tag check: a rejection with the raw bytes
        problem = check.problem(forged)
        if problem is None:
            assert canonical_bytes(forged) == original and forged.tag == honest.tag
        else:
            assert problem[0] in (BAD_SIGNATURE, UNKNOWN_KEY)


def test_tag_of_is_the_hmac_of_the_canonical_bytes():
    import base64
    import hashlib
    import hmac

    e = signed(A, WagerPlaced("A", 3, T0, "A-w1", 2, "fire", 500))
    mac = hmac.new(A.secret, canonical_bytes(e), hashlib.sha256).digest()
    assert e.tag == base64.urlsafe_b64encode(mac).decode().rstrip("=") == tag_of(A, e)
    assert len(e.tag) == 43


# ---------------------------------------------------------------- the fast check against the plain one


def test_tag_text_from_kept_pads_is_the_hmac_digest():
    """`hmac_pads` + `tag_text` (the check's hot path) make the text `tag_of` writes, for keys
    shorter than, equal to and longer than SHA-256's block, and messages of any length."""
    import base64
    import hashlib
    import hmac

    from craps_streams.authenticity.tags import hmac_pads, tag_text

    for n in (0, 1, 31, 32, 63, 64, 65, 200):
        secret = hashlib.sha512(bytes([n])).digest() * 4
        secret = secret[:n]
        for message in (b"", b"x", bytes(range(256)) * 5):
            expected = base64.urlsafe_b64encode(hmac.digest(secret, message, "sha256")).rstrip(b"=")
            assert tag_text(hmac_pads(secret), message) == expected


def _variants(event):
    """An honest event and what an attacker or an old history makes of it."""
    ka, kb = key(f"k-{event.table_id}", {event.table_id}), key("k-other", {"other-table"})
    honest = signed(ka, event)
    flip = "B" if honest.tag[0] != "B" else "C"
    yield honest
    yield msgspec.structs.replace(honest, tag=flip + honest.tag[1:])  # altered tag
    yield msgspec.structs.replace(honest, tag=honest.tag + "=")  # another spelling
    yield msgspec.structs.replace(honest, tag=honest.tag[:-1] + "\u00e9")  # not ASCII
    yield msgspec.structs.replace(honest, seq=honest.seq + 1)  # the event altered
    yield signed(kb, event)  # a key of another table
    yield signed(key("k-stranger", {event.table_id}), event)  # a key not in the ring
    yield msgspec.structs.replace(honest, key_id=None, tag=None)  # untagged
    yield msgspec.structs.replace(honest, tag=None)  # half tagged
    yield msgspec.structs.replace(honest, key_id=None)


@settings(max_examples=150, deadline=None)
@given(ANY_TAGGED_EVENT, st.integers(0, 2**62))
@example(DiceThrown("A", 5, T0, 3, 4), T0)
def test_the_fast_check_answers_as_the_plain_one(event, boundary):
    """`TagCheck.problem` (kept pads, inline table and validity) against `problem_plain` (the
    definition step by step) on honest and forged events, under keys retired or not yet valid at
    an arbitrary boundary: the same answer, reason and message, and the same untagged count."""
    ka, kb = key(f"k-{event.table_id}", {event.table_id}), key("k-other", {"other-table"})
    rings = [KeyRing((ka, kb)), KeyRing((ka, kb)).retired(ka.key_id, boundary),
             KeyRing((key(ka.key_id, ka.tables, not_before=boundary), kb))]
    for ring in rings:
        for accept in (False, True):
            fast, plain = TagCheck(ring, accept), TagCheck(ring, accept)
            for e in _variants(event):
                assert fast.problem(e) == plain.problem_plain(e)
            assert fast.untagged == plain.untagged


def test_a_check_travels_to_a_parallel_replays_jobs():
    """A parallel replay pickles the check for its jobs: the kept pads (hash states, which do not
    pickle) are made again there, and the copy judges as the original."""
    import pickle

    check = TagCheck(RING, accept_untagged=True)
    check.problem(throw())
    copy = pickle.loads(pickle.dumps(check))
    assert copy.untagged == 1 and copy.accept_untagged
    honest = signed(A, throw())
    assert copy.problem(honest) is None
    assert copy.problem(msgspec.structs.replace(honest, seq=6))[0] == BAD_SIGNATURE
