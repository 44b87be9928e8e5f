"""The one tolerant extractor for every task's model output. Never raises: failures are `ParseError`s.

We ask models for `<root><reasoning>...</reasoning><final_answer>{json}</final_answer></root>`
(`evalcore.prompting`). Real outputs drift from that: reasoning models wrap their thoughts in
`<think>`, chat models add markdown and code fences, small VLMs print a bare dict, long outputs are
cut off mid-answer. The rules, in order:

1. `strip_think` removes reasoning blocks first, so a format example restated while thinking is never
   graded as the answer.
2. If a `<final_answer>` opening tag exists (any case, inner whitespace, `final answer`,
   `final-answer`, or HTML-escaped), the LAST complete block decides: models often restate the
   format example (well-formed, placeholder content) before answering, so earlier blocks are the
   least reliable. Blank blocks, and blocks that are a restated format example (placeholder leaves
   only, or equal to an example the caller passes), are skipped. An unclosed `<final_answer>` after the last complete
   block (a truncated output) takes precedence only if a literal can be extracted from it: otherwise
   a prose mention such as "my answer is in the <final_answer> tags" would hide the real answer.
3. Inside a block: code fences are dropped, the whole body is tried as a literal, then the balanced
   `{...}`/`[...]` spans in order of appearance (a mapping preferred), so trailing prose is ignored.
   A body that is plain text with no brackets comes back as that string (`extract_final_answer_raw`).
4. Only when no opening tag exists: the last fenced block, then the last balanced `{...}`, that
   parses as a mapping. A bare number or list in free prose is too likely to be something else.

The literal itself is read by `evalcore.literals` (JSON first, then Python-literal syntax, bounded).

Cost is bounded for hostile input: tag searches are literal-first regexes run in C over one folded
(lowercased, index-aligned) copy, reversed to find the last tags first; Python-level scanning only
ever sees MAX_LITERAL_CHARS; candidate spans and tag steps are capped. A 1 MB input takes tens of ms.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from evalcore.coerce import as_yes_no, get_key
from evalcore.envelope_tags import Tag, fold, strip_think, strip_think_folded, tags_backward
from evalcore.literals import (
    MAX_CANDIDATES,
    MAX_LITERAL_CHARS,
    PARSE_ERRORS,
    Budget,
    outermost,
    parse_body,
    parse_span,
    scan_brackets,
    strings_within,
    unfence,
)
from evalcore.schema import ParseError

__all__ = [
    "MAX_INPUT_CHARS",
    "extract_final_answer",
    "extract_final_answer_raw",
    "extract_final_answer_text",
    "extract_yes_no",
    "is_ellipsis",
    "is_format_example",
    "strip_think",
]

MAX_INPUT_CHARS = 4_000_000  # no model emits this much; beyond it we refuse rather than scan
_JSON = json.JSONDecoder()
_MAX_BLOCKS = 8  # complete final_answer blocks kept, newest first
_MAX_FENCES = 16  # fence markers looked at, from the end
_RESCANS = 8  # '{' positions re-scanned without the prose's string state


@dataclass
class _Blocks:
    complete: list[tuple[str, bool]]  # (body, escaped), newest first
    tail: tuple[str, bool] | None  # after an unclosed opening tag that follows every complete block
    any_opening: bool


def _find_blocks(text: str, low: str) -> _Blocks:
    complete: list[tuple[str, bool]] = []
    tail: tuple[str, bool] | None = None
    any_opening = False
    pending: Tag | None = None  # the nearest closing tag after the current position
    for tag in tags_backward(low):
        if tag.closing:
            # Walking backwards, a second closing tag before any opening one makes the later one a
            # stray: a block ends at the first closing tag after its opening tag.
            pending = tag
            continue
        any_opening = True
        if pending is not None:
            complete.append((text[tag.end : pending.start], tag.escaped))
            pending = None
            if len(complete) >= _MAX_BLOCKS:
                break
        elif tail is None and not complete:
            tail = (text[tag.end :], tag.escaped)
    return _Blocks(complete=complete, tail=tail, any_opening=any_opening)


def _fenced_blocks_backward(text: str) -> Iterator[str]:
    """``` fenced blocks (fences included), newest first; an unclosed last fence runs to the end."""
    total = text.count("```")
    marks: list[int] = []
    pos = len(text)
    for _ in range(min(total, _MAX_FENCES)):
        pos = text.rfind("```", 0, pos)
        if pos < 0:
            break
        marks.append(pos)
    for k, mark in enumerate(marks):
        if (total - k) % 2 == 1:  # marks[k] is fence number total-k; odd-numbered ones open a block
            end = marks[k - 1] if k > 0 else len(text)
            yield text[mark:end] + "```"


