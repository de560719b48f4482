"""Keep credentials out of everything Lily shows or logs.

What is hidden, as `[redacted]`: the value of every environment variable whose name
looks like a credential, and any run of `MIN_FRAGMENT` or more consecutive characters
of such a value (a provider may echo a key without its prefix, or only its tail);
key-shaped strings (`sk-…`, an AWS secret key alone) the environment does not know;
credentials inside URLs;
PEM private-key blocks, whole; JWTs; and the value (not the key) of a credential
assignment, `password=…`, `"client_secret": "…"`, `aws_secret_access_key = …` (the
rule for what counts as one is at `_ASSIGNED`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MIN_FRAGMENT", "Redactor", "is_secret_name", "redact", "secret_values"]

MIN_FRAGMENT = 8
_MASK = "[redacted]"
# Variables whose values are credentials: the word anywhere in the name
# (OPENAI_API_KEY, OPENAI_API_KEY_2, AZURE_AD_TOKEN, DB_PASSWORD_FILE, MYSQL_PWD,
# GITHUB_PAT, SENTRY_DSN, SLACK_WEBHOOK_URL, API_AUTH, ...); not PWD, PATH or AUTHOR.
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH(?!OR)|_PWD(?:_|$)|(?:^|_)PAT(?:_|$)"
    r"|DSN|WEBHOOK|COOKIE|PRIVATE", re.IGNORECASE)
# Key-shaped strings, for keys the environment does not know (echoed by a proxy, read
# from a file): sk-/pk-/rk-/ak- keys, GitHub's, Slack's, AWS access key ids, GitLab's,
# Hugging Face's, Google's.
_KEY_SHAPED = re.compile(
    r"\b(?:(?:sk|pk|rk|ak)-[A-Za-z0-9_\-]{8,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}"
    r"|glpat-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{30,}|AIza[0-9A-Za-z_\-]{35})")
# An AWS secret access key with no label: 40 characters of base64, alone. A git hash
# is 40 too (hex, one case): a secret must mix upper and lower case and digits, and
# look random (`_random_enough`), so an identifier or a word run is left as it is.
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# Credentials inside URLs (an api_base like https://user:pass@host/?api-key=...).
_URL_USERINFO = re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@")
# Only as a URL's query parameter (after ? or &): `sorted(x, key=len)` is code, not a key.
_URL_KEY_PARAM = re.compile(
    r"([?&](?:api[-_]?key|key|token|access_token|sig|signature|code)=)[^&\s'\"\\]+",
    re.IGNORECASE)
# A private key in PEM (PKCS#1/#8, OpenSSH, EC, ENCRYPTED, PGP's armour), masked from
# its BEGIN line through its END line. The body stops at the first "-----" (linear
# however many BEGIN lines there are); a block cut short before its END (an output cap)
# is masked through the base64 and `Name: value` header lines that follow, as written
# or JSON-escaped (`\n`).
_PRIVATE_KEY_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
_PEM_PRIVATE_KEY = re.compile(
    r"-----BEGIN " + _PRIVATE_KEY_LABEL
    + r"(?:[^-]*(?:-(?!----)[^-]*)*-----END " + _PRIVATE_KEY_LABEL
    + r"|(?:(?:\r?\n|(?:\\r)?\\n)+[ \t]*(?:[A-Za-z0-9+/=]+|[A-Za-z-]+:[^\r\n\\]*))*)")
# A JWT (JWS, or the first three parts of a JWE): base64url parts, the first a JSON
# header (`{"` is `eyJ`); the signature is empty for `alg: none`. Only at the start of
# a run of base64url characters: tried at every `eyJ` of a long run, it is quadratic.
_JWT = re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"
                  r"(?:\.[A-Za-z0-9_-]+){0,2}")
# A credential assignment: a key ending in one of these words, in any case and
# spelling (`password`, `DB_PASSWORD`, `dbPassword`, `client_secret`, `SECRET_KEY`,
# `aws_secret_access_key`, `SecretAccessKey`, `api_key`, `access_token`; not
# `password_field`, `tokenizer` or `max_tokens`: the word must end the key), quoted or
# not (JSON's `"password":`), then `=` (not `==`) or `:`, then its value: quoted (with
# an optional r/b/u prefix), to the closing quote or, cut short, the end of the line;
# or bare, up to a space, quote, `,` `;` or a closing bracket. A quoted value does not
# start with a space or `)` `,` `;` `+` `.` `%` `]` `}`: that quote closes a string
# the key was in (`getpass("Password: ")`, `"Password: " + name`), it opens no value.
# What is masked of the value is decided in `_mask_assigned`. The lookahead on the
# words' first letters lets the engine skip to candidates (2x faster on prose).
_ASSIGNED = re.compile(
    r"(?=[PSAR])(?P<key>(?:pass(?:word|wd|phrase)|pwd|secret(?:[_-]?access)?(?:[_-]?key)?"
    r"|api[_-]?key|(?:access|auth|refresh)[_-]?token)(?:\\?[\"'])?[ \t]*(?::|=(?!=))[ \t]*)"
    r"(?:(?P<prefix>[rbu]{0,2})(?P<quote>\\?[\"'`])(?![\s),;+.%\]}])(?P<quoted>[^\r\n]*?)"
    r"(?P<close>(?<!\\)(?P=quote)|(?=[\r\n]|\Z))"
    r"|(?P<bare>" + re.escape(_MASK) + r"|[^\s'\"`,;)\]}]+))",  # (masked already: whole)
    re.IGNORECASE)
# A bare value that is code or a reference, not a credential: a call or subscript
# (`getpass()`, `os.environ[`), a dotted name (`form.password`), a shell variable
# (`$DB_PASSWORD`, `${DB_PASSWORD}`), a path (`PWD=/home/me`, `secret: ~/.secrets/db`).
_NOT_A_CREDENTIAL = re.compile(
    r"[A-Za-z_][\w.]*[(\[].*|[A-Za-z_]+(?:\.[A-Za-z_]+)+|\$\{?\w+\}?|(?:[/~]|\.\.?/).*")
# A bare value is a credential when it has 6+ characters and either a digit or a
# symbol (`hunter2`, `p@ss!word`; `_` does not count, so an identifier like
# `default_password` is a reference) or 20+ characters (a letters-only random key).
_BARE_MIN, _BARE_LONG = 6, 20
_WORD = re.compile(r"[A-Za-z_]*")


# What a match of each pattern must contain. `_KEY_SHAPED` (case-sensitive): one of its
# alternatives' literals. `_BASE64_40`: 40 base64 characters in a row, found in the
# text's UTF-8 bytes with every base64 byte mapped to 1 and any other to 0 (a non-ASCII
# character's bytes are all >= 0x80: never base64).
_KEY_LITERALS = ("k-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox",
                 "AKIA", "glpat-", "hf_", "AIza")
_BASE64_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")
_BASE64_MAP = bytes(49 if b in _BASE64_BYTES else 48 for b in range(256))
_BASE64_RUN = b"1" * 40
# Case-blind patterns: in ASCII text (where ignoring case is lower-casing), the words a
# key must hold (`_ASSIGNED`: pass, pwd, secret, api, token) and a parameter's name
# with its `=` (`_URL_KEY_PARAM`). Text with other characters runs them always (Unicode
# case folding matches more than ASCII letters: U+017F, the long s, is an `s`).
_ASSIGNED_WORDS = ("pass", "pwd", "secret", "api", "token")
_URL_KEY_WORDS = ("key=", "token=", "sig=", "signature=", "code=")


def _case_blind_could_match(text: str) -> tuple[bool, bool]:
    """Whether `_URL_KEY_PARAM` and `_ASSIGNED` could match `text` (True when unsure)."""
    if not text.isascii():
        return True, True
    lower = text.lower()
    return (any(word in lower for word in _URL_KEY_WORDS),
            any(word in lower for word in _ASSIGNED_WORDS))


def _mask_assigned(match: re.Match[str]) -> str:
    """The assignment with its value masked when it is a credential: any non-empty
    quoted literal; a bare value by the rule above. Words (`None`, `required`,
    `Tokenizer`) and code are left as they are."""
    key, quoted, bare = match.group("key", "quoted", "bare")
    if quoted is not None:
        if not quoted:
            return match.group()
        prefix, quote, close = match.group("prefix", "quote", "close")
        return f"{key}{prefix}{quote}{_MASK}{close}"
    if (len(bare) < _BARE_MIN or _NOT_A_CREDENTIAL.fullmatch(bare)
            or (_WORD.fullmatch(bare) and len(bare) < _BARE_LONG)):
        return match.group()
    return key + _MASK


def _random_enough(match: re.Match[str]) -> str:
    """A 40-character run masked when it mixes cases and digits and has few repeats
    (25+ distinct characters of 40: random base64 has 30 or so, a CamelCase name 20)."""
    run = match.group()
    mixed = (any(c.isupper() for c in run) and any(c.islower() for c in run)
             and any(c.isdigit() for c in run))
    return _MASK if mixed and len(set(run)) >= 25 else run


def is_secret_name(name: str) -> bool:
    """True for a variable whose value Lily treats as a credential (a skill script's
    environment gets none of them)."""
    return bool(_SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of variables that look like credentials, longest first."""
    environ = os.environ if environ is None else environ
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= 6}
    return sorted(values, key=lambda v: (-len(v), v))  # longest first, then stable


