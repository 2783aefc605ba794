"""Parsing of sizes ("8GiB") and durations ("20m") as users write them in vmconfigs."""

from __future__ import annotations

import re

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kib": 1024, "kb": 1000,
    "m": 1024**2, "mib": 1024**2, "mb": 1000**2,
    "g": 1024**3, "gib": 1024**3, "gb": 1000**3,
    "t": 1024**4, "tib": 1024**4, "tb": 1000**4,
}
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}


def parse_size(value: object) -> int:
    """Bytes from an int or a string with a unit; binary units for K/M/G/T and KiB/MiB/...

    >>> parse_size("8GiB"), parse_size("512M"), parse_size(4096), parse_size("1.5k")
    (8589934592, 536870912, 4096, 1536)
    """
    if isinstance(value, bool):
        raise ValueError("a size, e.g. 8GiB or 512MiB")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("a positive size")
        return value
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError("a size, e.g. 8GiB, 512MiB or a number of bytes")
    n = int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])
    if n <= 0:
        raise ValueError("a positive size")
    return n


def parse_duration(value: object) -> int:
    """Seconds from an int or a string like "90s", "20m", "1h".

    >>> parse_duration("20m"), parse_duration(90), parse_duration("1h")
    (1200, 90, 3600)
    """
    if isinstance(value, bool):
        raise ValueError("a duration, e.g. 90s, 20m or 1h")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("a positive duration")
        return value
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*", str(value))
    if not m or m.group(2) not in _DURATION_UNITS:
        raise ValueError("a duration, e.g. 90s, 20m or 1h")
    n = int(float(m.group(1)) * _DURATION_UNITS[m.group(2)])
    if n <= 0:
        raise ValueError("a positive duration")
    return n


def format_size(n: int) -> str:
    """The shortest exact binary-unit spelling: 8589934592 -> '8GiB'."""
    for unit, mult in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)
