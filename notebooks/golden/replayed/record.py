"""Record the replayed golden anew: its answers, then its outputs as the record gives them.

    .venv/bin/python notebooks/golden/replayed/record.py

1. The record: the notebook runs once with the loopback model (each chat cell's answers
   are in its metadata, under `lily_recorded_with`) and the session log on; its log is
   the record, `.lily/sessions/<session>.jsonl` (the folder's older record removed
   first).
2. The outputs: the notebook runs again, the model unreachable (no key, a port where
   nothing answers): every chat cell is answered from the record, and says so. Those
   outputs are stored, sanitized as every golden's (golden_harness.sanitize).

Then commit the notebook and the record (`git add -f .lily/sessions`: `.lily/` is not
for git otherwise). Review the diff: the stored outputs are the contract nbval checks.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # golden_harness, regenerate
sys.path.insert(0, str(HERE.parents[2]))  # the repository, for tests.support

from golden_harness import DUMMY_KEY, sanitize  # noqa: E402
from regenerate import golden_env  # noqa: E402

from tests.support.openai_server import OpenAIServer, Reply  # noqa: E402

NOTEBOOK = HERE / "replayed.ipynb"
RECORDED_WITH = "lily_recorded_with"
UNREACHABLE = "http://127.0.0.1:9/v1"


def _run(nb: Any, env: dict[str, str], server: OpenAIServer | None = None) -> None:
    def on_cell_start(cell: Any, cell_index: int) -> None:
        if server is not None:
            server.replies.clear()
            server.script(*(Reply(**r) for r in cell.metadata.get(RECORDED_WITH, [])))

    NotebookClient(nb, kernel_name="lily", timeout=120, record_timing=False,
                   resources={"metadata": {"path": str(HERE)}},
                   on_cell_start=on_cell_start).execute(env=env)


def record() -> None:
    shutil.rmtree(HERE / ".lily", ignore_errors=True)
    base = {k: v for k, v in golden_env().items() if k not in ("LILY_API_BASE",
                                                                "OPENAI_API_KEY")}
    with OpenAIServer() as server:
        _run(nbformat.read(NOTEBOOK, as_version=4),
             {**base, "LILY_EVENT_LOG": "1", "LILY_API_BASE": server.base_url,
              "OPENAI_API_KEY": DUMMY_KEY}, server)
        recorded = len(server.requests)
    for name in ("index.sqlite", ".gitignore"):  # a cache and Lily's own note: not the record
        (HERE / ".lily" / name).unlink(missing_ok=True)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    _run(nb, {**base, "LILY_API_BASE": UNREACHABLE})
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if "data" in output:
                output["data"] = {k: sanitize(v) if isinstance(v, str) else v
                                  for k, v in output["data"].items()}
            if output.get("output_type") == "error":
                raise SystemExit(f"not answered from the record: {cell.source!r}: "
                                 f"{output['evalue']}")
    nbformat.write(nb, NOTEBOOK)
    [log] = (HERE / ".lily" / "sessions").glob("*.jsonl")
    print(f"recorded {recorded} model calls in {log.relative_to(HERE.parents[2])}; "
          f"stored the outputs of {NOTEBOOK.relative_to(HERE.parents[2])}")


if __name__ == "__main__":
    record()