def _last_mapping(text: str, budget: Budget) -> dict[Any, Any] | None:
    chars = MAX_LITERAL_CHARS  # fenced code written before the answer must not cost unbounded time
    for block in _fenced_blocks_backward(text):
        if "}" not in block:
            continue
        chars -= min(len(block), MAX_LITERAL_CHARS)
        if chars < 0:
            break
        value = parse_body(block, escaped=False, allow_text=False, budget=budget)
        if isinstance(value, dict):
            return value
    window = text[-MAX_LITERAL_CHARS:]
    if "}" not in window:
        return None
    scan = scan_brackets(window)
    for start, end, _, depth in outermost(scan.spans, "{")[::-1][:MAX_CANDIDATES]:
        value = parse_span(window[start:end], depth, strings_within(scan.strings, start, end), budget)
        if isinstance(value, dict):
            return value
    # A stray quote in the prose before the object (`he said "so {...}`) makes the whole-window scan
    # read the object as part of a string; rescan from each of the last few '{' with a fresh state.
    pos = len(window)
    for _ in range(_RESCANS):
        pos = window.rfind("{", 0, pos)
        if pos < 0:
            break
        sub = window[pos:]
        sub_scan = scan_brackets(sub)
        for start, end, _, depth in outermost(sub_scan.spans, "{")[:1]:
            if start == 0:
                value = parse_span(sub[start:end], depth, strings_within(sub_scan.strings, start, end), budget)
                if isinstance(value, dict):
                    return value
    return None


def _prepare(text: str | None) -> tuple[str, str] | ParseError:
    if text is None or not text.strip():
        return ParseError(kind="empty", detail="no text")
    if len(text) > MAX_INPUT_CHARS:
        return ParseError(kind="too_large", detail=f"response longer than {MAX_INPUT_CHARS} chars")
    text = text.replace("\x00", "")
    return strip_think_folded(text, fold(text))


# A placeholder leaf of a prompt's format example (see prompting.ENVELOPE): "<VERTEX>", "...",
# "<START>->...-><END>": only <NAME> slots (no digits), ellipses, arrows, commas and spaces.
_PLACEHOLDER = re.compile(r"(?:\s|<[^<>\d]{1,40}>|\.\.\.|\u2026|->|,)+")
_PLACEHOLDER_MARK = re.compile(r"<[^<>\d]{1,40}>|\.\.\.|\u2026")
_MAX_EXAMPLE_LEAVES = 64


def is_ellipsis(value: Any) -> bool:
    """'...' or '\u2026' (spaces allowed): the "more entries" mark of a format example."""
    return isinstance(value, str) and value.strip() in ("...", "\u2026")


def is_format_example(value: Any) -> bool:
    """True for a restated format example: a non-empty mapping whose every leaf value is a placeholder
    string. The prompts' examples are built that way (`evalcore.prompting`), so a model that repeats
    the example after its answer does not replace its answer with the example."""
    if not isinstance(value, dict) or not value:
        return False
    stack: list[Any] = list(value.values())
    seen = 0
    while stack:
        leaf = stack.pop()
        seen += 1
        if seen > _MAX_EXAMPLE_LEAVES:
            return False
        if isinstance(leaf, dict):
            if not leaf:
                return False
            stack.extend(leaf.values())
        elif isinstance(leaf, list):
            if not leaf:
                return False
            stack.extend(leaf)
        elif not (isinstance(leaf, str) and _PLACEHOLDER.fullmatch(leaf) and _PLACEHOLDER_MARK.search(leaf)):
            return False
    return True


def _skipped(value: Any, ignore: tuple[Any, ...]) -> bool:
    return is_format_example(value) or any(value == example for example in ignore)


