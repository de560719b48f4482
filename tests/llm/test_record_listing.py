"""What /resume and /rerun say (issue 37, item 7): a continued conversation is listed by
its first message (the turns it took up included), not by the newest one this session
added; /rerun names the turn it asks again in place of. Real runtime, scripted model."""

from __future__ import annotations

from pathlib import Path

from tests.llm.test_record import CELLS, record_three, run, start
from tests.llm.test_skill_tools import reply


def test_a_continued_conversation_is_listed_by_its_first_message(
        workspace: Path, environ: dict[str, str]) -> None:
    record_three(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    again = start(workspace, environ, LILY_NOTEBOOK="talk.ipynb")
    run(again, "/resume")
    book = again.record
    assert book is not None
    [recorded] = book.conversations()
    run(again, f"/resume {recorded.id}")
    run(again, "One more thing", reply("Sure."))
    listed = {c.id: c for c in book.conversations()}
    [mine] = [c for c in listed.values() if c.id != recorded.id]
    assert mine.first == CELLS[0], mine  # not "One more thing"
    assert mine.turns == 4
    again.close()


def test_rerun_says_which_turn_it_replaces(workspace: Path, environ: dict[str, str]) -> None:
    runtime = start(workspace, environ)
    run(runtime, "What is 2+2?", reply("Five."))
    _, sink = run(runtime, "/rerun", reply("Four."))
    assert sink.replies == ["Four."]
    assert sink.notices == ['Asked again in place of the last turn, "What is 2+2?" (its '
                            'answer is no longer in the conversation).'], sink.notices
    runtime.close()
