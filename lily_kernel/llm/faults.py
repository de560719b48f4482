"""Translate provider exceptions into ModelError with a kind and advice; redact secrets."""

from __future__ import annotations

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.redaction import redact, secret_values

__all__ = ["TRANSIENT_KINDS", "model_error", "redact", "secret_values"]

TRANSIENT_KINDS = frozenset({ModelFault.RATE_LIMIT, ModelFault.TIMEOUT, ModelFault.CONNECTION,
                             ModelFault.SERVER})
_ADVICE: dict[str, str] = {
    "auth": "authentication failed: the provider rejected the API key (or refused it "
            "this model). Check the provider's key variable (e.g. OPENAI_API_KEY) and "
            "restart the kernel.",
    "rate_limit": "rate limit: the provider refused more requests for now. Wait a "
                  "moment and run the cell again.",
    "timeout": "timeout: the provider did not answer in time (request_timeout). Run "
               "the cell again, or raise request_timeout in lily.yaml.",
    "connection": "connection failed: the provider could not be reached. Check "
                  "LILY_API_BASE / api_base and the network.",
    "server": "server error: the provider failed to answer. Run the cell again later.",
    "bad_response": "bad response: the provider sent a malformed or incomplete answer. "
                    "Run the cell again.",
    "context_window": "context window exceeded: the conversation is too long for this "
                      "model. Restart the kernel for a fresh conversation, or use a "
                      "model with a larger context.",
    "not_found": "model not found: the provider does not know this model. Check "
                 "LILY_MODEL / model in lily.yaml.",
    "bad_request": "bad request: the provider refused the request.",
}


def model_error(kind: ModelFault, detail: str, secrets: list[str], attempts: int = 1,
                by_provider: bool = True) -> ModelError:
    """A ModelError whose message names the fault and what to do; never a secret.
    `detail` is the provider's text, or Lily's own account when not `by_provider`."""
    tried = f" (after {attempts} attempts)" if attempts > 1 else ""
    detail = redact(" ".join(detail.split()), secrets)
    if len(detail) > 300:
        detail = detail[:300] + "..."
    message = f"model call failed{tried}: {_ADVICE[kind]}"
    if detail:
        message += f" {'Provider said' if by_provider else 'What happened'}: {detail}"
    return ModelError(kind, message)
