"""The session's record: every chat turn's key, the record it is answered from (Run
All after a restart, a reopened notebook continued, `/resume`), and what each turn
adds to it (docs/sessions.md).

The runtime reaches it through one seam (`seam.py`: a `RecordOpening` and the log's
`emit` make it; each turn gives it a frozen `TurnInputs`). A turn's key (`key.py`), the
index of the workspace's recorded turns (`index.py`, SQLite), the notebook and its saved
cells (`notebook.py`), what a record holds, typed (`shapes.py`), the one engine
replaying a turn (`turn_model.py`), what every record does (`keeper.py`) and the
kernel's record (`answers.py`). `lily replay` (replay/) builds its own record on the
same keeper.
"""
