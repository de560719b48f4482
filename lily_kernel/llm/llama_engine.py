"""llama.cpp as the embedded model uses it: the one module that touches llama-cpp-python.

It drives llama-cpp-python's batch, context and sampler objects directly (`_batch`,
`_ctx`, `_internals.LlamaSampler`: the private surface its own `eval` and `generate`
use), pinned to one version (pyproject.toml's `local` extra); an upgrade must re-run
tests/llm/test_local_model.py, which compares the answers with `create_completion`.
Every method runs on the model's one worker thread (llm/local_model.py).

- The prompt is rendered by the file's own chat template and read in batches on top of
  what the model already holds (llama.cpp's KV cache): a follow-up turn only reads what
  is new. When the oldest turns were left out to fit the window, their tokens are
  dropped from the cache and the turns after them moved up (llama.cpp's context shift),
  so those are not read again either. The system context's state is also saved under
  the digest of its tokens, so a new kernel with the same persona and catalog starts
  from it instead of reading it.
- An answer is sampled with llama.cpp's own sampler chain, token by token.
- A declaration is chosen among its answers by their tokens (llm/choice.py).
"""

from __future__ import annotations

import codecs
import ctypes
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import TemplateError

from lily_kernel.errors import ModelError, ModelFault
from lily_kernel.llm import choice

__all__ = ["EVAL_BATCH", "SAVED_PREFIX_MIN", "LlamaEngine", "Sampling"]

