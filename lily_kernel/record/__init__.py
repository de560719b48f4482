"""The session's record: every chat turn's key, the record it is answered from (Run
All after a restart, a reopened notebook continued, `/resume`), and what each turn
adds to it (docs/sessions.md).

A turn's key (`key.py`), the index of the workspace's recorded turns (`index.py`), the
notebook and its saved cells (`notebook.py`), the one engine replaying a turn
(`turn_model.py`), what every record does (`keeper.py`) and the kernel's record
(`answers.py`). `lily replay` (replay/) builds its own record on the same keeper.
"""
