"""docs/architecture.md's drawing, "may import" table and core list, made from the layering
test's tables (`ALLOWED`, `CORE`, `FORBIDDEN` in tests/core/test_layering.py).

Run `.venv/bin/python docs/generate_architecture.py` after adding a part to lily_kernel (its
row in ALLOWED first) or changing what one may import: it rewrites the marked regions of
docs/architecture.md and nothing else. tests/core/test_architecture_doc.py fails while the
doc differs from what this makes. A part's responsibility is the doc's own words, kept as
they are; a new part's is its docstring until someone writes better.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from collections.abc import Mapping, Set
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lily_kernel"
DOC = REPO / "docs" / "architecture.md"
COMMAND = ".venv/bin/python docs/generate_architecture.py"
REGIONS = ("drawing", "table", "core")

Allowed = Mapping[str, Set[str]]


def layering_tables() -> tuple[Allowed, list[str], tuple[str, ...]]:
    """ALLOWED, CORE and FORBIDDEN, as the layering test holds them (imported, not copied)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.core import test_layering

    return test_layering.ALLOWED, test_layering.CORE, test_layering.FORBIDDEN


def label(part: str) -> str:
    """How the doc names a part: `errors.py` for a module, `events/` for a package."""
    return f"{part}.py" if (PACKAGE / f"{part}.py").is_file() else f"{part}/"


def reachable(allowed: Allowed, part: str) -> set[str]:
    seen: set[str] = set()
    todo = list(allowed.get(part, ()))
    while todo:
        target = todo.pop()
        if target not in seen:
            seen.add(target)
            todo.extend(allowed.get(target, ()))
    return seen


def cycle_of(allowed: Allowed, part: str) -> frozenset[str]:
    """The parts that may import `part` and be imported by it, however far (itself
    included): more than itself only where ALLOWED has a cycle."""
    return frozenset({part} | {p for p in reachable(allowed, part)
                               if part in reachable(allowed, p)})


def layers(allowed: Allowed) -> dict[str, int]:
    """Each part's layer: 0 for a part that imports no other, else one above the highest
    part it may import (so every arrow of the drawing points down; the parts of a cycle,
    which may import each other, share a layer)."""
    found: dict[str, int] = {}

    def layer(part: str) -> int:
        if part not in found:
            cycle = cycle_of(allowed, part)
            below = {t for p in cycle for t in allowed.get(p, ())} - cycle
            level = 1 + max((layer(t) for t in below), default=-1)
            found.update(dict.fromkeys(cycle, level))
        return found[part]

    for part in allowed:
        layer(part)
    return found


def direct(allowed: Allowed, part: str) -> list[str]:
    """What a part may import that it does not reach through another part it may import
    (outside that part's cycle): the arrows worth drawing (the rest follows from them)."""
    targets = allowed[part]
    return sorted(t for t in targets
                  if not any(t in reachable(allowed, other)
                             for other in targets - cycle_of(allowed, t)))


def cycles(allowed: Allowed) -> list[list[str]]:
    """The cycles of ALLOWED, each as its parts in order, once."""
    found = {cycle_of(allowed, part) for part in allowed}
    return sorted(sorted(c) for c in found if len(c) > 1)


def render_drawing(allowed: Allowed, core: list[str]) -> str:
    layer_of = layers(allowed)
    inner = {name.removesuffix(".py") for name in core}

    def shown(part: str) -> str:
        return label(part) + ("*" if part in inner else "")

    lines = ["```text",
             "layer  part ─▶ the parts it may import directly (and, through them, all below)"]
    for layer in sorted(set(layer_of.values()), reverse=True):
        parts = sorted((p for p in allowed if layer_of[p] == layer), key=label)
        heading = f"{layer:>4}   "
        if layer == 0:
            lines.append(heading + "  ".join(shown(p) for p in parts))
            continue
        for index, part in enumerate(parts):
            arrows = " ".join(label(p) for p in direct(allowed, part))
            lines.append((heading if index == 0 else " " * len(heading))
                         + f"{shown(part)} ─▶ {arrows}")
    lines += ["", "* the core: no Jupyter, no litellm, none of the layers of the edges (see below the table)"]
    lines += [f"{' ⇄ '.join(label(p) for p in cycle)}: may import each other (a cycle in ALLOWED)"
              for cycle in cycles(allowed)]
    lines.append("```")
    return "\n".join(lines)