def _example_text(body: str, ignore: tuple[Any, ...]) -> bool:
    """A block whose text is one of the `ignore` strings (the prompt's example as written, whitespace aside):
    examples such as `{0:'COLOR_1', 1:'COLOR_2', ...}` are no literal, so they cannot be compared as values."""
    texts = [" ".join(x.split()) for x in ignore if isinstance(x, str)]
    return bool(texts) and " ".join(unfence(body[: MAX_LITERAL_CHARS * 2]).split()) in texts


def _raw(t: str, low: str, ignore: tuple[Any, ...] = ()) -> Any | ParseError:
    if not t.strip():
        return ParseError(kind="no_final_answer", detail="nothing outside the reasoning block")
    budget = Budget()
    blocks = _find_blocks(t, low)
    if not blocks.any_opening:
        found = _last_mapping(t, budget)
        if found is None or _skipped(found, ignore):
            return ParseError(kind="no_final_answer", detail="no final_answer tag and no mapping")
        return found
    tail_error: ParseError | None = None
    if blocks.tail is not None:
        value = parse_body(*blocks.tail, allow_text=False, budget=budget)
        if not isinstance(value, ParseError) and not _skipped(value, ignore):
            return value
        if isinstance(value, ParseError):
            tail_error = value
    example_seen = False
    for body, escaped in blocks.complete:
        if unfence(body[: MAX_LITERAL_CHARS * 2]):
            value = parse_body(body, escaped, allow_text=True, budget=budget)
            # A restated format example (often after the answer) is not the answer: look further back.
            if (_example_text(body, ignore) if isinstance(value, ParseError) else _skipped(value, ignore)):
                example_seen = True
                continue
            return value
    if example_seen:
        return ParseError(kind="no_final_answer", detail="only the prompt's format example was given")
    return tail_error or ParseError(kind="no_final_answer", detail="final_answer is empty")


def extract_final_answer_raw(text: str | None, ignore: tuple[Any, ...] = ()) -> Any | ParseError:
    """Whatever the final answer holds (mapping, list, number, string), or why there is none: for
    tasks that accept scalars. `extract_final_answer` is the mapping-only variant.

    Blocks that are a format example (`is_format_example`) or equal to one of `ignore` (e.g. the
    prompt's example, parsed) are skipped."""
    try:
        prepared = _prepare(text)
        return prepared if isinstance(prepared, ParseError) else _raw(*prepared, ignore=ignore)
    except PARSE_ERRORS as exc:  # a safety net: every path above is meant to be total
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")


def _block_text(t: str, low: str) -> str | None:
    """The text of the block `_raw` read when that block held no literal: the newest complete block whose
    body does not parse (earlier ones parsed or were blank), else the unclosed tail."""
    blocks = _find_blocks(t, low)
    budget = Budget()
    candidates = [*blocks.complete, *([blocks.tail] if blocks.tail is not None and not blocks.complete else [])]
    for body, escaped in candidates:
        head = body[: MAX_LITERAL_CHARS * 2]
        inner = unfence(html.unescape(head) if escaped else head)
        if not inner:
            continue
        value = parse_body(body, escaped, allow_text=True, budget=budget)
        if isinstance(value, ParseError) and value.kind == "bad_literal":
            return inner[:MAX_LITERAL_CHARS]
        if not isinstance(value, ParseError):
            return None
    return None


def extract_final_answer_text(text: str | None, ignore: tuple[Any, ...] = ()) -> Any | ParseError:
    """`extract_final_answer_raw`, except that a final_answer block holding no literal comes back as its
    text (fences dropped, at most MAX_LITERAL_CHARS) instead of a bad_literal error: for task parsers that
    read lists of unquoted names (GraphArena's `[JFK, LAX, ORD]`) or `Key: value` prose themselves."""
    try:
        prepared = _prepare(text)
        if isinstance(prepared, ParseError):
            return prepared
        value = _raw(*prepared, ignore=ignore)
        if isinstance(value, ParseError) and value.kind == "bad_literal":
            body = _block_text(*prepared)
            if body is not None:
                return body
        return value
    except PARSE_ERRORS as exc:  # a safety net: every path above is meant to be total
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")


