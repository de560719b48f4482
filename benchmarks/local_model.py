"""The embedded model, measured as a person meets it: through a real Lily kernel.

    .venv/bin/python benchmarks/local_model.py [--skills 60] [--threads N] [--decode-tokens 200]

Nothing is configured, so the kernel answers with the embedded SmolLM2-135M (llama.cpp,
2 cores here). For the quickstart's workspace and for a generated workspace of
`--skills` skills, it reports:

- time to the first answer token of turn 1 (a fresh kernel; the skill-selection step
  included), of turn 1 in a second fresh kernel on the same workspace (the system
  context's saved state restored: "seen before"), and of turn 2;
- how long the stop button takes during prompt evaluation and during generation, each
  pressed when the cell says the model works (its "Reading the …" notice, its first
  words), never after a fixed wait; a cell that ended first is said "not measured";
- the kernel's RSS after the model is loaded;
- in-process: load time, prompt and decode tokens per second, and, as the baseline in
  the same run, raw llama-cpp-python (`Llama.create_chat_completion`, same file, same
  context and threads) on the same first request: Lily's time to first token / raw's;
  and, as decode's ceiling, llama.cpp evaluating the answer Lily generated again, one
  token at a time with nothing else: Lily's decode rate / that.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

import psutil
from kernel_common import TIMEOUT, bench_env, generate_workspace, reply_to, started

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lily_kernel.llm.base import ChatRequest  # noqa: E402
from lily_kernel.llm.local_files import find_embedded_model, local_model_file  # noqa: E402
from lily_kernel.llm.local_model import LocalModel, default_threads  # noqa: E402
from lily_kernel.runtime import LilyRuntime  # noqa: E402

QUESTION = "Hello! What can you help me with?"
FOLLOW_UP = "Thanks. Say that again in one sentence."
LONG_STORY = "Write a very long story about a cat who sails around the world, in many chapters."
# ~2,700 tokens: over the 1,500 a cell announces before the model reads them
# ("Reading the …", runtime/turn.py), and minutes of reading on a loaded machine.
LONG_MESSAGE = "Summarise these notes. " + " ".join(
    f"Note {i}: the meeting moved to room {i} at {i % 12 + 1} o'clock." for i in range(150))
CELL_SECONDS = TIMEOUT * 15  # one cell, at any load; past it the benchmark fails and says so
READING = "Reading the "  # display/messages.py reading_notice: the model reads first


def _cell_messages(kernel: Any, msg_id: str) -> Iterator[dict[str, Any]]:
    """The iopub messages of the cell `msg_id`, up to its idle status (included); a
    TimeoutError past CELL_SECONDS, whatever arrives meanwhile."""
    deadline = time.monotonic() + CELL_SECONDS
    while True:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise Empty
            msg: dict[str, Any] = kernel.kc.get_iopub_msg(timeout=left)
        except Empty:
            raise TimeoutError(f"the cell was not done after {CELL_SECONDS} s") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        yield msg
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return


def _first_token_seconds(kernel: Any, code: str, picks: list[str] | None = None) -> float:
    """Seconds from sending `code` to the first display of the answer's text; the skill
    the model selected, if it selected one, is added to `picks`."""
    began = time.perf_counter()
    msg_id = kernel.kc.execute(code)
    first = None
    for msg in _cell_messages(kernel, msg_id):
        kind = msg["msg_type"]
        data = msg["content"].get("data", {})
        if kind == "display_data" and "lily-notice" in data.get("text/html", ""):
            notice = data["text/plain"]
            if notice.startswith("Skill: ") and picks is not None:
                picks.append(notice.removeprefix("Skill: ").split(" ")[0])
        if first is None and kind in ("display_data", "update_display_data") and \
                "lily-reply" in data.get("text/html", ""):
            first = time.perf_counter() - began
    reply = reply_to(kernel.kc, msg_id)
    if reply["content"]["status"] != "ok" or first is None:
        raise RuntimeError(f"{code!r} failed: {reply['content']}")
    return first


def _stop_seconds(kernel: Any, code: str, when: str) -> float | str:
    """Interrupt `code` in a new conversation (the cell reads its own message, not the
    turns before it) while the model works on it, by the cell's own messages whatever
    the machine's load: during prompt evaluation ("prompt": at the notice that the model
    reads first, said before its read of the long message) or generation ("generation":
    at the first update of the answer's text). Seconds from the interrupt to the cell's
    KeyboardInterrupt reply; or, where the cell ended before that moment or before the
    interrupt reached it, why the figure was not measured."""
    kernel.execute("/new")
    msg_id = kernel.kc.execute(code)
    messages = _cell_messages(kernel, msg_id)
    for msg in messages:
        if _model_works(msg, when):
            break
    else:
        status = reply_to(kernel.kc, msg_id)["content"]["status"]
        sign = f"a {READING}… notice" if when == "prompt" else "its answer's text"
        return f"not measured: the cell ended ({status}) without {sign}"
    asked = time.perf_counter()
    kernel.km.interrupt_kernel()
    reply = reply_to(kernel.kc, msg_id)
    took = time.perf_counter() - asked
    for _ in messages:  # to the cell's idle status, before the next cell
        pass
    if reply["content"].get("ename") != "KeyboardInterrupt":
        return f"not measured: the cell had ended ({reply['content']['status']}) " \
               "when the interrupt came"
    return took


def _model_works(msg: dict[str, Any], when: str) -> bool:
    """Whether `msg` says the model is reading ("prompt") or writing ("generation")."""
    if when == "generation":
        return bool(msg["msg_type"] == "update_display_data")
    text = str(msg["content"].get("data", {}).get("text/plain", ""))
    return bool(msg["msg_type"] == "display_data" and text.startswith(READING))


def measure_kernel(workspace: Path, home: Path, threads: int,
                   picks: list[str]) -> dict[str, float | str]:
    """The figures through a kernel; `picks` gets the skill each of the two turns
    selected ("none" for none): a turn that selects a skill reads its SKILL.md, unless
    the conversation already holds it."""
    env = {**bench_env(home), "LILY_LOCAL_THREADS": str(threads)}
    figures: dict[str, float | str] = {}
    with started("lily", workspace, env) as kernel:
        for turn, question in (("turn 1", QUESTION), ("turn 2", FOLLOW_UP)):
            before = len(picks)
            figures[f"{turn} first token"] = _first_token_seconds(kernel, question, picks)
            if len(picks) == before:
                picks.append("none")
        figures["kernel RSS after load (MiB)"] = psutil.Process(kernel.pid).memory_info().rss / 2**20
        # Generation first: the stopped read goes on to the end of its batch of tokens,
        # and the kernel is ended after it rather than waiting for it.
        generation = _stop_seconds(kernel, LONG_STORY, "generation")
        figures["stop during prompt evaluation"] = _stop_seconds(kernel, LONG_MESSAGE, "prompt")
        figures["stop during generation"] = generation
    with started("lily", workspace, env) as kernel:  # same workspace, its prefix saved
        figures["turn 1 first token, seen before"] = _first_token_seconds(kernel, QUESTION)
    return figures


def first_request(workspace: Path) -> ChatRequest:
    """The answer request Lily would send for QUESTION there (system context + message)."""
    runtime = LilyRuntime.start(workspace, {"LILY_EVENT_LOG": "0", "HOME": str(workspace),
                                             "LILY_TRUST": "workspace"})
    from lily_kernel.prompting import build_model_request

    request = build_model_request(
        persona=runtime.session.persona, snapshot=runtime.session.skill_snapshot,
        history=[], user_text=QUESTION, catalog_max_chars=30_000,
        tool_calls=False)
    return ChatRequest(list(request.messages), max_tokens=64)


def measure_raw(workspace: Path, threads: int) -> dict[str, float]:
    """The baseline: llama-cpp-python's own chat completion on the same first request."""
    import llama_cpp

    file = local_model_file("local")
    assert file is not None
    request = first_request(workspace)
    figures: dict[str, float] = {}
    began = time.perf_counter()
    raw = llama_cpp.Llama(model_path=str(file.path), n_ctx=0, n_threads=threads,
                          n_threads_batch=threads, seed=0, verbose=False)
    figures["raw llama-cpp-python load"] = time.perf_counter() - began
    began = time.perf_counter()
    stream: Any = raw.create_chat_completion(messages=request.messages,  # type: ignore[arg-type]
                                             max_tokens=64, temperature=0.2, stream=True)
    for chunk in stream:
        if chunk["choices"][0]["delta"].get("content"):
            figures["raw first token (baseline)"] = time.perf_counter() - began
            break
    return figures


def measure_lily(workspace: Path, threads: int, decode: int) -> dict[str, float]:
    """Lily's LocalModel on the same request: load, first token, prompt and decode rates
    (decode over an answer of at most `decode` tokens)."""
    file = local_model_file("local")
    assert file is not None
    request = first_request(workspace)
    figures: dict[str, float] = {}
    model = LocalModel(file, prefix_cache=None, threads=threads)
    began = time.perf_counter()
    model.load()
    figures["Lily load"] = time.perf_counter() - began
    assert model.engine is not None
    prompt_tokens = len(model.engine.tokens(request.messages))  # measuring: what it reads

    async def timed(req: ChatRequest) -> tuple[Any, list[float], float]:
        marks: list[float] = []
        began = time.perf_counter()
        response = await model.complete(req, lambda _t: marks.append(time.perf_counter()))
        return response, marks, began

    _, marks, began = asyncio.run(timed(request))
    figures["Lily first token"] = marks[0] - began
    figures["prompt tokens"] = prompt_tokens
    figures["prompt tokens/s"] = prompt_tokens / figures["Lily first token"]
    long = ChatRequest([*request.messages[:-1], {"role": "user", "content": LONG_STORY}],
                       max_tokens=decode)
    response, marks, _ = asyncio.run(timed(long))
    tokens = response.usage.completion_tokens
    figures["decode tokens"] = tokens
    figures["decode tokens/s"] = (tokens - 1) / (marks[-1] - marks[0])
    prompt = len(model.engine.tokens(long.messages))
    figures["eval alone tokens/s (ceiling)"] = model.worker.submit(
        _eval_alone, model, prompt).result()
    return figures


def _eval_alone(model: LocalModel, prompt: int) -> float:
    """llama.cpp's own pace on the answer just generated: the same tokens at the same
    positions, evaluated one at a time, with no sampling and no streaming. Decoding
    cannot be faster than this. (Run it on the model's worker thread: llama.cpp's
    OpenMP threads belong to the thread that first called it.)"""
    assert model.engine is not None
    llama = model.engine.llama
    answer = [int(token) for token in llama.input_ids[prompt:llama.n_tokens]]
    llama.n_tokens = prompt
    began = time.perf_counter()
    for token in answer:
        llama.eval([token])
    return len(answer) / (time.perf_counter() - began)


def in_child(part: str, workspace: Path, threads: int, decode: int) -> dict[str, float]:
    """Run one in-process measurement in a fresh interpreter: llama.cpp's OpenMP threads
    belong to the thread that first calls it, and two such teams in one process slow
    both down (see lily_kernel/llm/local_model.py)."""
    done = subprocess.run([sys.executable, __file__, "--part", part, "--workspace",
                           str(workspace), "--threads", str(threads),
                           "--decode-tokens", str(decode)],
                          capture_output=True, text=True, check=True, timeout=TIMEOUT * 10)
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=60)
    parser.add_argument("--threads", type=int, default=default_threads(),
                        help="llama.cpp threads (default: Lily's default here)")
    parser.add_argument("--decode-tokens", type=int, default=200,
                        help="the longest answer the decode rates are measured over")
    parser.add_argument("--part", choices=("raw", "lily"), help=argparse.SUPPRESS)
    parser.add_argument("--workspace", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:  # a child of in_child()
        print(json.dumps(measure_raw(args.workspace, args.threads) if args.part == "raw" else
                         measure_lily(args.workspace, args.threads, args.decode_tokens)))
        return 0
    if find_embedded_model() is None:
        print("the embedded model is not installed (./setup.sh installs it)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        quickstart = root / "quickstart"
        shutil.copytree(REPO / "notebooks", quickstart,
                        ignore=shutil.ignore_patterns("golden", ".lily", "*.ipynb"))
        generated = generate_workspace(root / "generated", args.skills)
        rows: list[tuple[str, dict[str, float | str], dict[str, float], list[str]]] = []
        for label, workspace in (("quickstart", quickstart),
                                 (f"{args.skills} skills", generated)):
            picks: list[str] = []
            kernel = measure_kernel(workspace, root / f"home-{label}", args.threads, picks)
            figures = in_child("raw", workspace, args.threads, args.decode_tokens)
            figures.update(in_child("lily", workspace, args.threads, args.decode_tokens))
            rows.append((label, kernel, figures, picks))
    for label, kernel, figures, picks in rows:
        print(f"== {label}")
        for key, value in {**kernel, **figures}.items():
            unit = "" if "tokens" in key or "MiB" in key else " s"
            print(f"  {key:38} {value}" if isinstance(value, str) else  # not measured: why
                  f"  {key:38} {value:9.2f}{unit}")
        ratio = figures["Lily first token"] / figures["raw first token (baseline)"]
        print(f"  {'first token, Lily / raw llama-cpp':38} {ratio:9.2f}x")
        ratio = figures["decode tokens/s"] / figures["eval alone tokens/s (ceiling)"]
        print(f"  {'decode, Lily / eval alone':38} {ratio:9.2f}x")
        print(f"  {'skill selected in turns 1 and 2':38} {' then '.join(picks)}")
    print(f"threads: {args.threads}, load: "
          f"{statistics.mean([f['Lily load'] for _, _, f, _ in rows]):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
