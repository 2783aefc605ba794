"""The uncompressed kernel (vmlinux ELF) inside a bzImage, for PVH direct boot.

QEMU boots an ELF kernel that has a PVH entry note
(Xen note type 18, XEN_ELFNOTE_PHYS32_ENTRY; Debian's kernels have CONFIG_PVH=y) directly in
32-bit protected mode: no real-mode setup code and, above all, no self-decompression. Debian's
bzImage is XZ-compressed; under TCG its decompressor ran 3-6 s (host load 5-8) before the kernel
printed its first line, against 0.6 s for the ELF. The extraction is a pure function of the
bzImage, so the image stays bit-reproducible.

    >>> data = _fake_bzimage(b"\\x7fELF" + b"x" * 60)
    >>> vmlinux_from_bzimage(data)[:4]
    b'\\x7fELF'
"""

from __future__ import annotations

import gzip
import lzma
import struct

PVH_NOTE_TYPE = 18  # XEN_ELFNOTE_PHYS32_ENTRY


class KernelFormatError(ValueError):
    pass


def vmlinux_from_bzimage(data: bytes) -> bytes:
    """The ELF payload of a bzImage (boot protocol >= 2.08: payload_offset/payload_length)."""
    if data[0x202:0x206] != b"HdrS":
        raise KernelFormatError("not a bzImage (no HdrS setup header)")
    version = struct.unpack_from("<H", data, 0x206)[0]
    if version < 0x208:
        raise KernelFormatError(f"boot protocol {version >> 8}.{version & 0xff} has no payload fields")
    setup_sects = data[0x1F1] or 4
    offset, length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + offset
    payload = data[start:start + length]
    if payload.startswith(b"\xfd7zXZ\x00"):
        elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
    elif payload.startswith(b"\x1f\x8b"):
        elf = gzip.decompress(payload)
    elif payload.startswith(b"\x7fELF"):
        elf = payload
    else:
        raise KernelFormatError(f"bzImage payload compressed as {payload[:6].hex()}: only xz and gzip are handled")
    if not elf.startswith(b"\x7fELF"):
        raise KernelFormatError("the bzImage payload is not an ELF file")
    return elf


def has_pvh_note(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF has the PVH entry note QEMU needs to boot it directly."""
    if elf[4] != 2 or elf[5] != 1:
        raise KernelFormatError("not a 64-bit little-endian ELF")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _flags, p_offset, _va, _pa, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        pos, end = p_offset, p_offset + p_filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, pos)
            name = elf[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == PVH_NOTE_TYPE:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def _fake_bzimage(payload: bytes) -> bytes:
    """A minimal bzImage around `payload` (for the doctest): 1 setup sector, payload at offset 0."""
    head = bytearray(1024)
    head[0x1F1] = 1
    head[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", head, 0x206, 0x20F)
    struct.pack_into("<II", head, 0x248, 0, len(payload))
    return bytes(head) + payload
