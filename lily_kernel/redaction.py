"""Secrets out of everything Lily shows or writes: which values are secret, and hiding them.

One rule for every place that needs it: provider faults, the event log, and the
environment a skill's script runs in (which gets none of these variables).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["is_secret_name", "redact", "redact_value", "secret_values"]

# Variables whose values are credentials: the word anywhere in the name
# (OPENAI_API_KEY, OPENAI_API_KEY_2, AZURE_AD_TOKEN, DB_PASSWORD_FILE, ...).
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
# Key-shaped strings, for keys the environment does not know (e.g. echoed by a proxy).
_KEY_SHAPED = re.compile(r"\b(sk|pk|rk|ak)-[A-Za-z0-9_\-]{8,}")
# Credentials inside URLs (an api_base like https://user:pass@host/?api-key=...).
_URL_USERINFO = re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@")
_URL_KEY_PARAM = re.compile(
    r"((?:api[-_]?key|key|token|access_token|sig|signature|code)=)[^&\s'\"]+", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """True for a variable whose value Lily treats as a credential."""
    return bool(_SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of variables that look like credentials, longest first."""
    environ = os.environ if environ is None else environ
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= 6}
    return sorted(values, key=lambda v: (-len(v), v))  # longest first, then stable


def redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    text = _URL_USERINFO.sub("[redacted]@", text)
    text = _URL_KEY_PARAM.sub(r"\1[redacted]", text)
    return _KEY_SHAPED.sub("[redacted]", text)


def redact_value(value: Any, secrets: list[str]) -> Any:
    """`value` with every string inside it (keys included) redacted."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {redact_value(k, secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v, secrets) for v in value]
    return value
