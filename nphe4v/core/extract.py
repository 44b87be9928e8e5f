"""The one tolerant extractor for every task's model output. Never raises: failures are `ParseError`s.

We ask models for `<root><reasoning>...</reasoning><final_answer>{json}</final_answer></root>`
(`nphe4v.core.prompting`). Real outputs drift from that: reasoning models wrap their thoughts in
`<think>`, chat models add markdown and code fences, small VLMs print a bare dict, long outputs are
cut off mid-answer. The rules, in order:

1. `strip_think` removes reasoning blocks first, so a format example restated while thinking is never
   graded as the answer.
2. If a `<final_answer>` tag exists (any case, inner whitespace, `final answer`/`final-answer`, or
   HTML-escaped), the LAST complete block decides: models often restate the format example (a
   well-formed but placeholder answer) before answering, so the first block is the least reliable.
   Blank blocks are skipped. An unclosed `<final_answer>` after the last complete block (a truncated
   output) takes precedence only if a literal can be extracted from it: otherwise a prose mention such
   as "my answer is in the <final_answer> tags" would hide a real answer given earlier.
3. Inside a block: code fences are dropped, the whole body is tried as a literal, then balanced
   `{...}` (then `[...]`) spans in order of appearance, so trailing prose is ignored.
4. Only without any opening tag: the last fenced block, then the last balanced `{...}`, that parses as
   a mapping. A bare number or list in free prose is too likely to be something else to be graded.

Literals are JSON first, then Python (`ast.literal_eval`: single quotes, True/False/None, tuples),
then Python after rewriting JSON constants and bare identifier keys. `literal_eval` only ever sees
bounded input (`MAX_LITERAL_CHARS`, bracket depth `MAX_DEPTH`): its parser recurses, so deep or huge
input could exhaust the stack or the CPU. Values are returned as written: quoted numbers stay strings
and keys are not normalised, because the task parsers (`nphe4v.core.coerce`) own coercion.

Cost is bounded for hostile input: tag searches are literal-first regexes run in C over a lowercased
(and, for closing tags, reversed) copy, Python-level scanning only ever sees MAX_LITERAL_CHARS, and
the number of candidate spans and tag steps tried is capped, so a 1 MB input takes milliseconds.
"""

from __future__ import annotations

import ast
import bisect
import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nphe4v.core.coerce import as_yes_no, get_key
from nphe4v.core.schema import ParseError

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_CHARS",
    "MAX_LITERAL_CHARS",
    "extract_final_answer",
    "extract_final_answer_raw",
    "extract_yes_no",
    "strip_think",
]

MAX_INPUT_CHARS = 4_000_000  # no model emits this much; beyond it we refuse rather than scan
MAX_LITERAL_CHARS = 20_000  # final answers are a few hundred characters; this bounds literal_eval
MAX_DEPTH = 100  # bracket nesting accepted before parsing; real answers nest 2-3 deep
_MAX_CANDIDATES = 32  # balanced spans tried per region: each failed try costs up to three parses
_MAX_TAG_STEPS = 4096  # tags walked per text: a tag soup must not turn into a Python-speed loop
_MAX_BLOCKS = 8  # complete final_answer blocks kept, newest first
_MAX_FENCES = 16  # fence markers looked at, from the end

_PARSE_ERRORS = (ValueError, SyntaxError, TypeError, RecursionError, MemoryError, OverflowError)

# --- case folding -------------------------------------------------------------------------------


def _fold(text: str) -> str:
    """Lowercase copy index-aligned with `text`. U+0130 is the only code point whose lowercase is
    two characters long, so replacing it first keeps every index valid."""
    if "\u0130" in text:
        text = text.replace("\u0130", "I")
    return text.lower()


# --- <think> blocks -----------------------------------------------------------------------------

# Literal-first patterns (the keyword, then lookbehinds for "<" and "</"): the regex engine can then
# jump between occurrences of the keyword instead of trying a match at every "<" of a garbage text.
_THINK_OPEN = re.compile(r"think(?:(?<=<think)|(?<=<\sthink))(?:ing)?\s?>")
_THINK_CLOSE = re.compile(r"think(?:(?<=</think)|(?<=<\s/think)|(?<=</\sthink)|(?<=<\s/\sthink))(?:ing)?\s?>")


def _tag_start(low: str, keyword_start: int) -> int:
    return low.rfind("<", max(0, keyword_start - 4), keyword_start)


