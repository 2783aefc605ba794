"""The agent keeps fio's pages in memory across its cold starts (keep_resident), tried on the
host's real kernel: a mapped page survives the eviction that drop_caches does, an unmapped one not."""

from __future__ import annotations

import ctypes
import os
import shutil

import pytest
from agentfakes import load_agent

PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_pages(path) -> int:
    """How many of the file's pages the page cache holds (mincore through a mapping of our own)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        a = libc.mmap(None, size, 1, 1, f.fileno(), 0)  # PROT_READ, MAP_SHARED
    vec = ctypes.create_string_buffer((size + PAGE - 1) // PAGE)
    assert libc.mincore(ctypes.c_void_p(a), ctypes.c_size_t(size), vec) == 0
    libc.munmap(ctypes.c_void_p(a), ctypes.c_size_t(size))
    return sum(b & 1 for b in vec.raw)


def evict(path) -> None:
    """What drop_caches does to one file: every clean page not mapped leaves the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@pytest.fixture
def cached_files(tmp_path):
    """Two files of 8 pages each, written and synced: their pages are in the page cache."""
    paths = []
    for name in ("kept", "other"):
        p = tmp_path / name
        p.write_bytes(os.urandom(8 * PAGE))
        paths.append(p)
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    return paths


def test_mapped_pages_survive_eviction_and_unmapped_ones_do_not(cached_files):
    kept, other = cached_files
    agent = load_agent("fslab_guest_resident")
    if resident_pages(kept) != 8:
        pytest.skip("this filesystem does not keep written pages in the page cache (e.g. a FUSE tmp)")
    assert agent._map_resident(str(kept)) == 8 * PAGE
    evict(kept)
    evict(other)
    assert resident_pages(kept) == 8
    assert resident_pages(other) == 0


def test_only_pages_in_the_cache_are_kept(cached_files):
    kept, _ = cached_files
    agent = load_agent("fslab_guest_resident2")
    evict(kept)
    if resident_pages(kept) != 0:
        pytest.skip("the page cache did not let go of the file")
    assert agent._map_resident(str(kept)) == 0  # nothing read in: mincore said none


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fios_files_are_its_executable_libraries_and_loader():
    agent = load_agent("fslab_guest_resident3")
    files = agent.loaded_objects(shutil.which("fio"))
    assert files[0] == shutil.which("fio")
    assert any(os.path.basename(f).startswith("libc.so") for f in files)
    assert any("ld-linux" in os.path.basename(f) for f in files)
    assert all(os.path.isabs(f) and os.path.exists(f) for f in files)
    info = agent.keep_resident(("fio", "no-such-tool-fslab"))
    assert info["tools"] == ["fio"] and info["files"] == len(files) and "error" not in info
    assert info["bytes"] > 0 and info["bytes"] % PAGE == 0


def test_a_failure_is_said_and_the_agent_goes_on(monkeypatch):
    agent = load_agent("fslab_guest_resident4")

    def boom(path):
        raise OSError(12, f"mmap {path}")

    monkeypatch.setattr(agent, "_map_resident", boom)
    info = agent.keep_resident(("sh",))
    assert info["error"].startswith("OSError: ") and info["bytes"] == 0
