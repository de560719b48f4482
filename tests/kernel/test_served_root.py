"""Project skills outside a repository (issue 37, item 8): a notebook in a sub-folder of
the folder JupyterLab serves, with no repository anywhere, sees that folder's `skills/`,
`.agents/skills` and `.claude/skills` (the project level), through a real JupyterLab
server and its kernel websocket; the rule itself, pure, beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lily_kernel.config import LilyConfig
from lily_kernel.environment import served_folder
from lily_kernel.skills import resolve_skill_roots
from lily_kernel.skills.roots import project_folders
from tests.conftest import write_skill
from tests.support.jupyter_server import start_lab
from tests.support.kernel_ws import KernelSocket

DEADLINE = 180.0  # one step on a loaded machine (a kernel start)


def _project(root: Path) -> Path:
    """A folder of notebooks with skills at its top and no repository anywhere."""
    write_skill(root / "skills", "alpha", "---\nsummary: Alpha from the served folder.\n---\n\nA.\n")
    write_skill(root / ".claude" / "skills", "beta",
                "---\nsummary: Beta from Claude's folder.\n---\n\nB.\n")
    notebooks = root / "analysis" / "q3"
    notebooks.mkdir(parents=True)
    (notebooks / "report.ipynb").write_text(json.dumps({
        "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return notebooks


def test_up_to_the_served_folder_without_a_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / "work" / "project"
    notebooks = _project(root)
    assert project_folders(notebooks, home) == ()  # no repository: nothing, as before
    assert project_folders(notebooks, home, root) == (root / "analysis", root)
    roots = [(r.source, Path(r.path)) for r in resolve_skill_roots(
        LilyConfig(), notebooks, home, root) if r.source == "project"]
    assert roots == [("project", root / "analysis" / ".agents" / "skills"),
                     ("project", root / "analysis" / ".claude" / "skills"),
                     ("project", root / "skills"), ("project", root / ".agents" / "skills"),
                     ("project", root / ".claude" / "skills")]
    assert project_folders(notebooks, home, home) == ()  # the home folder is the person's
    (root / "analysis" / ".git").mkdir()  # a repository nearer: it ends the project there
    assert project_folders(notebooks, home, root) == (root / "analysis",)
    assert not [r for r in resolve_skill_roots(LilyConfig(), notebooks, home, root)
                if Path(r.path) == root / "skills"]


def test_the_served_folder_is_the_servers_root_dir_when_a_server_started_the_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    (runtime / f"jpserver-{os.getppid()}.json").write_text(json.dumps(
        {"root_dir": str(tmp_path), "pid": os.getppid()}))
    assert served_folder({"JPY_SESSION_NAME": "/x/nb.ipynb"}) == tmp_path.resolve()
    assert served_folder({}) is None  # not started by a server: a terminal, nbclient
    (runtime / f"jpserver-{os.getppid()}.json").write_text("not json")
    assert served_folder({"JPY_SESSION_NAME": "/x/nb.ipynb"}) is None


def test_a_notebook_below_the_served_folder_lists_its_skills(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = tmp_path / "served"
    _project(root)
    lab = start_lab(root, home, tmp_path / "lab.log")
    try:
        session = lab.api("POST", "/api/sessions", {
            "path": "analysis/q3/report.ipynb", "name": "report.ipynb", "type": "notebook",
            "kernel": {"name": "lily"}}, timeout=DEADLINE)
        kernel_id = session["kernel"]["id"]
        ws_url = lab.url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"
        with KernelSocket(ws_url, lab.token, timeout=DEADLINE) as ks:
            skills = ks.execute("/skills")
            assert skills.reply is not None and skills.reply["status"] == "ok", skills.reply
            assert "Alpha from the served folder." in skills.plain, skills.plain
            assert "Beta from Claude's folder." in skills.plain, skills.plain
    finally:
        lab.stop()
