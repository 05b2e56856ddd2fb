"""The journal on a real disk that fills up (an ext4 file system on a loop device): new events are
refused with JournalFull, every event committed before stays, and once space is freed the journal
takes events again, numbering on without a gap. Needs root (losetup, mount), as the fault drills do."""
from __future__ import annotations

import contextlib
import os
import subprocess

import pytest

from craps_streams.controller.journal import Journal, JournalFull
from tests.controller.test_journal import entries


@contextlib.contextmanager
def loop_disk(tmp_path, megabytes: int):
    """An ext4 file system of `megabytes` on a loop device, mounted at tmp_path/disk."""
    assert os.geteuid() == 0, "mounting a loop device needs root (as tests/faults do)"
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["truncate", "-s", f"{megabytes}M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-m", "0", "-F", str(image)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def fill(mount, leave: int) -> os.PathLike:
    """A file taking all the free space of `mount` but `leave` bytes: -> its path (unlink to free)."""
    filler = mount / "filler"
    st = os.statvfs(mount)
    subprocess.run(["fallocate", "-l", str(max(st.f_bavail * st.f_frsize - leave, 0)), str(filler)], check=True)
    return filler


@pytest.fixture
def small_disk(tmp_path):
    with loop_disk(tmp_path, 8) as mount:
        yield mount


def test_a_full_disk_refuses_new_events_and_loses_none_acknowledged(small_disk):
    journal = Journal(small_disk / "journal.sqlite")
    journal.append(entries("T001", 1, 50, size=200))
    filler = fill(small_disk, 256 << 10)
    acked = 50
    with pytest.raises(JournalFull, match="full"):
        for _ in range(10_000):
            journal.append(entries("T001", acked + 1, 20, size=500))
            acked += 20
    assert journal.last_seq("T001") == acked
    filler.unlink()
    journal.append(entries("T001", acked + 1, 5))  # space freed: taken again, no gap
    journal.close()
    reopened = Journal(small_disk / "journal.sqlite")
    assert [s for s, *_ in reopened.events("T001")] == list(range(1, acked + 6))
    reopened.close()
