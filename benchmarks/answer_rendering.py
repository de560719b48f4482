"""Benchmark: what rendering a model's answer costs (display/markup.py), per answer and
per streamed answer, beside the turn's overhead budget (10 ms, conversation_overhead.py).

    .venv/bin/python benchmarks/answer_rendering.py [--runs 20]

Lily renders the model's Markdown to HTML itself and cleans it (the notebook would
render raw Markdown's HTML unsanitized). Measured: the final bundle of answers of
realistic Markdown (paragraphs, a list, a code block, a table, math) of 0.5, 2, 20 and
200 KB, medians of `--runs`; and a 20 KB answer streamed in 8-character deltas through
the turn's stream view (updates at most every 50 ms or 9x the last update's cost), the
time spent rendering against the stream's own length. The baseline in the same run is
the bundle as it was before (the Markdown passed through, `text/markdown`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from html import escape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lily_kernel.display import Reply, bundle
from lily_kernel.runtime.turn import _StreamView
from lily_kernel.visible import visible_prose

BLOCK = """## Findings {n}

The notes say the kernel ships on **Friday**; Ana reviews the *golden* transcripts,
and `lily replay` checks them. The squares add up to $\\sum_{{i=1}}^{{5}} i^2 = 55$.

- first point, with a [link](https://example.com/{n})
- second point, `code` and <b>raw html</b>

```python
total = sum(i * i for i in range(1, 6))
print(total)
```

| name | value |
|---|---|
| alpha | {n} |
| beta | 2.5 |

"""


def answer(size: int) -> str:
    text, n = "", 0
    while len(text) < size:
        text += BLOCK.format(n=n)
        n += 1
    return text[:size]


def old_bundle(reply: Reply) -> dict[str, str]:
    """The reply's bundle before Lily rendered it (e3e29be): Markdown passed through."""
    return {"text/markdown": f"{reply.markdown}\n\n<sub>{escape(reply.footer or '')}</sub>",
            "text/plain": visible_prose(f"{reply.markdown}\n\n-- {reply.footer}")}


def median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


class CountingSink:
    def __init__(self) -> None:
        self.updates = 0
        self.spent = 0.0

    def stream(self, markdown: str) -> None:
        start = time.perf_counter()
        bundle(Reply(markdown))
        self.spent += time.perf_counter() - start
        self.updates += 1


def streamed(size: int, delta: int = 8, tokens_per_s: float = 2000.0) -> tuple[int, float, float]:
    """Updates, seconds rendering, seconds of the stream: deltas arrive at a model's pace."""
    text, sink = answer(size), CountingSink()
    view = _StreamView(sink, True)  # type: ignore[arg-type]
    began = time.perf_counter()
    for i in range(0, len(text), delta):
        view(text[i:i + delta])
        pause = began + (i / delta + 1) / tokens_per_s - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    return sink.updates, sink.spent, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    bundle(Reply("warm up", "footer"))
    print("final answer: Lily's bundle (rendered + cleaned) vs the old one (passed through)")
    for size in (500, 2_000, 20_000, 200_000):
        reply = Reply(answer(size), "openai/model · 11 tokens in, 7 out")
        runs = args.runs if size < 100_000 else max(3, args.runs // 5)
        new, old = median_ms(lambda r=reply: bundle(r), runs), median_ms(
            lambda r=reply: old_bundle(r), runs)
        print(f"  {size:>7,} chars: Lily {new:8.2f} ms, before {old:6.3f} ms, "
              f"+{new - old:.2f} ms")
    updates, spent, total = streamed(20_000)
    print(f"streamed 20,000 chars in 8-char deltas at 2,000/s: {updates} updates, "
          f"{spent * 1000:.0f} ms rendering in a {total:.1f} s stream "
          f"({spent / total:.1%} of it)")


if __name__ == "__main__":
    main()
