"""Trigger evals (`lily eval`): the eval files read into queries (`items.py`), run through
Lily's real selection path with the ranker alone beside it, and reported (`runs.py`)."""

from lily_kernel.evals.items import EvalItem, load_eval_items, trigger_eval_files
from lily_kernel.evals.runs import (
    EvalReport,
    ItemResult,
    ranker_choice,
    run_eval,
    selected_skill,
)

__all__ = ["EvalItem", "EvalReport", "ItemResult", "load_eval_items", "ranker_choice",
           "run_eval", "selected_skill", "trigger_eval_files"]
