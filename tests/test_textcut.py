"""The one head-and-tail cut of long texts (tool observations, traces, verifier views)."""

from __future__ import annotations

from omnilab.textcut import cut_text


def test_short_texts_stay_whole() -> None:
    assert cut_text("abc", 3) == "abc"


def test_long_texts_keep_head_and_tail_and_say_how_much_went() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(100))
    out = cut_text(text, 30)
    head, marker, tail = out.split("\n")
    assert (head, tail) == (text[:20], text[-10:])  # two thirds head by default
    assert marker == "[... 70 characters cut ...]"
    even = cut_text(text, 30, head_share=0.5, what="characters of the trace")
    assert even.split("\n") == [text[:15], "[... 70 characters of the trace cut ...]", text[-15:]]
