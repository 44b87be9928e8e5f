"""The one tolerant extractor for every task's model output. Never raises: failures are `ParseError`s.

We ask models for `<root><reasoning>...</reasoning><final_answer>{json}</final_answer></root>`
(`nphe4v.core.prompting`). Real outputs drift from that: reasoning models wrap their thoughts in
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

A literal is JSON first (C decoder, recursion-guarded). Otherwise Python-literal syntax (single
quotes, True/False/None, tuples, trailing commas, bare identifier keys) is rewritten to JSON, which
turns tuples into lists. Only what still fails goes to `ast.literal_eval` (sets, tuple keys, `\\x`
escapes), and only on bounded input: at most MAX_LITERAL_CHARS, bracket depth at most MAX_DEPTH, and
_EVAL_BUDGET characters per call, because its parser recurses (stack) and costs ~3 us per character.
Values are returned as written: quoted numbers stay strings and keys are not normalised, because the
task parsers (`nphe4v.core.coerce`) own coercion.

Cost is bounded for hostile input: tag searches are literal-first regexes run in C over one folded
(lowercased, index-aligned) copy, reversed to find the last tags first; Python-level scanning only
ever sees MAX_LITERAL_CHARS; candidate spans and tag steps are capped. A 1 MB input takes tens of ms.
"""

from __future__ import annotations

import ast
import bisect
import html
import json
import re
import warnings
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
    "is_ellipsis",
    "is_format_example",
    "strip_think",
]

MAX_INPUT_CHARS = 4_000_000  # no model emits this much; beyond it we refuse rather than scan
MAX_LITERAL_CHARS = 20_000  # final answers are a few hundred characters
MAX_DEPTH = 100  # bracket nesting accepted; real answers nest 2-3 deep
_EVAL_BUDGET = 4_000  # characters per call that may reach ast.literal_eval (the slow, rare path)
_SCAN_ABORT_DEPTH = 10 * MAX_DEPTH  # a scan this deep is garbage: stop walking it
_MAX_CANDIDATES = 32  # balanced spans tried per region
_MAX_TAG_STEPS = 1024  # tags walked per text: a tag soup must not become a long Python loop
_MAX_BLOCKS = 8  # complete final_answer blocks kept, newest first
_MAX_FENCES = 16  # fence markers looked at, from the end
_RESCANS = 8  # '{' positions re-scanned without the prose's string state

_PARSE_ERRORS = (ValueError, SyntaxError, TypeError, RecursionError, MemoryError, OverflowError)


def _fold(text: str) -> str:
    """Lowercase copy index-aligned with `text`. U+0130 is the only code point whose lowercase is
    two characters long, so replacing it first keeps every index valid."""
    if "\u0130" in text:
        text = text.replace("\u0130", "I")
    return text.lower()


# --- <think> blocks -----------------------------------------------------------------------------

# Literal-first patterns (the keyword, then lookbehinds for "<" or "</"): the regex engine jumps
# between occurrences of the keyword instead of trying a match at every "<" of a garbage text.
_THINK_OPEN = re.compile(r"think(?:(?<=<think)|(?<=<\sthink))(?:ing)?\s?>")
_THINK_CLOSE = re.compile(r"think(?:(?<=</think)|(?<=<\s/think)|(?<=</\sthink)|(?<=<\s/\sthink))(?:ing)?\s?>")
# A closing tag in the reversed text ("</think>" reads ">kniht/<"): the first hit is the last tag.
_THINK_CLOSE_REV = re.compile(r"kniht(?:(?<=>kniht)|(?<=>\skniht)|(?<=>gnikniht)|(?<=>\sgnikniht))\s?/\s?<")
_THINK_TAIL = re.compile(r"(?:ing)?\s?>")


def _strip_think_folded(text: str, low: str) -> tuple[str, str]:
    """`strip_think` on `text` and, identically, on its folded copy `low`."""
    if "think" not in low:
        return text, low
    n = len(text)
    keep: list[tuple[int, int]] = []
    pos = 0
    rev: str | None = None
    for _ in range(_MAX_TAG_STEPS):
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
    return "".join(text[a:b] for a, b in keep), "".join(low[a:b] for a, b in keep)


def strip_think(text: str) -> str:
    """Drop reasoning blocks: `<think>...</think>` (also `<thinking>`, any case) anywhere; an unclosed
    `<think>` (output truncated while thinking: nothing after it is an answer); and everything before
    a `</think>` that has no opening tag, which is what Qwen/DeepSeek chat templates produce when the
    `<think>` was part of the prompt. Opening tags nested inside a block are part of the block."""
    return _strip_think_folded(text, _fold(text))[0]


