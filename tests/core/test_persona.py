"""Persona files: fixed order, per-file precedence, visible truncation."""

from __future__ import annotations

from pathlib import Path

from lily_kernel.persona import PersonaRoots, list_agents, load_persona


class Roots(PersonaRoots):
    """Roots whose workspace folder is there (not held)."""

    workspace: Path


def roots(tmp_path: Path) -> Roots:
    return Roots(tmp_path / "ws", tmp_path / "user", tmp_path / "bundled")


def put(base: Path, agent: str, name: str, text: str) -> None:
    (base / agent).mkdir(parents=True, exist_ok=True)
    (base / agent / name).write_text(text)


def test_order_and_per_file_precedence(tmp_path: Path) -> None:
    r = roots(tmp_path)
    put(r.bundled, "default", "AGENTS.md", "bundled agents")
    put(r.bundled, "default", "SOUL.md", "bundled soul")
    put(r.user, "default", "SOUL.md", "user soul")
    put(r.workspace, "default", "USER.md", "workspace user")
    put(r.user, "default", "USER.md", "user user")
    persona = load_persona("default", r, 1000)
    assert [(f.name, f.source, f.content) for f in persona.files] == [
        ("SOUL.md", "user", "user soul"),
        ("USER.md", "workspace", "workspace user"),
        ("AGENTS.md", "bundled", "bundled agents"),
    ]
    assert persona.notices == ()


def test_truncation_is_visible_and_announced(tmp_path: Path) -> None:
    r = roots(tmp_path)
    put(r.workspace, "default", "SOUL.md", "x" * 50)
    persona = load_persona("default", r, 20)
    soul = persona.files[0]
    assert soul.content.startswith("x" * 20 + "\n\n[... SOUL.md truncated: 50 characters")
    assert soul.truncated_from == 50
    assert persona.notices == (
        "SOUL.md of agent 'default' (workspace) has 50 characters; only the first 20 are used.",)


def test_agents_are_listed_from_every_root(tmp_path: Path) -> None:
    r = roots(tmp_path)
    put(r.user, "researcher", "SOUL.md", "s")
    put(r.workspace, "writer", "SOUL.md", "s")
    assert list_agents(r) == ["default", "researcher", "writer"]


def test_invalid_utf8_is_replaced_with_a_notice(tmp_path: Path) -> None:
    r = roots(tmp_path)
    (r.workspace / "default").mkdir(parents=True)
    (r.workspace / "default" / "SOUL.md").write_bytes(b"caf\xe9")
    persona = load_persona("default", r, 100)
    assert persona.files[0].content == "caf\ufffd"
    assert "not valid UTF-8" in persona.notices[0]


def test_a_link_loop_among_agents_is_not_an_agent(tmp_path: Path) -> None:
    import os

    r = roots(tmp_path)
    put(r.workspace, "writer", "SOUL.md", "s")
    os.symlink("loop", r.workspace / "loop")
    assert list_agents(r) == ["default", "writer"]
