"""The PVH kernel extraction (harness/image/kernel_elf.py) on a real Debian kernel when one is at hand."""

from __future__ import annotations

import glob
import lzma
import struct
from pathlib import Path

import pytest

from harness.image import kernel_elf


def _elf_with_notes(notes: bytes) -> bytes:
    """A 64-bit little-endian ELF header with one PT_NOTE program header over `notes`."""
    head = bytearray(64)
    head[:4], head[4], head[5] = b"\x7fELF", 2, 1
    struct.pack_into("<Q", head, 0x20, 64)  # e_phoff
    struct.pack_into("<HH", head, 0x36, 56, 1)  # e_phentsize, e_phnum
    ph = struct.pack("<IIQQQQQQ", 4, 0, 120, 0, 0, len(notes), len(notes), 4)
    return bytes(head) + ph + notes


def _note(name: bytes, ntype: int, desc: bytes = b"\0" * 4) -> bytes:
    padded = name + b"\0" * (-len(name) % 4)
    return struct.pack("<III", len(name), len(desc), ntype) + padded + desc


def test_pvh_note_found_among_others():
    assert kernel_elf.has_pvh_note(_elf_with_notes(_note(b"GNU\0", 3) + _note(b"Xen\0", 18)))
    assert not kernel_elf.has_pvh_note(_elf_with_notes(_note(b"Xen\0", 17) + _note(b"GNU\0", 18)))


def test_xz_payload_unpacked_and_other_formats_refused():
    elf = _elf_with_notes(_note(b"Xen\0", 18))
    bz = kernel_elf._fake_bzimage(lzma.compress(elf, format=lzma.FORMAT_XZ))
    assert kernel_elf.vmlinux_from_bzimage(bz) == elf
    with pytest.raises(kernel_elf.KernelFormatError, match="only xz and gzip"):
        kernel_elf.vmlinux_from_bzimage(kernel_elf._fake_bzimage(b"(\xb5/\xfd" + b"z" * 20))  # zstd
    with pytest.raises(kernel_elf.KernelFormatError, match="not a bzImage"):
        kernel_elf.vmlinux_from_bzimage(b"\0" * 2048)


KERNELS = sorted(glob.glob("/boot/vmlinuz-*") + glob.glob(str(Path.home() / ".cache/fslab/images/*/base/vmlinuz")))


@pytest.mark.skipif(not KERNELS, reason="no Debian kernel on this host")
def test_a_real_debian_kernel_has_its_pvh_entry():
    elf = kernel_elf.vmlinux_from_bzimage(Path(KERNELS[0]).read_bytes())
    assert elf[:4] == b"\x7fELF" and kernel_elf.has_pvh_note(elf)
