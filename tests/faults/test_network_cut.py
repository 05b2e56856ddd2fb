"""The network cut the partition drill uses (tests/faults/network_cut.py), on a process of its own:
a listener started in a cgroup answers, stops answering while the cut is in place (both a new
connection to it and its replies), answers again once healed; a listener outside the cgroup answers
throughout. It needs root and the cgroup v2 hierarchy, as the drill does (CI runs as root)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.faults import network_cut

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="cutting a process off needs root (the drill too)")

_SERVE = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.sendall(b"hand")
    c.close()
"""


def _listener(preexec=None) -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen([sys.executable, "-c", _SERVE], stdout=subprocess.PIPE, text=True, preexec_fn=preexec)
    return p, int(p.stdout.readline())


def _answer(port: int) -> bytes | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.5) as s:
            s.settimeout(1.5)
            return s.recv(4)
    except OSError:
        return None


def test_a_cut_silences_only_its_cgroup_and_heals(tmp_path):
    assert network_cut.available() is None, network_cut.available()
    cgroup = network_cut.make_cgroup(f"craps-cut-test-{os.getpid()}")
    inside, in_port = _listener(network_cut.enter(cgroup))
    outside, out_port = _listener()
    try:
        assert _answer(in_port) == b"hand" and _answer(out_port) == b"hand"
        cut = network_cut.Cut(cgroup)
        with cut:
            assert cut.in_place
            assert _answer(in_port) is None  # the cut node takes no connection
            assert _answer(out_port) == b"hand"  # everything else on loopback still talks
        assert not cut.in_place
        deadline = time.monotonic() + 10
        while (got := _answer(in_port)) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert got == b"hand"
        cut.heal()  # a second heal is harmless (the drill heals in a finally)
    finally:
        for p in (inside, outside):
            p.kill()
            p.wait()
        network_cut.remove_cgroup(cgroup)