# --- <final_answer> tags ------------------------------------------------------------------------

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
class _Tag:
    start: int
    end: int
    closing: bool
    escaped: bool


def _tags_backward(low: str) -> Iterator[_Tag]:
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
    tail: tuple[str, bool] | None  # after an unclosed opening tag that follows every complete block
    any_opening: bool


def _find_blocks(text: str, low: str) -> _Blocks:
    complete: list[tuple[str, bool]] = []
    tail: tuple[str, bool] | None = None
    any_opening = False
    pending: _Tag | None = None  # the nearest closing tag after the current position
    for tag in _tags_backward(low):
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


# --- bracket scanning ---------------------------------------------------------------------------

_SPECIAL = re.compile(r"""[{}\[\]()"']""")
# The rest of a one-line string literal after its opening quote (unrolled: no backtracking). It
# stops at the closing quote or before a newline: neither JSON nor Python strings span lines, so an
# unterminated quote was prose and must not swallow the rest of the text.
_STRING_REST = {
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*(?:"|(?=\n)|$)'),
    "'": re.compile(r"[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|(?=\n)|$)"),
}
_OPENERS = frozenset("{[(")
_CLOSERS = {"}": "{", "]": "[", ")": "("}
# A quote opens a string only after one of these (inside brackets): an apostrophe in prose ("it's")
# then never swallows the text after it, while every string position of a literal qualifies.
_STRING_AFTER = frozenset("{[(,:")

_Span = tuple[int, int, str, int]  # (start, end, opener, nesting depth within the span)


@dataclass
class _Scan:
    spans: list[_Span]  # balanced spans only
    strings: list[tuple[int, int]]  # string literals inside brackets, quotes included, in order
    max_depth: int  # above _SCAN_ABORT_DEPTH the scan stopped early and `spans` is partial


def _prev_significant(s: str, i: int) -> str:
    j = i - 1
    while j >= 0 and s[j] in " \t\r\n":
        j -= 1
    return s[j] if j >= 0 else ""


def _scan(s: str) -> _Scan:
    """Balanced bracket spans of `s`, aware of quoted strings (a `}` inside a string closes nothing).
    Unmatched openers are left behind rather than poisoning later spans, so one stray `{` in prose
    does not hide the object after it. Linear in len(s)."""
    positions: list[int] = []  # open brackets, innermost last
    openers: list[str] = []
    deepest: list[int] = []  # deepest absolute depth reached inside each open bracket
    open_count = {"{": 0, "[": 0, "(": 0}
    spans: list[_Span] = []
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
                    break
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
        elif (
            positions
            and (s[i - 1] if s[i - 1] not in " \t\r\n" else _prev_significant(s, i)) in _STRING_AFTER
        ):
            rest = _STRING_REST[c].match(s, pos)
            if rest is not None:
                pos = rest.end()
                if pos - 1 > i and s[pos - 1] == c:
                    strings.append((i, pos))
    return _Scan(spans=spans, strings=strings, max_depth=max_depth)


def _outermost(spans: list[_Span], kinds: str) -> list[_Span]:
    """Spans opened by one of `kinds` and not nested in another such span, in order of appearance.
    They are disjoint, so parsing all of them costs at most one pass over the text."""
    out: list[_Span] = []
    reach = -1
    for span in sorted(sp for sp in spans if sp[2] in kinds):  # starts are unique
        if span[0] >= reach:
            out.append(span)
            reach = span[1]
    return out


def _strings_within(strings: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The string literals of a sub-span, shifted to it: candidates reuse the enclosing scan."""
    out: list[tuple[int, int]] = []
    for a, b in strings[bisect.bisect_left(strings, (start, -1)) :]:
        if a >= end:
            break
        if b <= end:
            out.append((a - start, b - start))
    return out


# --- literals -----------------------------------------------------------------------------------


@dataclass
class _Budget:
    eval_chars: int = _EVAL_BUDGET


_NOT_JSON = object()


def _json(s: str) -> Any:
    # The C decoder guards its recursion (RecursionError) and caps integer digits (ValueError).
    # strict=False admits raw tabs inside strings, which models do emit.
    try:
        return json.loads(s, strict=False)
    except _PARSE_ERRORS:
        return _NOT_JSON


# Separate passes, each starting with a literal or a small character set, so the regex engine skips
# ahead in C; one combined pattern costs ~200 ns per character.
_PY_CONSTANT = re.compile(r"\b(?:True|False|None)\b")
_PY_CONSTANTS = {"True": "true", "False": "false", "None": "null"}
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)(\s*:)")
_TRAILING_COMMA = re.compile(r",(\s*)(?=[}\]])")
_PY_ESCAPE = re.compile(r'\\(.)|(")', re.DOTALL)


def _quote_key(m: re.Match[str]) -> str:
    key = m.group(2)
    if key in _PY_CONSTANTS or key in ("true", "false", "null"):
        return m.group(0)
    return f'{m.group(1)}"{key}"{m.group(3)}'


def _code_to_json(code: str) -> str:
    if "True" in code or "False" in code or "None" in code:
        code = _PY_CONSTANT.sub(lambda m: _PY_CONSTANTS[m.group()], code)
    code = code.replace("(", "[").replace(")", "]")
    if ":" in code:
        code = _BARE_KEY.sub(_quote_key, code)
    if "," in code:
        code = _TRAILING_COMMA.sub(r"\1", code)
    return code


def _escape_to_json(m: re.Match[str]) -> str:
    if m.group(2):
        return '\\"'  # a double quote inside a single-quoted string
    return "'" if m.group(1) == "'" else m.group(0)


def _to_json(s: str, strings: list[tuple[int, int]]) -> str:
    """Python-literal syntax rewritten to JSON: constants, tuple brackets, bare identifier keys and
    trailing commas outside string literals; quotes and `\\'` escapes of the literals themselves."""
    parts: list[str] = []
    pos = 0
    for start, end in strings:
        parts.append(_code_to_json(s[pos:start]))
        literal = s[start:end]
        if literal[0] == "'" or "\\'" in literal:
            literal = '"' + _PY_ESCAPE.sub(_escape_to_json, literal[1:-1]) + '"'
        parts.append(literal)
        pos = end
    parts.append(_code_to_json(s[pos:]))
    return "".join(parts)


def _python(s: str, depth: int, strings: list[tuple[int, int]], budget: _Budget) -> Any | ParseError:
    if depth > MAX_DEPTH:
        return ParseError(kind="too_large", detail=f"nesting deeper than {MAX_DEPTH}")
    value = _json(_to_json(s, strings))
    if value is not _NOT_JSON:
        return value
    if len(s) <= budget.eval_chars:
        budget.eval_chars -= len(s)
        try:
            with warnings.catch_warnings():
                # Invalid escapes ("\\m") warn; under -W error the warning would be raised instead.
                warnings.simplefilter("ignore")
                value = ast.literal_eval(s)
        except (*_PARSE_ERRORS, Warning):
            pass
        else:
            if _is_data(value):
                return value
    return ParseError(kind="bad_literal", detail=_preview(s))


_DATA_SCALARS = (str, int, float, type(None))  # bool is an int


def _is_data(value: Any) -> bool:
    """Python syntax no model means as data (`...` placeholders, b'', 1j) is not an answer. Depth is
    bounded by the MAX_DEPTH check that precedes literal_eval."""
    if isinstance(value, _DATA_SCALARS):
        return True
    if isinstance(value, dict):
        return all(_is_data(k) and _is_data(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return all(_is_data(v) for v in value)
    return False


def _parse_span(s: str, depth: int, strings: list[tuple[int, int]], budget: _Budget) -> Any | ParseError:
    value = _json(s)
    return _python(s, depth, strings, budget) if value is _NOT_JSON else value


def _preview(s: str) -> str:
    return s if len(s) <= 80 else s[:77] + "..."


# What a Python/JSON literal can start with; prose bodies ("YES", "0->1") skip the literal parsers.
_LITERAL_START = re.compile(r"""[{\[("'+\-.\d]|(?:True|False|None|true|false|null)\b""")
_FENCE_LANGUAGE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*(?:\n|$)")


def _unfence(s: str) -> str:
    """Drop a code fence (or inline backticks) around the whole body. Only at the edges: backticks
    inside a string value must survive."""
    s = s.strip()
    if s.startswith("```"):
        lang = _FENCE_LANGUAGE.match(s)
        s = s[lang.end() if lang else 3 :].rstrip()
        if s.endswith("```"):
            s = s[:-3]
    elif len(s) >= 2 and s[0] == "`" and s[-1] == "`":
        s = s[1:-1]
    return s.strip()


def _parse_body(body: str, escaped: bool, allow_text: bool, budget: _Budget) -> Any | ParseError:
    """The literal inside one final_answer block (or fence). With `allow_text`, a body with no
    brackets that is not a literal (`<final_answer>YES</final_answer>`) comes back as the string."""
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
    whole_error: ParseError | None = None
    if not oversized and _LITERAL_START.match(b):
        whole = _python(b, scan.max_depth, scan.strings, budget)
        if not isinstance(whole, ParseError):
            return whole
        whole_error = whole
    if not oversized and b[0] not in "{[" and ":" in b:
        braced = _json("{" + b + "}")  # JSON key-value pairs without their braces
        if isinstance(braced, dict):
            return braced
    # A mapping anywhere wins ("the path is [0, 1], so {...}"), else the first literal that parses.
    first_value: tuple[Any] | None = None
    first_error: ParseError | None = None
    for start, end, _, depth in _outermost(scan.spans, "{[")[:_MAX_CANDIDATES]:
        if start == 0 and end == len(b) and not oversized:
            continue  # the whole body, already tried
        value = _parse_span(b[start:end], depth, _strings_within(scan.strings, start, end), budget)
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
    if whole_error is not None and whole_error.kind == "too_large":
        return whole_error
    if first_error is not None:
        return first_error
    if "{" in b or "[" in b:
        return ParseError(kind="bad_literal", detail=_preview(b))
    if allow_text:
        return b
    return ParseError(kind="bad_literal", detail=_preview(b))


# --- fallback without tags ----------------------------------------------------------------------


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


def _last_mapping(text: str, budget: _Budget) -> dict[Any, Any] | None:
    chars = MAX_LITERAL_CHARS  # fenced code written before the answer must not cost unbounded time
    for block in _fenced_blocks_backward(text):
        if "}" not in block:
            continue
        chars -= min(len(block), MAX_LITERAL_CHARS)
        if chars < 0:
            break
        value = _parse_body(block, escaped=False, allow_text=False, budget=budget)
        if isinstance(value, dict):
            return value
    window = text[-MAX_LITERAL_CHARS:]
    if "}" not in window:
        return None
    scan = _scan(window)
    for start, end, _, depth in _outermost(scan.spans, "{")[::-1][:_MAX_CANDIDATES]:
        value = _parse_span(window[start:end], depth, _strings_within(scan.strings, start, end), budget)
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
        sub_scan = _scan(sub)
        for start, end, _, depth in _outermost(sub_scan.spans, "{")[:1]:
            if start == 0:
                value = _parse_span(sub[start:end], depth, _strings_within(sub_scan.strings, start, end), budget)
                if isinstance(value, dict):
                    return value
    return None


# --- public API ---------------------------------------------------------------------------------


def _prepare(text: str | None) -> tuple[str, str] | ParseError:
    if text is None or not text.strip():
        return ParseError(kind="empty", detail="no text")
    if len(text) > MAX_INPUT_CHARS:
        return ParseError(kind="too_large", detail=f"response longer than {MAX_INPUT_CHARS} chars")
    text = text.replace("\x00", "")
    return _strip_think_folded(text, _fold(text))


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
    string. The prompts' examples are built that way (`nphe4v.core.prompting`), so a model that repeats
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


def _raw(t: str, low: str, ignore: tuple[Any, ...] = ()) -> Any | ParseError:
    if not t.strip():
        return ParseError(kind="no_final_answer", detail="nothing outside the reasoning block")
    budget = _Budget()
    blocks = _find_blocks(t, low)
    if not blocks.any_opening:
        found = _last_mapping(t, budget)
        if found is None or _skipped(found, ignore):
            return ParseError(kind="no_final_answer", detail="no final_answer tag and no mapping")
        return found
    tail_error: ParseError | None = None
    if blocks.tail is not None:
        value = _parse_body(*blocks.tail, allow_text=False, budget=budget)
        if not isinstance(value, ParseError) and not _skipped(value, ignore):
            return value
        if isinstance(value, ParseError):
            tail_error = value
    example_seen = False
    for body, escaped in blocks.complete:
        if _unfence(body[: MAX_LITERAL_CHARS * 2]):
            value = _parse_body(body, escaped, allow_text=True, budget=budget)
            # A restated format example (often after the answer) is not the answer: look further back.
            if not isinstance(value, ParseError) and _skipped(value, ignore):
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
    except _PARSE_ERRORS as exc:  # a safety net: every path above is meant to be total
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")


def extract_final_answer(text: str | None, ignore: tuple[Any, ...] = ()) -> dict[str, Any] | ParseError:
    """The final-answer mapping of a model response, or a typed ParseError (never raises)."""
    value = extract_final_answer_raw(text, ignore)
    if isinstance(value, ParseError | dict):
        return value
    return ParseError(kind="not_a_mapping", detail=f"final answer is a {type(value).__name__}")


# --- recognition (YES/NO) -----------------------------------------------------------------------

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
    except _PARSE_ERRORS as exc:
        return ParseError(kind="bad_literal", detail=f"{type(exc).__name__} while extracting")
