"""The YAML loader of SKILL.md frontmatter, imported when a frontmatter needs it (one
that is not plain `key: words` lines, plain_frontmatter.py): PyYAML's import is the
largest of a start whose skills are all plain."""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["load_yaml"]

_STR_TAG = "tag:yaml.org,2002:str"


class _SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """yaml.safe_load's loader (C parser when present), with one shortcut.

    A plain string scalar constructs to `node.value` in SafeConstructor, and a mapping
    with plain string keys to the dict of its pairs; building those directly skips the
    generic dispatch that dominates frontmatter loading (nearly every node is one of
    them). Every other node goes through SafeConstructor unchanged.

    Kept for a figure in docs/benchmarks.md ("Skill snapshot"): with plain `CSafeLoader`
    the snapshot build over the corpus is ~8 ms slower and its ratio to skills-ref misses
    the >= 12x target (measured 11.0-11.9x, against 12.6-13.1x with this class).
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node.tag == _STR_TAG and type(node) is yaml.ScalarNode:
            return node.value
        return super().construct_object(node, deep)

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        # Plain string keys rule out merge keys (`<<` resolves to another tag), so the
        # generic path's merge flattening and hashability checks have nothing to do.
        if type(node) is yaml.MappingNode and all(
            key.tag == _STR_TAG and type(key) is yaml.ScalarNode for key, _ in node.value
        ):
            return {key.value: self.construct_object(value, deep) for key, value in node.value}
        return super().construct_mapping(node, deep)  # type: ignore[no-any-return]


def load_yaml(source: str) -> tuple[Any, str | None]:
    """What `source` holds, or (None, where and what the YAML problem is)."""
    try:
        return yaml.load(source, Loader=_SafeLoader), None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return None, f"{where}: {problem}"