def strip_think(text: str) -> str:
    """Drop reasoning blocks: `<think>...</think>` (also `<thinking>`, any case) anywhere; an unclosed
    `<think>` (output truncated while thinking: nothing after it is an answer); and everything before
    a `</think>` that has no opening tag, which is what Qwen/DeepSeek chat templates produce when the
    `<think>` was part of the prompt. Nested opening tags inside a block are part of the block."""
    low = _fold(text)
    if "think" not in low:
        return text
    out: list[str] = []
    pos = 0
    opening: re.Match[str] | None = None
    for _ in range(_MAX_TAG_STEPS):
        if opening is None or opening.start() < pos:
            opening = _THINK_OPEN.search(low, pos)
        stop = _tag_start(low, opening.start()) if opening else len(text)
        orphan = _THINK_CLOSE.search(low, pos, stop)
        if orphan is not None:
            out.clear()
            pos = orphan.end()
            continue
        if opening is None:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:stop])
        closing = _THINK_CLOSE.search(low, opening.end())
        if closing is None:
            return "".join(out)
        pos = closing.end()
    # Thousands of think blocks is adversarial: what is left is treated as reasoning.
    return "".join(out)


# --- <final_answer> tags ------------------------------------------------------------------------

# Searched in the reversed lowercase text, so the first hit is the last tag and the keyword comes
# first (literal prefix search). "rewsna" is "answer" reversed; the lookbehinds check the ">" (or
# "&gt;") that follows "answer" in the original text.
_GT_BEHIND = "|".join(
    f"(?<={gt}{ws}rewsna)" for gt in (">", ";tg&") for ws in ("", r"\s", r"\s\s", r"\s\s\s")
)
_FA_TAG_REV = re.compile(r"rewsna(?:" + _GT_BEHIND + r")[\s_-]{0,3}lanif\s{0,3}(/?)\s{0,3}(<|;tl&)")
_FA_TAG_TAIL = re.compile(r"\s{0,3}(?:>|&gt;)")


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    closing: bool
    escaped: bool


def _tags_backward(text: str, low: str) -> Iterator[_Tag]:
    if "answer" not in low:
        return
    rev = low[::-1]
    n = len(low)
    pos = 0
    for _ in range(_MAX_TAG_STEPS):
        m = _FA_TAG_REV.search(rev, pos)
        if m is None:
            return
        tail = _FA_TAG_TAIL.match(low, n - m.start())
        end = tail.end() if tail else n - m.start()
        yield _Tag(start=n - m.end(), end=end, closing=m.group(1) == "/", escaped=m.group(2) != "<")
        pos = m.end()


@dataclass
class _Blocks:
    complete: list[tuple[str, bool]]  # (body, escaped), newest first
    tail: tuple[str, bool] | None  # body of an unclosed opening tag after the last complete block
    any_opening: bool


def _find_blocks(text: str) -> _Blocks:
    low = _fold(text)
    complete: list[tuple[str, bool]] = []
    tail: tuple[str, bool] | None = None
    any_opening = False
    pending: _Tag | None = None  # the closing tag nearest after the current position
    for tag in _tags_backward(text, low):
        if tag.closing:
            # Walking backwards, a second closing tag before any opening one makes the later one a
            # stray: the block ends at the first closing tag after its opening tag.
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


# --- bracket scanning ---------------------------------------------------------------------------

_SPECIAL = re.compile(r"""[{}\[\]()"']""")
# The rest of a one-line string literal after its opening quote (unrolled, so no backtracking); it
# stops at the closing quote, or at a newline: neither JSON nor Python strings span lines, so an
# unterminated quote was prose and must not swallow the rest of the text.
_STRING_REST = {
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|(?=\n)|$)'),
    "'": re.compile(r"[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|(?=\n)|$)"),
}
_OPENERS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = {"}": "{", "]": "[", ")": "("}
# A quote opens a string only after one of these: an apostrophe in prose ("it's") then never
# swallows the rest of the text, while every string position of a JSON/Python literal qualifies.
_STRING_AFTER = frozenset("{[(,:")
_SCAN_ABORT_DEPTH = 10 * MAX_DEPTH


