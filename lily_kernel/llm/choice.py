"""Choosing one of a few fixed answers by the model's own tokens (the skill declaration).

Pure: the answers' tokens in, the chosen one out; the model is reached through a small
`Reader` (llm/llama_engine.py is the real one, tests use their own). Token by token:
where the answers still open all go on with the same token, it is taken without
asking; where they differ, the model's likeliest of their next tokens is kept. Each
batch reads ahead as far as the way is clear: through tokens every open answer shares,
and through a decision where only one of the next tokens leads to more decisions (` "`
rather than ` null`; `skill` among `skill_00001`...`skill_00059` and `echo`), with the
model's logits kept at every decision on the way. If the model goes another way, what
was read past that point is dropped. So a choice among 60 names costs one or two decode
steps, where a grammar tests the whole vocabulary at every token; and, being greedy,
the same prompt always makes the same choice.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["Reader", "choices", "choose", "read_ahead"]

Decision = tuple[int, int, dict[int, list[int]]]


class Reader(Protocol):
    """The model, as choosing needs it."""

    def read(self, tokens: list[int], outputs: list[int]) -> list[Callable[[int], float]]:
        """Read `tokens` after what the model holds, in one batch; the logits at each
        batch position of `outputs` (a function from token to logit)."""
        ...

    def keep(self, count: int) -> None:
        """Keep only the first `count` tokens of the batch just read."""
        ...


def choices(schema: dict[str, Any]) -> list[str] | None:
    """Every valid answer, when a schema allows only a few: an object with one required
    property whose value is one of an enum (the skill declaration). None for any other
    schema, which llama.cpp's grammar constrains instead."""
    properties = schema.get("properties")
    if not (schema.get("type") == "object" and isinstance(properties, dict)
            and len(properties) == 1 and schema.get("required") == list(properties)
            and schema.get("additionalProperties") is False):
        return None
    ((name, value),) = properties.items()
    if not (isinstance(value, dict) and set(value) == {"enum"}
            and isinstance(value["enum"], list)):
        return None
    answers = [json.dumps({name: v}, ensure_ascii=False) for v in value["enum"]]
    return list(dict.fromkeys(answers))  # in order, each once


def _following(spelled: Sequence[Sequence[int]], open_: list[int],
               depth: int) -> dict[int, list[int]]:
    """The open answers grouped by their token at `depth`."""
    groups: dict[int, list[int]] = {}
    for index in open_:
        groups.setdefault(spelled[index][depth], []).append(index)
    return groups


def read_ahead(spelled: Sequence[Sequence[int]], open_: list[int], depth: int,
               unread: list[int]) -> tuple[list[int], list[Decision]]:
    """The next batch to read (`unread`, then as far as the way is clear), and its
    decisions: (index in the batch of the token before it, depth, the open answers
    grouped by their token there)."""
    batch, decisions = list(unread), []
    walk = open_
    while len(walk) > 1:
        following = _following(spelled, walk, depth)
        if len(following) > 1:
            decisions.append((len(batch) - 1, depth, following))
            onward = [t for t, rest in following.items() if len(rest) > 1]
            if len(onward) != 1:
                break
            (token,) = onward
        else:
            (token,) = following
        batch.append(token)
        walk, depth = following[token], depth + 1
    return batch, decisions


def choose(spelled: Sequence[Sequence[int]], unread: list[int], reader: Reader,
           check: Callable[[], None] = lambda: None) -> int:
    """The index of the answer (each spelled as its tokens, ending with one the others do
    not share, e.g. end-of-text) the model finds likeliest after what it holds and
    `unread` (tokens still to read before the answer, at least one). `check` runs before
    each batch (it raises to stop)."""
    open_, depth = list(range(len(spelled))), 0
    while len(open_) > 1:
        batch, decisions = read_ahead(spelled, open_, depth, unread)
        check()
        logits = reader.read(batch, [index for index, _, _ in decisions])
        for (index, at, following), logit in zip(decisions, logits, strict=True):
            best = max(sorted(following), key=logit)
            open_, depth = following[best], at + 1
            if index + 1 == len(batch) or batch[index + 1] != best:
                reader.keep(index + 1)  # what was read past here is not it
                unread = [best]
                break
    (chosen,) = open_
    return chosen
