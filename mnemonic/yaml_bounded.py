"""YAML reading with bounds, for files a user (or anyone who can write to their folder)
controls.

``yaml.safe_load`` is safe from code execution but not from size: a "billion laughs" file
of nested aliases is a few hundred bytes, and every walk over the loaded value expands it
(start-up hung for 15 s and more). A configuration file needs neither many aliases nor
megabytes, so past small bounds the file is refused with a message that says why; the
callers turn that into exit 78 (configuration error).
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_YAML_BYTES = 1024 * 1024
"""Largest YAML document read (a full config.yaml is about 14 KB)."""

MAX_YAML_ALIASES = 100
"""Most ``*alias`` references one document may use."""

MAX_YAML_NODES = 100_000
"""Most values a document may hold once its aliases are expanded."""


class YamlTooComplex(yaml.YAMLError):
    """A document over the size or alias bound; nothing of it was used."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts alias references while composing the node graph, before
    anything can expand them."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                raise YamlTooComplex(
                    f"more than {MAX_YAML_ALIASES} YAML aliases (*name): refused, as a "
                    "configuration needs few and nested aliases can expand without bound"
                )
        return super().compose_node(parent, index)


def load_bounded(text: str) -> Any:
    """``yaml.safe_load`` for one document, within :data:`MAX_YAML_BYTES` and
    :data:`MAX_YAML_ALIASES`; raises :class:`YamlTooComplex` (a ``yaml.YAMLError``)."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlTooComplex(
            f"the document is {len(text):,} characters; at most {MAX_YAML_BYTES:,} are read"
        )
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a node graph whose aliases expand past :data:`MAX_YAML_NODES` nodes, or that
    refers to itself (PyYAML registers an anchor before its children, so ``&a [*a]`` is a
    cycle that every later walk would follow for ever). Linear in the distinct nodes: each
    node's expanded size is computed once."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > MAX_YAML_NODES:
                raise YamlTooComplex(
                    f"the document expands to more than {MAX_YAML_NODES:,} values through "
                    "its aliases: refused"
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YamlTooComplex("a YAML alias refers to a node that contains it: refused")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
