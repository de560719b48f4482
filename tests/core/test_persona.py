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


def test_a_workspace_persona_file_linked_out_of_its_folder_is_skipped(tmp_path: Path) -> None:
    """A downloaded folder's persona/default/USER.md linked to ~/.ssh/id_rsa (or
    /proc/self/environ) must not reach the system prompt once the folder is trusted:
    its digest covers the link, not the file. A link inside the folder is read; the
    person's own roots may link where they like."""
    r = roots(tmp_path)
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE KEY")
    put(r.workspace, "default", "notes.md", "workspace soul")
    (r.workspace / "default" / "SOUL.md").symlink_to("notes.md")
    (r.workspace / "default" / "USER.md").symlink_to(secret)
    put(r.user, "default", "USER.md", "user user")
    (r.user / "default" / "AGENTS.md").symlink_to(secret)
    persona = load_persona("default", r, 1000)
    assert [(f.name, f.source, f.content) for f in persona.files] == [
        ("SOUL.md", "workspace", "workspace soul"),
        ("AGENTS.md", "user", "PRIVATE KEY"),
    ]
    assert persona.notices == (f"{r.workspace / 'default' / 'USER.md'} is a link to a file "
                               "outside the workspace's persona folder; it was skipped.",)