@dataclass
class _Scan:
    spans: list[tuple[int, int, str, int]]  # (start, end, opener, nesting depth), balanced only
    strings: list[tuple[int, int]]  # string literals inside brackets, quotes included
    max_depth: int  # above _SCAN_ABORT_DEPTH the scan stopped early and `spans` is partial


def _prev_significant(s: str, i: int) -> str:
    j = i - 1
    while j >= 0 and s[j] in " \t\r\n":
        j -= 1
    return s[j] if j >= 0 else ""


def _scan(s: str) -> _Scan:
    """Balanced bracket spans of `s`, aware of quoted strings (a `}` inside a string does not close
    anything). Unmatched openers are left behind rather than poisoning later spans, so one stray `{`
    in prose does not hide the object after it. Linear in len(s)."""
    positions: list[int] = []  # the open brackets, innermost last
    openers: list[str] = []
    deepest: list[int] = []  # deepest absolute depth reached inside each open bracket
    open_count = {"{": 0, "[": 0, "(": 0}
    spans: list[tuple[int, int, str, int]] = []
    strings: list[tuple[int, int]] = []
    max_depth = 0
    search = _SPECIAL.search
    pos = 0
    while (m := search(s, pos)) is not None:
        i = m.start()
        c = s[i]
        pos = i + 1
        if c in _OPENERS:
            positions.append(i)
            openers.append(c)
            depth = len(positions)
            deepest.append(depth)
            open_count[c] += 1
            if depth > max_depth:
                max_depth = depth
                if depth > _SCAN_ABORT_DEPTH:
                    break  # nothing this deep gets parsed anyway; do not walk the rest
        elif c in _CLOSERS:
            want = _CLOSERS[c]
            if open_count[want] == 0:
                continue  # a closer with no opener of its kind: prose
            while positions:
                start = positions.pop()
                opener = openers.pop()
                inner = deepest.pop()
                open_count[opener] -= 1
                if deepest and inner > deepest[-1]:
                    deepest[-1] = inner
                if opener == want:
                    spans.append((start, i + 1, opener, inner - len(positions)))
                    break
        elif positions and _prev_significant(s, i) in _STRING_AFTER:
            rest = _STRING_REST[c].match(s, pos)
            if rest is not None:
                pos = rest.end()
                if s[pos - 1 : pos] == c and pos - 1 > i:
                    strings.append((i, pos))
    return _Scan(spans=spans, strings=strings, max_depth=max_depth)


def _outermost(spans: list[tuple[int, int, str, int]], openers: str) -> list[tuple[int, int, str, int]]:
    """Spans opened by one of `openers` and not nested in another such span, in order of appearance.
    They are disjoint, so parsing all of them costs at most one pass over the text."""
    out: list[tuple[int, int, str, int]] = []
    reach = -1
    for span in sorted((sp for sp in spans if sp[2] in openers), key=lambda sp: (sp[0], -sp[1])):
        if span[0] >= reach:
            out.append(span)
            reach = span[1]
    return out


# --- literals -----------------------------------------------------------------------------------

_JSON_CONSTANTS = {"true": "True", "false": "False", "null": "None"}
_CONSTANT_OR_KEY = re.compile(r"\b(true|false|null)\b|(?<=[{,])(\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*):")


def _pythonize(s: str, strings: list[tuple[int, int]]) -> str:
    """Rewrite outside string literals: JSON constants to Python ones, bare identifier keys
    (`{Path: ...}`) to quoted ones. Covers mixed outputs such as `{'feasible': true}`."""

    def fix(m: re.Match[str]) -> str:
        if m.group(1):
            return _JSON_CONSTANTS[m.group(1)]
        key = m.group(3)
        if key in ("True", "False", "None"):
            return m.group(0)
        return f'{m.group(2)}"{key}"{m.group(4)}:'

    parts: list[str] = []
    pos = 0
    for start, end in strings:
        parts.append(_CONSTANT_OR_KEY.sub(fix, s[pos:start]))
        parts.append(s[start:end])
        pos = end
    parts.append(_CONSTANT_OR_KEY.sub(fix, s[pos:]))
    return "".join(parts)


