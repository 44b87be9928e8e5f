"""Where a response's envelope tags are: the final-answer tags (`tags_backward`, any spelling the extractor
accepts, newest first) and the reasoning blocks `strip_think` removes. `evalcore.extract` reads the answer
between them. Every walk is bounded (MAX_TAG_STEPS): a tag soup must not become a long Python loop."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

MAX_TAG_STEPS = 1024  # tags walked per text


def fold(text: str) -> str:
    """Lowercase copy index-aligned with `text`. U+0130 is the only code point whose lowercase is
    two characters long, so replacing it first keeps every index valid."""
    if "\u0130" in text:
        text = text.replace("\u0130", "I")
    return text.lower()


# Literal-first patterns (the keyword, then lookbehinds for "<" or "</"): the regex engine jumps
# between occurrences of the keyword instead of trying a match at every "<" of a garbage text.
_THINK_OPEN = re.compile(r"think(?:(?<=<think)|(?<=<\sthink))(?:ing)?\s?>")
_THINK_CLOSE = re.compile(r"think(?:(?<=</think)|(?<=<\s/think)|(?<=</\sthink)|(?<=<\s/\sthink))(?:ing)?\s?>")
# A closing tag in the reversed text ("</think>" reads ">kniht/<"): the first hit is the last tag.
_THINK_CLOSE_REV = re.compile(r"kniht(?:(?<=>kniht)|(?<=>\skniht)|(?<=>gnikniht)|(?<=>\sgnikniht))\s?/\s?<")
_THINK_TAIL = re.compile(r"(?:ing)?\s?>")


def strip_think_folded(text: str, low: str) -> tuple[str, str]:
    """`strip_think` on `text` and, identically, on its folded copy `low`."""
    if "think" not in low:
        return text, low
    scan = _answer_thinks_masked(low)
    kept = _think_free_ranges(scan)
    return "".join(text[a:b] for a, b in kept), "".join(low[a:b] for a, b in kept)


def _answer_thinks_masked(low: str) -> str:
    """`low` with the word "think" hidden inside final-answer blocks (from an opening tag to the closing tag
    that follows it first), index-aligned: a model does not start reasoning inside its answer, so a think tag
    there is the answer's text (a key "<THINK>", a quoted tag), not a reasoning block that cuts the answer."""
    if "answer" not in low:
        return low
    spans: list[tuple[int, int]] = []
    closing_at: int | None = None
    for tag in tags_backward(low):  # newest first: each closing tag with the opening tag just before it
        if tag.closing:
            closing_at = tag.start
        elif closing_at is not None:
            spans.append((tag.end, closing_at))
            closing_at = None
    if not spans:
        return low
    parts, pos = [], 0
    for a, b in reversed(spans):
        parts += [low[pos:a], low[a:b].replace("think", "th_nk")]
        pos = b
    return "".join(parts) + low[pos:]


def _think_free_ranges(low: str) -> list[tuple[int, int]]:
    """The (start, end) ranges of `low` outside reasoning blocks (see `strip_think`)."""
    n = len(low)
    keep: list[tuple[int, int]] = []
    pos = 0
    rev: str | None = None
    for _ in range(MAX_TAG_STEPS):
        opening = _THINK_OPEN.search(low, pos)
        stop = low.rfind("<", max(0, opening.start() - 2), opening.start()) if opening else n
        if _THINK_CLOSE.search(low, pos, stop) is not None:
            # A closing tag with no opening tag: its <think> was in the prompt (Qwen/DeepSeek chat
            # templates), so everything before the last such tag is reasoning.
            rev = low[::-1] if rev is None else rev
            last = _THINK_CLOSE_REV.search(rev, n - stop, n - pos)
            if last is not None:
                tail = _THINK_TAIL.match(low, n - last.start())
                keep.clear()
                pos = tail.end() if tail else n - last.start()
        if opening is None:
            keep.append((pos, n))
            break
        keep.append((pos, stop))
        closing = _THINK_CLOSE.search(low, opening.end())
        if closing is None:
            break  # truncated while thinking: nothing after the tag is an answer
        pos = closing.end()
    # (Thousands of think blocks is adversarial: whatever is left is treated as reasoning.)
    return keep


def strip_think(text: str) -> str:
    """Drop reasoning blocks: `<think>...</think>` (also `<thinking>`, any case) anywhere; an unclosed
    `<think>` (output truncated while thinking: nothing after it is an answer); and everything before
    a `</think>` that has no opening tag, which is what Qwen/DeepSeek chat templates produce when the
    `<think>` was part of the prompt. Opening tags nested inside a block are part of the block."""
    return strip_think_folded(text, fold(text))[0]


# Searched in the reversed folded text, so the first hit is the last tag and the keyword comes first
# (fast literal search). "rewsna" is "answer" reversed; the lookbehinds check the ">" (or "&gt;")
# that follows "answer" in the original text.
_GT_BEHIND = "|".join(
    f"(?<={gt}{ws}rewsna)" for gt in (">", ";tg&") for ws in ("", r"\s", r"\s\s", r"\s\s\s")
)
# The lookahead and the one-character lookbehind reject the common non-tag "answer" cheaply.
_FA_TAG_REV = re.compile(
    r"rewsna(?=[\s_-]{0,3}lanif)(?<=[>&\s]rewsna)(?:"
    + _GT_BEHIND
    + r")[\s_-]{0,3}lanif\s{0,3}(/?)\s{0,3}(<|;tl&)"
)
_FA_TAG_TAIL = re.compile(r"\s{0,3}(?:>|&gt;)")


@dataclass(frozen=True)
class Tag:
    start: int
    end: int
    closing: bool
    escaped: bool


def tags_backward(low: str) -> Iterator[Tag]:
    if "answer" not in low:
        return
    rev = low[::-1]
    n = len(low)
    pos = 0
    for _ in range(MAX_TAG_STEPS):
        m = _FA_TAG_REV.search(rev, pos)
        if m is None:
            return
        tail = _FA_TAG_TAIL.match(low, n - m.start())
        end = tail.end() if tail else n - m.start()
        yield Tag(start=n - m.end(), end=end, closing=m.group(1) == "/", escaped=m.group(2) != "<")
        pos = m.end()
