"""Redaction: whole secrets, any 8-character run of one, key shapes, URL credentials."""

from __future__ import annotations

from pathlib import Path

import pytest

from lily_kernel.events import Command, EventLog
from lily_kernel.redaction import Redactor, is_secret_name, redact, secret_values

KEY = "AIzaTEST-do-not-leak-0987654321"


def test_any_run_of_eight_characters_is_hidden_shorter_ones_are_not() -> None:
    redact = Redactor([KEY])
    assert redact(f"got {KEY[4:]} back") == "got [redacted] back"  # without its prefix
    assert redact(f"tail {KEY[-8:]}.") == "tail [redacted]."
    assert redact(f"tail {KEY[-7:]}.") == f"tail {KEY[-7:]}."  # 7 characters: not a run
    assert redact(f"{KEY[:10]} and {KEY[12:22]}") == "[redacted] and [redacted]"


def test_paths_and_urls_in_credential_variables_are_hidden_whole_only() -> None:
    redact = Redactor(secret_values({"GOOGLE_APPLICATION_CREDENTIALS": "/home/me/creds.json",
                                     "AUTH_TOKEN_URL": "https://auth.example.com/token"}))
    assert redact("/home/me/notes and https://auth.example.com/other") == (
        "/home/me/notes and https://auth.example.com/other")
    assert redact("at /home/me/creds.json") == "at [redacted]"


def test_structured_data_is_redacted_everywhere_inside() -> None:
    redact = Redactor([KEY])
    data = {"argument": f"x {KEY[3:15]}", "list": [KEY[-9:], 3], KEY[:9]: None}
    assert redact.data(data) == {"argument": "x [redacted]", "list": ["[redacted]", 3],
                                 "[redacted]": None}


def test_the_event_log_is_redacted_before_it_is_written(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "s.jsonl", "s", redact=Redactor([KEY]).data)
    log.emit(Command(name="skill", argument=f"echo {KEY[5:20]}", ok=True))
    log.close()
    text = (tmp_path / "s.jsonl").read_text()
    assert "[redacted]" in text and KEY[5:13] not in text


@pytest.mark.parametrize("name", ["MYSQL_PWD", "GITHUB_PAT", "SENTRY_DSN", "SLACK_WEBHOOK_URL",
                                  "API_AUTH", "DB_PASSWD", "SESSION_COOKIE", "SSH_PRIVATE",
                                  "GPG_PASSPHRASE", "OPENAI_API_KEY"])
def test_credentials_under_other_names_are_secret(name: str) -> None:
    assert is_secret_name(name)
    redact = Redactor(secret_values({name: "s3cr3t-value-42"}))
    assert redact("it is s3cr3t-value-42 here") == "it is [redacted] here"


@pytest.mark.parametrize("name", ["PWD", "OLDPWD", "PATH", "GIT_AUTHOR_NAME", "HOME", "LANG",
                                  "USER", "PYTHONPATH", "TERM"])
def test_everyday_variables_are_not(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize("key", [
    "ghp_" + "a1B2" * 9, "github_pat_" + "11ABCDEFG0" * 3, "xoxb-1234567890-abcdefghij",
    "AKIA" + "ABCDEFGH12345678", "glpat-" + "x1y2z3" * 4, "hf_" + "AbCd" * 9,
    "AIza" + "Sy" + "b" * 33,
])
def test_key_shaped_strings_the_environment_does_not_know(key: str) -> None:
    assert redact(f"found {key} in .env.local", []) == "found [redacted] in .env.local"
