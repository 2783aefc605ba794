"""fslab: a reproducible, VM-image-based testbed for comparing Linux filesystems."""

__version__ = "0.1.0"
