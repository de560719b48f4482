"""What the person sees of code that runs: the code itself, highlighted, then its outputs
as a notebook shows them, made safe.

An output comes from code the model wrote, or a package it imported: nothing in it may
act on the notebook or reach out of it. HTML is cleaned as display/markup.py cleans all
Lily shows (no scripts, event handlers or styles, nothing fetched), SVG is shown as an
image (a browser runs no script in an image), raster images pass as they are, and
what a notebook would run or cannot render here (JavaScript, widgets, Markdown and
LaTeX, whose HTML is not cleaned) falls back to the output's plain text. Text passes
`program_output` (no terminal escapes).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lily_kernel.display.markup import clean_html
from lily_kernel.visible import program_output

if TYPE_CHECKING:  # prompting is not loaded at the kernel's start (tests/kernel/test_startup.py)
    from lily_kernel.prompting.runs import Written

__all__ = ["Code", "RunOutput", "code_bundle", "files_written", "image_output",
           "output_cut", "output_message", "process_ended", "skills_held", "stream_output"]

# Images shown as they are: the bytes are base64 (checked), never markup.
_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True)
class Code:
    """Code that runs (or ran), shown highlighted."""

    text: str
    language: str = "python"


@dataclass(frozen=True)
class RunOutput:
    """One output of a run as nbformat writes it: a stream, a display, a result, an error."""

    output: Mapping[str, Any]


def _fence(text: str, language: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def code_bundle(code: Code) -> dict[str, str]:
    """Markdown (the notebook highlights the fenced code) and plain text."""
    text = program_output(code.text)
    return {"text/markdown": _fence(text, code.language), "text/plain": text}


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _base64(value: Any) -> str | None:
    text = _text(value).replace("\n", "")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return text


def _safe_data(data: Mapping[str, Any]) -> dict[str, str]:
    safe: dict[str, str] = {}
    for mime in _IMAGES:
        if mime in data and (encoded := _base64(data[mime])) is not None:
            safe[mime] = encoded
    if "text/html" in data:
        safe["text/html"] = clean_html(_text(data["text/html"]))
    elif "image/svg+xml" in data:
        svg = base64.b64encode(_text(data["image/svg+xml"]).encode()).decode()
        safe["text/html"] = f'<img src="data:image/svg+xml;base64,{svg}" alt="SVG image">'
    plain = data.get("text/plain")
    if plain is not None:
        safe["text/plain"] = program_output(_text(plain))
    elif not safe:
        kinds = ", ".join(sorted(data)) or "nothing"
        safe["text/plain"] = f"[an output Lily does not show here: {kinds}]"
    return safe


def output_message(item: RunOutput) -> tuple[str, dict[str, Any]]:
    """The Jupyter message (type, content) that shows one output: a stream as a stream,
    an error as a short traceback on stderr (the cell itself goes on), anything else as
    a display of its safe representations."""
    output = item.output
    kind = output.get("output_type")
    if kind == "stream":
        name = "stderr" if output.get("name") == "stderr" else "stdout"
        return "stream", {"name": name, "text": program_output(_text(output.get("text", "")))}
    if kind == "error":  # the short traceback the model reads too
        from lily_kernel.prompting.runs import traceback_summary

        return "stream", {"name": "stderr", "text": traceback_summary(output) + "\n"}
    metadata = output.get("metadata") or {}
    kept = {m: {k: v for k, v in size.items() if k in ("width", "height")
                and isinstance(v, int)}
            for m, size in metadata.items() if m in _IMAGES and isinstance(size, dict)}
    return "display_data", {"data": _safe_data(output.get("data") or {}),
                            "metadata": kept, "transient": {}}


# --- a process's run (a shell command, a skill's script) and the files a run wrote ---


def stream_output(name: str, text: str) -> RunOutput:
    """What a process printed on `name` (stdout or stderr), as it came."""
    return RunOutput({"output_type": "stream", "name": name, "text": text})


def output_cut(total_bytes: int) -> RunOutput:
    """The line under a process's output the cap cut in the cell."""
    return stream_output("stderr", f"\n[... output cut here: {total_bytes:,} bytes in all]\n")


def process_ended(what: str, status: str, sandboxed: bool | None = None) -> str:
    """The notice under a process's output: what ran (`Shell "ls"`, `Script
    "scripts/x.py"`) and how it ended (prompting/runs.py's status words); whether it was
    sandboxed, where that is known."""
    where = {True: " (sandboxed)", False: " (not sandboxed)", None: ""}[sandboxed]
    return f"{what}: {status}{where}"


FILES_SHOWN = 12  # the files a notice names; the rest are counted


def _size(size: int) -> str:
    if size < 1024:
        return f"{size:,} bytes"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"


def files_written(files: Sequence[Written], complete: bool = True) -> str:
    """The notice naming the files a run created or changed in the workspace ("" when
    none was seen and the look was whole)."""
    if not files:
        return "" if complete else ("Files written: none seen (the workspace is too large "
                                    "to look at whole).")
    named = ", ".join(f"`{f.path.replace('`', chr(39))}` ({_size(f.size)}"
                      f"{', new' if f.created else ''})" for f in files[:FILES_SHOWN])
    more = f" and {len(files) - FILES_SHOWN:,} more" if len(files) > FILES_SHOWN else ""
    partial = "" if complete else " (the workspace is too large to look at whole)"
    return f"Files written: {named}{more}{partial}."


def skills_held(folders: Sequence[tuple[str, bool]]) -> str:
    """The notice under a run that made or changed skills in the workspace's skills/
    (each folder, and whether it is new): held until the person trusts them."""
    named = ", ".join(f"`{f.replace('`', chr(39))}` ({'new' if new else 'changed'})"
                      for f, new in folders)
    return (f"Skills written: {named}. Lily holds a new or changed skill until you trust "
            "it: run /trust to use it.")


def image_output(path: str, mime: str, data: bytes) -> RunOutput:
    """An image a run wrote, shown as any image a run displays is (made safe by
    `output_message`: raster bytes as base64, SVG only as an image)."""
    if mime == "image/svg+xml":
        content = {"image/svg+xml": data.decode("utf-8", "replace")}
    else:
        content = {mime: base64.b64encode(data).decode()}
    return RunOutput({"output_type": "display_data", "metadata": {},
                      "data": {**content, "text/plain": f"<image {path}>"}})
