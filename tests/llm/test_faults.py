"""Redaction of credentials in provider error text (pure)."""

from __future__ import annotations

from lily_kernel.errors import ModelFault
from lily_kernel.llm.faults import model_error, redact, secret_values


def test_secret_values_come_from_credential_like_names() -> None:
    env = {"OPENAI_API_KEY": "value-one-123", "OPENAI_API_KEY_2": "value-two-456",
           "AZURE_AD_TOKEN": "value-three-789", "HOME": "/root", "SHORT_KEY": "abc"}
    assert secret_values(env) == ["value-three-789", "value-one-123", "value-two-456"]  # by length, then value


def test_redaction_covers_values_key_shapes_and_urls() -> None:
    text = ("bad key AIzaSECRET123 and sk-proj-abcdefghij at "
            "https://alice:hunter2@proxy.internal/v1?api-key=abc123&x=1")
    out = redact(text, ["AIzaSECRET123"])
    assert out == ("bad key [redacted] and [redacted] at "
                   "https://[redacted]@proxy.internal/v1?api-key=[redacted]&x=1")


def test_model_error_never_contains_the_secret() -> None:
    error = model_error(ModelFault.AUTH, "Incorrect API key provided: AIzaSECRET123.", ["AIzaSECRET123"])
    assert error.kind == "auth" and "AIzaSECRET123" not in str(error)
    assert str(error).endswith("Provider said: Incorrect API key provided: [redacted].")


def test_code_with_key_arguments_is_not_redacted() -> None:
    from lily_kernel.redaction import redact

    code = "sorted(items, key=len); exit(code=0); f(token=t)\\nnext"
    assert redact(code, []) == code
    assert redact("see https://h/v1?x=1&token=abc123", []) == "see https://h/v1?x=1&token=[redacted]"
