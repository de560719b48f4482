"""Redaction: whole secrets, any 8-character run of one, key shapes, URL credentials,
private-key blocks, JWTs and credential assignments (and what is not one)."""

from __future__ import annotations

import time
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


def test_an_aws_secret_key_alone_is_hidden_and_hashes_and_names_are_not() -> None:
    """The secret half of an AWS key has no prefix: 40 base64 characters, mixed."""
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert redact(f"aws: {secret}\n", []) == "aws: [redacted]\n"
    assert redact(f'"{secret}"', []) == '"[redacted]"'
    for kept in ("commit 3f5e1c0a9b7d2e4f6a8c0b1d3e5f7a9c1b3d5e7f",  # a git hash
                 "ThisIsAVeryLongCamelCaseIdentifierName12", "a" * 40,
                 f"{secret}X",  # 41 characters: not this key's shape
                 "/home/user/projects/MyProject2/src/Main3/"):
        assert redact(kept, []) == kept


PEM_BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
            "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n")


@pytest.mark.parametrize("label", ["PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY",
                                   "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
                                   "DSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"])
def test_a_private_key_block_is_hidden_whole(label: str) -> None:
    block = f"-----BEGIN {label}-----\n{PEM_BODY}-----END {label}-----"
    assert redact(f"key:\n{block}\nnext line", []) == "key:\n[redacted]\nnext line"
    escaped = block.replace("\n", "\\n")  # in a JSON string (a service account's file)
    assert redact(f'{{"private_key": "{escaped}\\n", "id": 1}}', []) == (
        '{"private_key": "[redacted]\\n", "id": 1}')


def test_an_encrypted_or_cut_short_private_key_is_hidden_too() -> None:
    encrypted = ("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
                 "DEK-Info: AES-128-CBC,3F17F5316E2BAC89E2E4B7DBDA3A9C58\n\n" + PEM_BODY
                 + "-----END RSA PRIVATE KEY-----")
    assert redact(encrypted + "\ndone", []) == "[redacted]\ndone"
    cut = "-----BEGIN EC PRIVATE KEY-----\n" + PEM_BODY + "[output cut at 10 KB]"
    assert redact(cut, []) == "[redacted]\n[output cut at 10 KB]"  # through the base64 lines
    certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
    assert redact(certificate, []) == certificate  # public: not a secret


JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6Ikpv"
       "aG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


def test_a_jwt_is_hidden() -> None:
    assert redact(f"Authorization: Bearer {JWT}\n", []) == "Authorization: Bearer [redacted]\n"
    unsigned = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9."  # alg: none
    assert redact(f"token {unsigned} ok", []) == "token [redacted] ok"
    assert redact("see eyJhbGc.eyJ or file.tar.gz", []) == "see eyJhbGc.eyJ or file.tar.gz"


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("line", "hidden"), [
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [redacted]"),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "AWS_SECRET_ACCESS_KEY=[redacted]"),
    (f'export AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"', 'export AWS_SECRET_ACCESS_KEY="[redacted]"'),
    (f'{{"aws_secret_access_key": "{AWS_SECRET}"}}', '{"aws_secret_access_key": "[redacted]"}'),
    (f'"SecretAccessKey": "{AWS_SECRET}",', '"SecretAccessKey": "[redacted]",'),
    ("Aws_Secret_Access_Key: " + "wJalrXUtnFEMIKbPxRfiCYEXAMPLEKEYabcdefgh",  # letters only
     "Aws_Secret_Access_Key: [redacted]"),
    ("password=hunter2", "password=[redacted]"),
    ("DB_PASSWORD=Tr0ub4dor&3", "DB_PASSWORD=[redacted]"),
    ("passwd: s3cret!!", "passwd: [redacted]"),
    ("Server=db;Uid=bob;Pwd=s3cr3tPass;", "Server=db;Uid=bob;Pwd=[redacted];"),
    ("secret=0123456789abcdef", "secret=[redacted]"),
    ("client_secret: GOCSPX-abcdefghijklmn", "client_secret: [redacted]"),
    ('{"password": "hunter", "user": "bob"}', '{"password": "[redacted]", "user": "bob"}'),
    ('{\\"password\\": \\"hunter2\\"}', '{\\"password\\": \\"[redacted]\\"}'),  # escaped JSON
    ("connect(user='bob', password=b'hunter2')", "connect(user='bob', password=b'[redacted]')"),
    ('"access_token": "ya29.a0AfH6SMBx"', '"access_token": "[redacted]"'),
    ('password = "cut short', 'password = "[redacted]'),
    ("password: correcthorsebatterystaple", "password: [redacted]"),  # 20+ letters
])
def test_a_credential_assignment_keeps_its_key_and_loses_its_value(line: str,
                                                                    hidden: str) -> None:
    assert redact(line, []) == hidden


