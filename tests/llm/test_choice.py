"""Choosing one of a few answers by the model's tokens (llm/choice.py), without a model
file: a fake reader plays a model that wants one answer, and records what it read."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lily_kernel.llm.choice import choices, choose, read_ahead
from lily_kernel.prompting.selection import selection_schema

END = 0


class Wanting:
    """A model that, after the prompt, wants to write `want` (its likeliest next token
    is always want's next one while what it holds is a start of want)."""

    def __init__(self, want: list[int]) -> None:
        self.want = want
        self.held: list[int] = []  # what it read after the prompt's last token
        self.batches: list[list[int]] = []
        self._start = 0

    def read(self, tokens: list[int], outputs: list[int]) -> list[Callable[[int], float]]:
        self.batches.append(list(tokens))
        self._start = len(self.held)
        self.held += tokens
        return [self._logits(self.held[: self._start + index + 1][1:]) for index in outputs]

    def keep(self, count: int) -> None:
        del self.held[self._start + count:]

    def _logits(self, written: list[int]) -> Callable[[int], float]:
        wanted = (self.want[len(written)] if written == self.want[: len(written)]
                  and len(written) < len(self.want) else None)
        return lambda token: 1.0 if token == wanted else 0.0


def spelled(*answers: list[int]) -> list[list[int]]:
    return [[*answer, END] for answer in answers]


def test_the_declarations_answers_are_listed_and_other_schemas_are_not() -> None:
    assert choices(selection_schema(("echo", "haiku"))) == [
        '{"skill": "echo"}', '{"skill": "haiku"}', '{"skill": null}']
    assert choices({"type": "object", "properties": {"a": {"type": "string"}},
                    "required": ["a"], "additionalProperties": False}) is None
    assert choices({"type": "string"}) is None


def test_the_wanted_answer_is_chosen_in_few_batches() -> None:
    # 60 names sharing their first 5 tokens: `skill_000NN` is 5 shared tokens, then two.
    names = [[7, 8, 9, 10, 11, 20 + i // 10, 40 + i % 10] for i in range(60)]
    answers = spelled([5, 6], *names)  # `echo`, then the skill_000NN names
    model = Wanting(names[42])
    chosen = choose(answers, [99], model)
    assert chosen == 43
    # The shared run is read without asking; two decisions where the digits differ.
    assert len(model.batches) == 2, model.batches
    assert model.batches[0][:6] == [99, 7, 8, 9, 10, 11]
    assert model.held == [99, *names[42][:6]]  # the last token is the caller's to read


def test_the_same_prompt_makes_the_same_choice() -> None:
    answers = spelled([1, 2, 3], [1, 2, 4], [5])
    assert {choose(answers, [99], Wanting([1, 2, 4])) for _ in range(5)} == {1}


def test_a_model_going_another_way_drops_what_was_read_past_its_turn() -> None:
    # Read-ahead follows the only branch that leads on (1 -> ...) past the first
    # decision; the model wants `5`, so what was read after that decision is dropped.
    answers = spelled([1, 2, 3], [1, 2, 4], [5])
    model = Wanting([5])
    assert choose(answers, [99], model) == 2
    assert model.held == [99]


def test_a_stop_between_batches_ends_the_choice() -> None:
    class StoppedError(Exception):
        pass

    def stopped() -> None:
        raise StoppedError

    with pytest.raises(StoppedError):
        choose(spelled([1], [2]), [99], Wanting([1]), stopped)


def test_read_ahead_goes_as_far_as_the_way_is_clear() -> None:
    answers = spelled([1, 2, 3], [1, 2, 4], [5])
    batch, decisions = read_ahead(answers, [0, 1, 2], 0, [99])
    assert batch == [99, 1, 2]  # past the 1-or-5 decision, to the 3-or-4 one
    assert [(index, depth) for index, depth, _ in decisions] == [(0, 0), (2, 2)]