EVAL_BATCH = 128  # tokens per prompt batch: the stop button waits at most one (~0.45 s here)
SAVED_PREFIX_MIN = 256  # shorter system contexts are cheaper to read than to restore
SAVED_PREFIXES_KEPT = 4
SHIFT_MIN = 32  # held tokens worth moving up rather than reading again (a turn's header)
TOP_K, PENALTY_WINDOW, REPEAT_PENALTY, SEED = 40, 64, 1.1, 0  # llama-cpp-python's sampling
# llama.cpp's DRY sampler ("don't repeat yourself"), with its usual settings: a token that
# would extend a run already seen (3 tokens or more, in the last DRY_WINDOW tokens of the
# prompt and the answer, as llama.cpp's server counts them) is penalised, more the longer
# the run. Without it the small model repeats whole lines, and copies its last answer.
DRY_MULTIPLIER, DRY_BASE, DRY_ALLOWED, DRY_BREAKERS = 0.8, 1.75, 2, ["\n", ":", "\"", "*"]
DRY_WINDOW = 1024  # tokens it looks back over (-1, "the context", reads as 0 here)
_CHATML = (  # for a GGUF without a chat template
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

Check = Callable[[], None]  # raises when the person pressed stop
Sampling = tuple[int, str]  # (tokens generated, finish reason)


def _fold(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same conversation in the shape strict templates accept: a system message
    only first, and roles that alternate (later system text and consecutive messages of
    one role are joined into one message)."""
    folded: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "system" and index > 0:
            role = "user"
        if folded and folded[-1]["role"] == role:
            folded[-1] = {"role": role,
                          "content": f"{folded[-1]['content']}\n\n{message['content']}"}
        else:
            folded.append({"role": role, "content": message["content"]})
    return folded


class LlamaEngine:
    """One GGUF file loaded by llama.cpp, and what the embedded model does with it."""

    def __init__(self, path: Path, window: int | None, threads: int, default_window: int,
                 prefix_cache: Path | None) -> None:
        """Load the file (blocking). Raises ValueError, RuntimeError, OSError or
        TemplateError when llama.cpp cannot (llm/local_model.py reports them)."""
        self.path = path
        self.threads = threads
        self.prefix_cache = prefix_cache
        llama = self._open(window or default_window)
        trained = llama._model.n_ctx_train()
        if window is None and 0 < trained < llama.n_ctx():
            llama = self._open(trained)  # never more than it was trained for
        self.llama = llama
        self._format = self._formatter()
        self.last_evaluated = 0  # prompt tokens the last request had to read (not held)
        self._batch_start = 0  # where the batch read last began (for `keep`)
        self.dry = True  # the DRY sampler in the chain (off: llama-cpp-python's own chain)

    def _open(self, window: int) -> Any:
        import llama_cpp

        return llama_cpp.Llama(
            model_path=str(self.path), n_ctx=window, n_batch=512, n_threads=self.threads,
            n_threads_batch=self.threads, seed=0, use_mmap=True, flash_attn=True,
            verbose=False)

    def _formatter(self) -> Any:
        """The chat template from the file's own metadata (ChatML when it has none)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        llama = self.llama
        model = llama._model
        eos, bos = llama.token_eos(), llama.token_bos()
        return Jinja2ChatFormatter(
            template=llama.metadata.get("tokenizer.chat_template") or _CHATML,
            eos_token=model.token_get_text(eos) if eos != -1 else "",
            bos_token=model.token_get_text(bos) if bos != -1 else "",
        )

    @property
    def window(self) -> int:
        return int(self.llama.n_ctx())

    # --- tokens ----------------------------------------------------------------------

    def tokens(self, messages: list[dict[str, Any]], generation: bool = True) -> list[int]:
        """The prompt's tokens, rendered by the model's own chat template. A template that
        refuses the conversation's shape (many allow a system message only first, and
        no two user messages in a row) gets it folded into one it accepts."""
        self._format.add_generation_prompt = generation
        try:
            text = self._format(messages=messages).prompt
        except (ValueError, TemplateError):
            try:
                text = self._format(messages=_fold(messages)).prompt
            except (ValueError, TemplateError) as exc:
                raise ModelError(
                    ModelFault.LOCAL_MODEL,
                    f"the local model's chat template cannot render this "
                    f"conversation: {exc}.") from exc
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def text_tokens(self, text: str) -> list[int]:
        """Plain text's tokens (no special tokens), to follow a rendered prompt."""
        return list(self.llama.tokenize(text.encode("utf-8"), add_bos=False)) if text else []

    def prefix_length(self, messages: list[dict[str, Any]], tokens: list[int]) -> int:
        """How many leading tokens are the system context (0 if the template does not
        render it as a prefix of the whole prompt)."""
        if not messages or messages[0].get("role") != "system":
            return 0
        head = self.tokens(messages[:1], generation=False)
        return len(head) if tokens[: len(head)] == head else 0

    # --- reading -----------------------------------------------------------------------

    def read(self, tokens: list[int], outputs: list[int]) -> list[Callable[[int], float]]:
        """Read `tokens` after what the model holds, in one batch, keeping its logits at
        the batch positions `outputs` (Llama.eval keeps only the last position's)."""
        import llama_cpp

        llama = self.llama
        llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
        llama._batch.set_batch(batch=tokens, n_past=llama.n_tokens, logits_all=False)
        for index in outputs:
            llama._batch.batch.logits[index] = True
        llama._ctx.decode(llama._batch)
        llama.input_ids[llama.n_tokens: llama.n_tokens + len(tokens)] = tokens
        self._batch_start = llama.n_tokens
        llama.n_tokens += len(tokens)
        logits = [llama_cpp.llama_get_logits_ith(llama.ctx, index) for index in outputs]
        return [row.__getitem__ for row in logits]

    def keep(self, count: int) -> None:
        """Keep only the first `count` tokens of the batch just read."""
        self.llama.n_tokens = self._batch_start + count

    def evaluate(self, tokens: list[int], prefix: int, check: Check,
                 reading: Callable[[int], None] | None = None) -> None:
        """Bring the model's state close to the prompt's end, reading only what it does
        not hold yet, in stoppable batches. The last batch (at most EVAL_BATCH tokens, at
        least one) is left to the caller, which reads it with what follows: one decode
        call fewer per request."""
        llama = self.llama
        held = llama.longest_token_prefix(llama._input_ids.tolist(), tokens[:-1])
        saving = prefix >= SAVED_PREFIX_MIN and self.prefix_cache is not None
        restored = False
        if held < prefix and saving:
            restored = self._restore_prefix(tokens[:prefix])
            # A failed restore may have emptied the cache: start from what is still held.
            held = prefix if restored else min(held, llama.n_tokens)
        elif held >= prefix:
            held = self._close_gap(tokens, held)
        llama.n_tokens = held  # eval() drops whatever the cache holds past this point
        self.last_evaluated = len(tokens) - held  # what this request reads anew
        if reading is not None:
            reading(self.last_evaluated)
        position = held
        while (len(tokens) - position > EVAL_BATCH
               or (saving and not restored and position < prefix)):
            check()
            end = min(len(tokens) - 1, position + EVAL_BATCH)
            if position < prefix < end:
                end = prefix  # stop at the boundary, so the system context can be saved
            llama.eval(tokens[position:end])
            position = end
            if position == prefix and saving and not restored:
                self._save_prefix(tokens[:prefix])

    def _close_gap(self, tokens: list[int], held: int) -> int:
        """Where the prompt goes on, after the `held` tokens it shares with the cache, with
        tokens the cache holds further on (the history's oldest turns were left out),
        drop the tokens between and move the rest up: they are not read again. How many
        leading tokens of the prompt the cache then holds.

        The moved tokens keep what they were computed with (they had read the turns now
        left out), as in llama.cpp's own server; the same turns in the same order always
        give the same state."""
        import llama_cpp
        import numpy as np

        llama = self.llama
        cached = llama.input_ids[held + 1: llama.n_tokens]
        wanted = np.asarray(tokens[held: len(tokens) - 1], dtype=cached.dtype)
        if (len(wanted) < SHIFT_MIN or len(cached) < SHIFT_MIN
                or not llama_cpp.llama_memory_can_shift(llama._ctx.memory)):
            return held
        probe = wanted[:SHIFT_MIN]
        for offset in np.flatnonzero(cached[: len(cached) - SHIFT_MIN + 1] == probe[0]):
            if np.array_equal(cached[offset: offset + SHIFT_MIN], probe):
                break
        else:
            return held
        start = held + 1 + int(offset)
        ahead = cached[offset:]
        count = min(len(ahead), len(wanted))
        differ = np.flatnonzero(ahead[:count] != wanted[:count])
        matched = int(differ[0]) if len(differ) else count
        context = llama._ctx
        context.kv_cache_seq_rm(-1, start + matched, -1)
        context.kv_cache_seq_rm(-1, held, start)
        context.kv_cache_seq_shift(0, start, start + matched, held - start)
        llama.input_ids[held: held + matched] = llama.input_ids[start: start + matched].copy()
        llama.n_tokens = held + matched
        return held + matched

    def unread(self, tokens: list[int]) -> list[int]:
        """What `evaluate` left of `tokens` for the first batch after it."""
        return tokens[self.llama.n_tokens:]

    # --- answering -----------------------------------------------------------------------

    def choose(self, tokens: list[int], answers: list[str], check: Check) -> tuple[int, int]:
        """The answer the model finds likeliest after the prompt (llm/choice.py), and its
        length in tokens."""
        end = self.llama.token_eos()  # after an answer's last token: it ends there
        spelled = [[*self.text_tokens(answer), end] for answer in answers]
        if len(tokens) + max(map(len, spelled)) > self.window:
            raise ModelError(ModelFault.CONTEXT_WINDOW, "the request leaves no room in the "
                             "local model's context window for its answer.")
        chosen = choice.choose(spelled, self.unread(tokens), self, check)
        return chosen, len(spelled[chosen]) - 1

    def sample(self, tokens: list[int], limit: int, schema: dict[str, Any] | None,
               temperature: float, emit: Callable[[str], None], check: Check) -> Sampling:
        """Generate the answer after the prompt, token by token, streaming its text;
        `check` runs before each token. The tokens generated and the finish reason."""
        import llama_cpp

        llama = self.llama
        sampler = self._sampler(schema, temperature, tokens[-DRY_WINDOW:])
        decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")  # as llama-cpp-python
        answered, finish = 0, "length"
        unread = self.unread(tokens)  # what evaluate left to this first step
        try:
            while answered < limit:
                check()
                self.read(unread, [len(unread) - 1])
                token = sampler.sample(llama._ctx, -1)
                if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
                    finish = "stop"
                    break
                answered += 1
                unread = [token]
                if text := decoder.decode(llama.detokenize([token])):
                    emit(text)
        finally:
            sampler.close()
        if rest := decoder.decode(b"", final=True):
            emit(rest)
        return answered, finish

    def _sampler(self, schema: dict[str, Any] | None, temperature: float,
                 context: list[int]) -> Any:
        """llama.cpp's sampler chain, as llama-cpp-python's completion builds it: repeat
        penalty over the last 64 answer tokens, top-k 40, top-p 0.95, min-p 0.05,
        temperature, a seeded draw (or under a JSON schema, llama.cpp's grammar after
        the penalty). Without a grammar, the 104 likeliest tokens are taken first: the
        penalty only lowers logits, of at most 64 tokens, so the 40 likeliest after it
        are among those 104, and it is not applied to all 49,152 at every step (~3%
        of decode time, measured). DRY, after the penalty, lowers logits too: a token it
        pushes out of those 104 is one it penalised, which is its purpose; it is given
        the prompt's last tokens (`context`) first, so an answer does not copy the
        conversation (the repeat penalty sees the answer only, as before)."""
        import llama_cpp
        from llama_cpp._internals import LlamaSampler
        from llama_cpp.llama_grammar import LlamaGrammar

        sampler = LlamaSampler()  # type: ignore[no-untyped-call]
        if schema is None:
            sampler.add_top_k(TOP_K + PENALTY_WINDOW)
        sampler.add_penalties(
            n_vocab=self.llama.n_vocab(), penalty_last_n=PENALTY_WINDOW,
            penalty_repeat=REPEAT_PENALTY, penalty_freq=0.0, penalty_present=0.0)
        if self.dry:
            sampler.add_dry(self.llama._model, DRY_MULTIPLIER, DRY_BASE, DRY_ALLOWED,
                            DRY_WINDOW, DRY_BREAKERS)
            dry = llama_cpp.llama_sampler_chain_get(
                sampler.sampler, llama_cpp.llama_sampler_chain_n(sampler.sampler) - 1)
            for token in context:
                llama_cpp.llama_sampler_accept(dry, token)
        if schema is not None:
            grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            sampler.add_grammar(self.llama._model, grammar)
        if temperature <= 0:
            sampler.add_greedy()  # type: ignore[no-untyped-call]
            return sampler
        sampler.add_top_k(TOP_K)
        sampler.add_top_p(0.95)
        sampler.add_min_p(0.05)
        sampler.add_temp(temperature)
        sampler.add_dist(SEED)
        return sampler

    # --- the system context, kept across kernels ------------------------------------

    def _prefix_file(self, tokens: list[int]) -> Path:
        import llama_cpp

        assert self.prefix_cache is not None
        stat = self.path.stat()
        digest = hashlib.sha256(
            f"{self.path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|"
            f"{llama_cpp.__version__}|".encode()
            + b"".join(t.to_bytes(4, "little", signed=True) for t in tokens)
        ).hexdigest()
        return self.prefix_cache / f"{digest}.kv"

    def _save_prefix(self, tokens: list[int]) -> None:
        import llama_cpp

        path = self._prefix_file(tokens)
        try:
            self.prefix_cache.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
            partial = path.with_suffix(f".{os.getpid()}.partial")  # kernels save side by side
            array = (llama_cpp.llama_token * len(tokens))(*tokens)
            if llama_cpp.llama_state_seq_save_file(
                    self.llama.ctx, str(partial).encode(), 0, array, len(tokens)):
                partial.replace(path)
            saved = sorted(self.prefix_cache.glob("*.kv"),  # type: ignore[union-attr]
                           key=lambda p: p.stat().st_mtime, reverse=True)
            for old in saved[SAVED_PREFIXES_KEPT:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def _restore_prefix(self, tokens: list[int]) -> bool:
        import llama_cpp

        path = self._prefix_file(tokens)
        if not path.is_file():
            return False
        llama = self.llama
        out = (llama_cpp.llama_token * len(tokens))()
        count = ctypes.c_size_t(0)
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        loaded = llama_cpp.llama_state_seq_load_file(
            llama.ctx, str(path).encode(), 0, out, len(tokens), ctypes.byref(count))
        if not loaded or count.value != len(tokens) or list(out) != tokens:
            llama._ctx.kv_cache_seq_rm(-1, 0, -1)
            llama.n_tokens = 0
            path.unlink(missing_ok=True)  # unusable: do not try it again in every kernel
            return False
        llama.input_ids[: len(tokens)] = tokens
        llama.n_tokens = len(tokens)
        os.utime(path)  # most recently used: kept longest
        return True
