"""A node of the test cluster cut off by the network, and healed, while every node stays on
127.0.0.1: each node runs in a cgroup (v2, the unified hierarchy) of its own, and the cut attaches
two BPF programs of type cgroup_skb to the node's cgroup that drop every packet its sockets send
(egress) and every packet that arrives for them (ingress). The kernel runs such a program only for
sockets created inside that cgroup, so the shared broker, the soak's cluster, the clients and the
two other nodes keep talking over loopback as before; the cut node's connections stall both ways
and its listeners take no new connection, as behind a dead switch port. Healing detaches the
programs: the stalled connections resume (TCP retransmits) or time out and are made again.

Why this and not `tc` on loopback: a port filter sees the node's listening ports but not its own
outbound connections (ephemeral source ports), so it cuts one direction only; a filter on the
net_cls class id (cls_cgroup) would match the process, but this kernel has neither cls_cgroup nor
the drop action (act_gact), and no iptables. cgroup_skb programs need only CONFIG_CGROUP_BPF and the
bpf() system call, which Python reaches through ctypes: the program is two instructions
(`r0 = 0; exit`: drop), so no compiler and no BPF library is needed.

A socket belongs to the cgroup of the process that created it (moving a running process later does
not move its sockets), so a node is put in its cgroup before it starts: `enter(cgroup)` is the
`preexec_fn` of the `kafka.sh start` that launches it (the JVM inherits the cgroup)."""
from __future__ import annotations

import ctypes
import os
import pathlib
import struct
import time

UNIFIED = pathlib.Path("/sys/fs/cgroup/unified")  # the cgroup v2 hierarchy beside the v1 controllers

_SYS_BPF = 321  # x86_64
_BPF_PROG_LOAD, _BPF_PROG_ATTACH, _BPF_PROG_DETACH = 5, 8, 9
_BPF_PROG_TYPE_CGROUP_SKB = 8
INGRESS, EGRESS = 0, 1  # BPF_CGROUP_INET_INGRESS, BPF_CGROUP_INET_EGRESS
# r0 = 0 (BPF_ALU64 | BPF_MOV | BPF_K), exit (BPF_JMP | BPF_EXIT): a cgroup_skb verdict of 0 drops.
_DROP = struct.pack("<BBhi", 0xB7, 0, 0, 0) + struct.pack("<BBhi", 0x95, 0, 0, 0)
_ATTR_SIZE = 128

_libc = ctypes.CDLL(None, use_errno=True)


def _bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, _ATTR_SIZE)
    r = _libc.syscall(_SYS_BPF, cmd, buf, _ATTR_SIZE)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf({cmd}): {os.strerror(e)}")
    return r


def _load_drop(attach_type: int) -> int:
    insns = ctypes.create_string_buffer(_DROP, len(_DROP))
    licence = ctypes.create_string_buffer(b"GPL")
    # union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license, log_level, log_size,
    # log_buf, kern_version, prog_flags, prog_name[16], prog_ifindex, expected_attach_type
    attr = struct.pack("<IIQQIIQII16sII", _BPF_PROG_TYPE_CGROUP_SKB, len(_DROP) // 8, ctypes.addressof(insns),
                       ctypes.addressof(licence), 0, 0, 0, 0, 0, b"craps_cut", 0, attach_type)
    return _bpf(_BPF_PROG_LOAD, attr)


def available() -> str | None:
    """None when a node can be cut off here, else why not."""
    if os.geteuid() != 0:
        return "not root"
    if not (UNIFIED / "cgroup.procs").exists():
        return f"no cgroup v2 hierarchy at {UNIFIED}"
    try:
        os.close(_load_drop(EGRESS))
    except OSError as e:
        return f"cannot load a cgroup_skb program: {e}"
    return None


def make_cgroup(name: str) -> pathlib.Path:
    path = UNIFIED / name
    path.mkdir(exist_ok=True)
    return path


def enter(cgroup: pathlib.Path):
    """A preexec_fn: the child moves itself into `cgroup` before it execs (and so do its children)."""
    procs = str(cgroup / "cgroup.procs")

    def move() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    return move


def remove_cgroup(cgroup: pathlib.Path, timeout: float = 30) -> None:
    """rmdir once its processes are gone (a stopped node's JVM may take a moment to exit)."""
    deadline = time.monotonic() + timeout
    while cgroup.exists():
        try:
            cgroup.rmdir()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Cut:
    """The cut of the sockets of `cgroup`'s processes: `cut()` attaches, `heal()` detaches (safe to
    call twice, and in a `finally`)."""

    def __init__(self, cgroup: pathlib.Path):
        self.cgroup = cgroup
        self._attached: list[tuple[int, int, int]] = []  # (cgroup fd, program fd, attach type)

    def cut(self) -> None:
        assert not self._attached, "already cut"
        try:
            for attach_type in (EGRESS, INGRESS):
                cg = os.open(self.cgroup, os.O_RDONLY | os.O_DIRECTORY)
                prog = _load_drop(attach_type)
                self._attached.append((cg, prog, attach_type))
                _bpf(_BPF_PROG_ATTACH, struct.pack("<IIII", cg, prog, attach_type, 0))
        except BaseException:
            self.heal()
            raise

    def heal(self) -> None:
        while self._attached:
            cg, prog, attach_type = self._attached.pop()
            try:
                _bpf(_BPF_PROG_DETACH, struct.pack("<IIII", cg, prog, attach_type, 0))
            except OSError:
                pass  # attached never (its attach failed): nothing to detach
            finally:
                os.close(prog)
                os.close(cg)

    @property
    def in_place(self) -> bool:
        return bool(self._attached)

    def __enter__(self) -> Cut:
        self.cut()
        return self

    def __exit__(self, *exc) -> None:
        self.heal()
