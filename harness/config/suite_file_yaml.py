"""YAML with line numbers, for a suite file's one-line errors: mappings and lists that keep the
line of each key or item (PyYAML's node marks), and a key given twice is an error naming both lines."""

from __future__ import annotations

from typing import Any

import yaml


class Located(dict):
    """A mapping from the file, with the line of each key (`lines`) and of itself (`line`)."""

    line: int = 0
    lines: dict[Any, int]


class LocatedList(list):
    line: int = 0
    lines: list[int]


class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader whose mappings and lists keep their line numbers (and a key given twice
    is an error naming both lines)."""


def _map(loader: Loader, node: yaml.MappingNode) -> Located:
    out = Located()
    out.line, out.lines = node.start_mark.line + 1, {}
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool) and key is not None:
            raise yaml.constructor.ConstructorError(None, None, "a key must be a plain word", key_node.start_mark)
        if key in out.lines:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' is given twice (lines {out.lines[key]} and {key_node.start_mark.line + 1}); "
                "give it once", key_node.start_mark)
        out.lines[key] = key_node.start_mark.line + 1
        out[key] = loader.construct_object(value_node, deep=True)
    return out


def _seq(loader: Loader, node: yaml.SequenceNode) -> LocatedList:
    out = LocatedList(loader.construct_object(n, deep=True) for n in node.value)
    out.line, out.lines = node.start_mark.line + 1, [n.start_mark.line + 1 for n in node.value]
    return out


Loader.add_constructor("tag:yaml.org,2002:map", _map)
Loader.add_constructor("tag:yaml.org,2002:seq", _seq)

