"""What the person sees: values rendered once, escaped for each front end."""

from __future__ import annotations

from lily_kernel.display import Notice, Reply, Told, bundle


def test_a_notices_code_spans_are_code_and_the_rest_is_escaped() -> None:
    """Backticks showed literally in the trust notice and the embedded-model notice."""
    data = bundle(Notice("run `lily trust /x<y>` or `/trust`; <b>not bold</b>"))
    assert data["text/html"] == (
        '<div class="lily-notice mathjax_ignore"><em>run <code>lily trust /x&lt;y&gt;</code> or '
        "<code>/trust</code>; &lt;b&gt;not bold&lt;/b&gt;</em></div>")
    assert data["text/plain"] == "run `lily trust /x<y>` or `/trust`; <b>not bold</b>"


def test_a_replys_plain_text_obeys_no_escape_code_and_keeps_its_letters() -> None:
    """A model's answer printed by `jupyter console`: an escape code would act on the
    terminal; a direction mark reorders the line. Combining marks and joiners are
    written languages' and emoji's, and stay."""
    letters = "\u0928\u092e\u0938\u094d\u0924\u0947 e\u0301 \U0001f468\u200d\U0001f469"
    text = f"ok\x1b]0;pwned\x07 \u202eevil\u202c\nnamaste {letters}"
    data = bundle(Reply(text, footer="model · 3 tokens"))
    plain = data["text/plain"]
    assert "\x1b" not in plain and "\u202e" not in plain and "\x07" not in plain
    assert "\\x1b]0;pwned\\x07" in plain and "\\u202eevil" in plain
    assert letters in plain
    assert letters in data["text/html"]  # rendered by Lily (display/markup.py), letters kept


def test_told_says_each_subject_once() -> None:
    told = Told()
    assert told.first("model") and not told.first("model") and told.first(("persona", 1))