def _json_block(t: str, low: str, ignore: tuple[Any, ...]) -> dict[str, Any] | None:
    """The newest final_answer block that is one JSON object followed by the closing tag (or the end): a tag
    written inside one of its strings (`{"Path": "</final_answer>"}`) is then text, not a block boundary,
    which the tag walk cannot know. Only asked where the tag walk found no mapping."""
    tags = list(tags_backward(low))  # walked once: the closing tags are looked up, not walked per candidate
    closing_at = {t2.start for t2 in tags if t2.closing}
    for tag in tags:
        if tag.closing or tag.escaped:
            continue
        start = len(t) - len(t[tag.end:].lstrip())
        if not t.startswith("{", start):
            continue
        try:
            value, end = _JSON.raw_decode(t[start: start + MAX_LITERAL_CHARS])
        except ValueError:
            continue
        rest = low[start + end:].lstrip()
        if isinstance(value, dict) and not is_format_example(value) and not _skipped(value, ignore) and \
                (not rest or len(low) - len(rest) in closing_at):
            return value
    return None


def extract_final_answer(text: str | None, ignore: tuple[Any, ...] = ()) -> dict[str, Any] | ParseError:
    """The final-answer mapping of a model response, or a typed ParseError (never raises)."""
    value = extract_final_answer_raw(text, ignore)
    if isinstance(value, dict):
        return value
    try:
        prepared = _prepare(text)
        found = None if isinstance(prepared, ParseError) else _json_block(*prepared, ignore=ignore)
    except PARSE_ERRORS:
        found = None
    if found is not None:
        return found
    if isinstance(value, ParseError):
        return value
    return ParseError(kind="not_a_mapping", detail=f"final answer is a {type(value).__name__}")


# Markup a model may put before its first word: tags, markdown, quotes, bullets, emoji.
_LEADING_JUNK = re.compile(r"(?:<[^<>\n]{0,40}>|[^\w<])*")
_ANSWER_PREFIX = re.compile(
    r"(?:(?:final|short)\s{1,3})?(?:answer|verdict|response|reply)\b[^\w\n]{0,12}", re.IGNORECASE
)
_WORD = re.compile(r"\w+")
# "Answer: No" at a line start or after a sentence end, as a last resort.
_ANSWER_LINE = re.compile(
    r"(?:^|(?<=[.!?]\s))[^\w\n]{0,12}(?:final\s{1,3})?answer\b[^\w\n]{0,12}(?:is\b[^\w\n]{0,6})?(yes|no)\b",
    re.IGNORECASE | re.MULTILINE,
)
_YES_NO_KEYS = ("answer", "final_answer", "yes_no", "same", "match", "matches", "verdict", "result")


def _skip_junk(s: str, pos: int) -> int:
    m = _LEADING_JUNK.match(s, pos)
    return m.end() if m else pos


def _first_word_yes_no(s: str) -> bool | None:
    head = s[:2000]
    pos = _skip_junk(head, 0)
    prefix = _ANSWER_PREFIX.match(head, pos)
    if prefix is not None:
        pos = _skip_junk(head, prefix.end())
    word = _WORD.match(head, pos)
    if word is None:
        return None
    # The whole word must be yes/no: "eyes", "yesterday", "not", "none" decide nothing.
    return {"yes": True, "no": False}.get(word.group().lower())


def _verdict(value: Any) -> bool | None:
    verdict = as_yes_no(value)
    if verdict is None and isinstance(value, str):
        verdict = _first_word_yes_no(value)
    return verdict


def extract_yes_no(text: str | None) -> bool | ParseError:
    """The recognition verdict. The prompt asks for YES or NO as the first word, so that decides
    (after reasoning blocks, tags and markdown); then a final answer (`{"answer": "yes"}` or a bare
    YES); then the last "Answer: No" line."""
    try:
        prepared = _prepare(text)
        if isinstance(prepared, ParseError):
            return prepared
        t, low = prepared
        verdict = _first_word_yes_no(t)
        if verdict is not None:
            return verdict
        raw = _raw(t, low)
        if isinstance(raw, dict):
            found, value = get_key(raw, *_YES_NO_KEYS)
            verdict = _verdict(value) if found else None
        elif not isinstance(raw, ParseError):
            verdict = _verdict(raw)
        if verdict is not None:
            return verdict
        lines = list(_ANSWER_LINE.finditer(t[-MAX_LITERAL_CHARS:]))
        if lines:
            return lines[-1].group(1).lower() == "yes"
        return ParseError(kind="no_final_answer", detail="no YES/NO answer found")
    except PARSE_ERRORS as exc:
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")