def _strings_within(strings: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The string literals of a sub-span, shifted to it: candidates reuse the enclosing scan."""
    out: list[tuple[int, int]] = []
    for a, b in strings[bisect.bisect_left(strings, (start, -1)) :]:
        if a >= end:
            break
        if b <= end:
            out.append((a - start, b - start))
    return out


_NOT_JSON = object()


def _json(s: str) -> Any:
    # The C decoder guards its own recursion (RecursionError) and caps integer digits (ValueError).
    try:
        return json.loads(s)
    except _PARSE_ERRORS:
        return _NOT_JSON


def _python(s: str, depth: int, strings: list[tuple[int, int]]) -> Any | ParseError:
    """`ast.literal_eval`, only on bounded input: `s` is at most MAX_LITERAL_CHARS long (callers cut)
    and its bracket depth is checked here, before the recursive parser sees it."""
    if depth > MAX_DEPTH:
        return ParseError(kind="too_large", detail=f"nesting deeper than {MAX_DEPTH}")
    try:
        return ast.literal_eval(s)
    except _PARSE_ERRORS:
        pass
    rewritten = _pythonize(s, strings)
    if rewritten != s:
        try:
            return ast.literal_eval(rewritten)
        except _PARSE_ERRORS:
            pass
    return ParseError(kind="bad_literal", detail=_preview(s))


def _parse_span(s: str, depth: int, strings: list[tuple[int, int]]) -> Any | ParseError:
    value = _json(s)
    return _python(s, depth, strings) if value is _NOT_JSON else value


def _preview(s: str) -> str:
    return s if len(s) <= 80 else s[:77] + "..."


_FENCE_LANGUAGE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*(?:\n|$)")


def _unfence(s: str) -> str:
    """Drop a code fence (or inline backticks) wrapped around the whole body. Only at the edges:
    backticks inside a string value must survive."""
    s = s.strip()
    if s.startswith("```"):
        lang = _FENCE_LANGUAGE.match(s)
        s = s[lang.end() if lang else 3 :].rstrip()
        if s.endswith("```"):
            s = s[:-3]
    elif len(s) >= 2 and s[0] == "`" and s[-1] == "`":
        s = s[1:-1]
    return s.strip()


def _parse_body(body: str, escaped: bool, allow_text: bool) -> Any | ParseError:
    """The literal inside one final_answer block. With `allow_text`, a body with no brackets that is
    not a literal (`<final_answer>YES</final_answer>`) comes back as the stripped string."""
    head = body[: MAX_LITERAL_CHARS * 2]  # the literal starts right after the tag
    if escaped:
        head = html.unescape(head)
    b = _unfence(head)
    if not b:
        return ParseError(kind="no_final_answer", detail="final_answer is empty")
    oversized = len(b) > MAX_LITERAL_CHARS
    if oversized:
        b = b[:MAX_LITERAL_CHARS]
    else:
        value = _json(b)
        if value is not _NOT_JSON:
            return value
    scan = _scan(b)
    if not oversized:
        whole = _python(b, scan.max_depth, scan.strings)
        if not isinstance(whole, ParseError) or whole.kind == "too_large":
            return whole
    # A mapping anywhere wins ("the path is [0, 1], so {...}"), else the first literal that parses.
    first_value: tuple[Any] | None = None
    first_error: ParseError | None = None
    for start, end, _, depth in _outermost(scan.spans, "{[")[:_MAX_CANDIDATES]:
        value = _parse_span(b[start:end], depth, _strings_within(scan.strings, start, end))
        if isinstance(value, dict):
            return value
        if isinstance(value, ParseError):
            first_error = first_error or value
        elif first_value is None:
            first_value = (value,)
    if first_value is not None:
        return first_value[0]
    if oversized:
        return ParseError(kind="too_large", detail=f"final_answer longer than {MAX_LITERAL_CHARS} chars")
    if first_error is not None:
        return first_error
    if scan.max_depth > MAX_DEPTH:
        return ParseError(kind="too_large", detail=f"nesting deeper than {MAX_DEPTH}")
    if "{" in b or "[" in b:
        return ParseError(kind="bad_literal", detail="unbalanced brackets: " + _preview(b))
    if allow_text:
        return b
    return ParseError(kind="bad_literal", detail=_preview(b))


# --- fallback without tags ----------------------------------------------------------------------


def _fenced_blocks_backward(text: str) -> Iterator[str]:
    """Contents of ``` fences, newest first; an unclosed last fence runs to the end of the text."""
    total = text.count("```")
    if total == 0:
        return
    marks: list[int] = []
    pos = len(text)
    for _ in range(min(total, _MAX_FENCES + 1)):
        pos = text.rfind("```", 0, pos)
        if pos < 0:
            break
        marks.append(pos)
    # marks[k] is fence number total-k (1-based); odd-numbered fences open a block
    for k, mark in enumerate(marks):
        number = total - k
        if number % 2 == 1:
            end = marks[k - 1] if k > 0 else len(text)
            yield "```" + text[mark + 3 : end] + "```"


def _last_mapping(text: str) -> dict[Any, Any] | None:
    budget = 2 * MAX_LITERAL_CHARS  # fenced code the model wrote before its answer costs time too
    for block in _fenced_blocks_backward(text):
        budget -= min(len(block), MAX_LITERAL_CHARS)
        if budget < 0:
            break
        value = _parse_body(block, escaped=False, allow_text=False)
        if isinstance(value, dict):
            return value
    window = text[-MAX_LITERAL_CHARS:]
    scan = _scan(window)
    for start, end, _, depth in _outermost(scan.spans, "{")[::-1][:_MAX_CANDIDATES]:
        value = _parse_span(window[start:end], depth, _strings_within(scan.strings, start, end))
        if isinstance(value, dict):
            return value
    return None


# --- public API ---------------------------------------------------------------------------------


def _raw_from_stripped(t: str) -> Any | ParseError:
    if not t.strip():
        return ParseError(kind="no_final_answer", detail="nothing outside the reasoning block")
    blocks = _find_blocks(t)
    if not blocks.any_opening:
        found = _last_mapping(t)
        if found is None:
            return ParseError(kind="no_final_answer", detail="no final_answer tag and no mapping")
        return found
    tail_result: ParseError | None = None
    if blocks.tail is not None:
        value = _parse_body(blocks.tail[0], blocks.tail[1], allow_text=False)
        if not isinstance(value, ParseError):
            return value
        tail_result = value
    for body, escaped in blocks.complete:
        if not _unfence(body):
            continue
        return _parse_body(body, escaped, allow_text=True)
    if tail_result is not None:
        return tail_result
    return ParseError(kind="no_final_answer", detail="final_answer is empty")


def _guarded_input(text: str | None) -> str | ParseError:
    if text is None or not text.strip():
        return ParseError(kind="empty", detail="no text")
    if len(text) > MAX_INPUT_CHARS:
        return ParseError(kind="too_large", detail=f"response longer than {MAX_INPUT_CHARS} chars")
    return strip_think(text.replace("\x00", ""))


def extract_final_answer_raw(text: str | None) -> Any | ParseError:
    """Whatever literal the final answer holds (mapping, list, number, string), or why there is none.
    For tasks that accept scalars; `extract_final_answer` is the mapping-only variant."""
    try:
        t = _guarded_input(text)
        if isinstance(t, ParseError):
            return t
        return _raw_from_stripped(t)
    except _PARSE_ERRORS as exc:  # a safety net: every path above is meant to be total
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")


def extract_final_answer(text: str | None) -> dict[str, Any] | ParseError:
    """The final-answer mapping of a model response, or a typed ParseError (never raises)."""
    value = extract_final_answer_raw(text)
    if isinstance(value, ParseError) or isinstance(value, dict):
        return value
    return ParseError(kind="not_a_mapping", detail=f"final answer is a {type(value).__name__}")


# --- recognition (YES/NO) -----------------------------------------------------------------------

# Markup a model may put before its first word: tags, markdown, quotes, bullets, emoji.
_LEADING_JUNK = re.compile(r"(?:<[^<>\n]{0,40}>|[^\w<])*")
_ANSWER_PREFIX = re.compile(
    r"(?:(?:final|short)\s+)?(?:answer|verdict|response|reply)\b[^\w\n]{0,12}", re.IGNORECASE
)
_WORD = re.compile(r"\w+")
_ANSWER_LINE = re.compile(
    r"^[^\w\n]{0,12}(?:final\s+)?answer\b[^\w\n]{0,12}(?:is\b[^\w\n]{0,6})?(yes|no)\b",
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
    (after reasoning blocks and markdown); then a final answer (`{"answer": "yes"}` or a bare YES);
    then the last "Answer: No" line."""
    try:
        t = _guarded_input(text)
        if isinstance(t, ParseError):
            return t
        verdict = _first_word_yes_no(t)
        if verdict is not None:
            return verdict
        raw = _raw_from_stripped(t)
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
    except _PARSE_ERRORS as exc:
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")
