"""Where and how code runs: bubblewrap's sandbox and its file system, the reaper, the
runner of a planned process. Below tools/: a tool plans a run and hands it here."""