@pytest.mark.parametrize("text", [
    "sorted(x, key=len)", "tokenizer = Tokenizer()", "password_field = form.password",
    "password = form.password", 'password = getpass.getpass("Password: ")',
    'password = os.environ["DB_PASSWORD"]', "password = default_password",
    "password: Optional[str] = None", 'password: str = ""', 'if password == "hunter2":',
    'print("password:", pw)', 'label = "Password: " + name', "password: ${DB_PASSWORD}",
    "PWD=/home/me/project", '"password": {"type": "string"}', "max_new_tokens=512",
    'eos_token = "</s>"', "Secret: everything's fine", "password: required",
    "pwd=ab12",  # under 6 characters
])
def test_code_words_and_references_are_not_credentials(text: str) -> None:
    assert redact(text, []) == text


def test_a_value_masked_by_an_earlier_rule_is_masked_once() -> None:
    assert redact("password=hunter2-is-in-the-env", ["hunter2-is-in-the-env"]) == (
        "password=[redacted]")
    assert redact("https://h/v1?api-key=abc123&x=1", []) == "https://h/v1?api-key=[redacted]&x=1"


def test_inputs_built_against_the_patterns_take_linear_time() -> None:
    """Each pattern is tried at few places (a JWT only where a base64url run starts):
    300 KB of `eyJ` took 34 s when it was tried at every one."""
    for text in ["eyJ" * 100_000, "-----BEGIN PRIVATE KEY-----" * 10_000,
                 'password: "' * 30_000, "pwd" * 100_000 + "=x1234567"]:
        start = time.perf_counter()
        redact(text, [])
        assert time.perf_counter() - start < 5.0  # ~0.1 s quiet; 5 s keeps under load


def _every_pattern(text: str) -> str:
    """The rules applied with no look first at whether a pattern could match."""
    from lily_kernel import redaction as r

    text = r._PEM_PRIVATE_KEY.sub(r._MASK, text)
    text = r._JWT.sub(r._MASK, text)
    text = r._URL_USERINFO.sub(r._MASK + "@", text)
    text = r._URL_KEY_PARAM.sub(r"\1" + r._MASK, text)
    text = r._ASSIGNED.sub(r._mask_assigned, text)
    text = r._BASE64_40.sub(r._random_enough, text)
    return r._KEY_SHAPED.sub(r._MASK, text)


SAMPLES = [
    "plain prose, nothing secret", "sk-abcdefgh12345678 and ghp_" + "a" * 24,
    "github_pat_" + "B" * 24, "xoxb-1234567890ab", "AKIA" + "Q" * 16, "glpat-" + "c" * 20,
    "hf_" + "d" * 30, "AIza" + "e" * 35, "key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY1 end",
    "café wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY1", "https://u:p4ss@host/x?Token=abc",
    "PASSWORD = 'hunter22'", "Api_Key: s3cr3t-value!", "ACCESS-TOKEN=abcdef123456",
    # Unicode case folding: U+017F (long s) is an `s`, U+212A (Kelvin) a `k` to a case-blind pattern.
    "pa\u017f\u017fword = 'hunter22'", "api_\u212aey=abcdef12", "https://h/?\u212aey=abc",
    "é password=hunter22", "<td>skill_00001</td><td>A generated skill, number 1.</td>" * 50,
    # 40 random-looking base64 characters (masked), after a lone surrogate too.
    "aws Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF end", "a\ud800 Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_looking_first_for_what_a_match_needs_changes_nothing(text: str) -> None:
    assert redact(text, []) == _every_pattern(text)


def test_the_slow_patterns_are_not_run_over_text_they_cannot_match(monkeypatch) -> None:
    """A 1,000-skill `/skills` table is ~400 KB in three renderings, redacted in every
    first cell: the case-blind, look-behind and alternative patterns took ~70 ms on it."""
    from lily_kernel import redaction as r

    class Refused:
        def __init__(self, pattern: object) -> None:
            self.pattern = pattern

        def sub(self, *_: object) -> str:
            raise AssertionError(f"{self.pattern} ran")

    for name in ("_JWT", "_URL_USERINFO", "_URL_KEY_PARAM", "_ASSIGNED", "_BASE64_40",
                 "_KEY_SHAPED"):
        monkeypatch.setattr(r, name, Refused(name))
    table = "| skill_00001 | Generated skill number 1. | workspace |\n" * 1000
    assert Redactor([])(table) == table