def docstring(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line ("" without one)."""
    text = ast.get_docstring(ast.parse(path.read_text())) if path.is_file() else None
    return " ".join((text or "").split("\n\n")[0].split()).replace("|", "\\|")


def summary(part: str) -> str:
    """A new part's responsibility: its docstring, until the doc says more."""
    path = PACKAGE / f"{part}.py"
    text = docstring(path if path.is_file() else PACKAGE / part / "__init__.py")
    return text or "(no docstring: say what this part is for)"


def unnamed(part: str, what: str) -> str:
    """What the row of a package must add for its modules it does not name: each one's
    first sentence of docstring, so that a new module is in the table the day it lands."""
    folder = PACKAGE / part
    if not folder.is_dir():
        return ""
    added = ""
    for module in sorted(folder.glob("*.py")):
        if module.name != "__init__.py" and f"`{module.name}`" not in what:
            sentence = re.split(r"(?<=[a-z)`])\. ", docstring(module))[0].rstrip(".")
            first = (sentence.split() or [""])[0].rstrip(":,")
            if first[1:].islower() or len(first) == 1:  # a word, not a name (`LilyKernel`)
                sentence = sentence[0].lower() + sentence[1:]
            added += f"; `{module.name}`: {sentence or 'no docstring'}"
    return added


def described(doc: str) -> dict[str, str]:
    """Each part's responsibility as the doc's table says it now (by the part's label)."""
    rows: dict[str, str] = {}
    for line in region(doc, "table").splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \| (.*) \| [^|]* \|", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def render_table(allowed: Allowed, responsibilities: Mapping[str, str]) -> str:
    layer_of = layers(allowed)
    lines = ["| part | responsibility | may import (checked) |", "|---|---|---|"]
    for part in sorted(allowed, key=lambda p: (layer_of[p], label(p))):
        imports = ", ".join(label(p) for p in sorted(allowed[part], key=label)) or "—"
        what = responsibilities.get(label(part)) or summary(part)
        what += unnamed(part, what)
        lines.append(f"| `{label(part)}` | {what} | {imports} |")
    return "\n".join(lines)


def render_core(core: list[str], forbidden: tuple[str, ...]) -> str:
    parts = ", ".join(f"`{label(name.removesuffix('.py'))}`" for name in core)
    names = ", ".join(f"`{name}`" for name in forbidden)
    return textwrap.fill(f"- The core ({parts}) imports none of {names}.", width=90,
                         subsequent_indent="  ", break_on_hyphens=False)


def markers(name: str) -> tuple[str, str]:
    return (f"<!-- {name}: generated from tests/core/test_layering.py by {COMMAND};"
            " edit the table's responsibilities here, the rest there -->",
            f"<!-- end of the generated {name} -->")


def region(doc: str, name: str) -> str:
    begin, end = markers(name)
    if doc.count(begin) != 1 or doc.count(end) != 1:
        raise ValueError(f"docs/architecture.md needs the {name} markers once each:\n{begin}\n{end}")
    return doc[doc.index(begin) + len(begin):doc.index(end)]


def generate(doc: str) -> str:
    """The doc with its generated regions made again from the layering test's tables."""
    for name in REGIONS:
        region(doc, name)  # each marker there once, before anything is made
    allowed, core, forbidden = layering_tables()
    made = {"drawing": render_drawing(allowed, core),
            "table": render_table(allowed, described(doc)),
            "core": render_core(core, forbidden)}
    for name in REGIONS:
        begin, end = markers(name)
        start, stop = doc.index(begin) + len(begin), doc.index(end)
        doc = f"{doc[:start]}\n{made[name]}\n{doc[stop:]}"
    return doc


def main() -> None:
    old = DOC.read_text()
    try:
        new = generate(old)
    except ValueError as error:  # a marker gone: nothing written
        sys.exit(f"docs/generate_architecture.py: {error}")
    if new == old:
        print("docs/architecture.md is up to date")
        return
    DOC.write_text(new)
    print("docs/architecture.md regenerated")
    before, after = described(old), described(new)
    for name in sorted(after.keys() - before.keys()):
        print(f"  new part {name}: described by its docstring; say more in its row")
    for name in sorted(before.keys() & after.keys()):
        added = re.findall(r"; `([a-z_]+\.py)`: ", after[name][len(before[name]):])
        if added:
            print(f"  {name} {', '.join(added)}: described by the docstring; say more in the row")


if __name__ == "__main__":
    main()