def _has_fragments(value: str) -> bool:
    """Whether any 8-character run of `value` is secret. Not for a path or URL held
    in a credential-named variable (GOOGLE_APPLICATION_CREDENTIALS=/home/...,
    TOKEN_URL=https://...): their runs ("/home/us", "https://") are everyday text.
    Such a value is still hidden whole."""
    return (len(value) >= MIN_FRAGMENT and not value.startswith(("/", "~", "."))
            and "://" not in value and not any(c.isspace() for c in value))


class Redactor:
    """Applies the rules above to text (and to the strings inside event data)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = sorted(set(secrets), key=lambda v: (-len(v), v))
        runs = sorted({
            value[i : i + MIN_FRAGMENT]
            for value in self.secrets if _has_fragments(value)
            for i in range(len(value) - MIN_FRAGMENT + 1)
        })
        # A lookahead finds every start position, overlapping ones included, in C.
        self._runs = re.compile(
            "(?=(?:" + "|".join(map(re.escape, runs)) + "))") if runs else None

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, _MASK)
        if self._runs is not None:
            text = self._mask_runs(self._runs, text)
        # Each pattern below starts with a literal or a short word: one pass each, in C.
        # The patterns the engine cannot skip through quickly (a lookbehind, a case-blind
        # word, alternatives) run only where what any match must contain is there
        # (the literals below): a 1,000-skill `/skills` table took ~70 ms here, now ~5 ms.
        text = _PEM_PRIVATE_KEY.sub(_MASK, text)
        if "eyJ" in text:  # (a look-behind after it: the engine tries every position)
            text = _JWT.sub(_MASK, text)
        url_key, assigned = _case_blind_could_match(text)
        if "://" in text:
            text = _URL_USERINFO.sub(_MASK + "@", text)
        if url_key:
            text = _URL_KEY_PARAM.sub(r"\1" + _MASK, text)
        if assigned:
            text = _ASSIGNED.sub(_mask_assigned, text)
        if _BASE64_RUN in text.encode("utf-8", "surrogatepass").translate(_BASE64_MAP):
            text = _BASE64_40.sub(_random_enough, text)
        if any(literal in text for literal in _KEY_LITERALS):
            text = _KEY_SHAPED.sub(_MASK, text)
        return text

    @staticmethod
    def _mask_runs(runs: re.Pattern[str], text: str) -> str:
        """Every stretch of text covered by 8-character runs of a secret, masked once."""
        spans: list[list[int]] = []
        for match in runs.finditer(text):
            start = match.start()
            if spans and start <= spans[-1][1]:
                spans[-1][1] = start + MIN_FRAGMENT
            else:
                spans.append([start, start + MIN_FRAGMENT])
        if not spans:
            return text
        parts, last = [], 0
        for start, end in spans:
            parts += [text[last:start], _MASK]
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def data(self, value: Any) -> Any:
        """`value` with every string inside it (keys included) redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def redact(text: str, secrets: list[str]) -> str:
    return Redactor(secrets)(text)
