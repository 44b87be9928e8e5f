"""Tolerant, bounded parsing of the literal inside a final answer: bracket scanning that knows strings, and
literals read as JSON or Python syntax. `evalcore.extract` finds where the answer is; this reads it.

A literal is JSON first (C decoder, recursion-guarded). Otherwise Python-literal syntax (single
quotes, True/False/None, tuples, trailing commas, bare identifier keys) is rewritten to JSON, which
turns tuples into lists. Only what still fails goes to `ast.literal_eval` (sets, tuple keys, `\\x`
escapes), and only on bounded input: at most MAX_LITERAL_CHARS, bracket depth at most MAX_DEPTH, and
_EVAL_BUDGET characters per call, because its parser recurses (stack) and costs ~3 us per character.
Values are returned as written: quoted numbers stay strings and keys are not normalised, because the
task parsers (`evalcore.coerce`) own coercion.

Cost is bounded for hostile input: Python-level scanning only ever sees MAX_LITERAL_CHARS, candidate
spans are capped (MAX_CANDIDATES), and `ast.literal_eval` gets at most _EVAL_BUDGET characters per call.
"""

from __future__ import annotations

import ast
import bisect
import html
import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

from evalcore.schema import ParseError

MAX_LITERAL_CHARS = 20_000  # final answers are a few hundred characters
MAX_DEPTH = 100  # bracket nesting accepted; real answers nest 2-3 deep
_EVAL_BUDGET = 4_000  # characters per call that may reach ast.literal_eval (the slow, rare path)
_SCAN_ABORT_DEPTH = 10 * MAX_DEPTH  # a scan this deep is garbage: stop walking it
MAX_CANDIDATES = 32  # balanced spans tried per region


PARSE_ERRORS = (ValueError, SyntaxError, TypeError, RecursionError, MemoryError, OverflowError)


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


def scan_brackets(s: str) -> _Scan:
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


def outermost(spans: list[_Span], kinds: str) -> list[_Span]:
    """Spans opened by one of `kinds` and not nested in another such span, in order of appearance.
    They are disjoint, so parsing all of them costs at most one pass over the text."""
    out: list[_Span] = []
    reach = -1
    for span in sorted(sp for sp in spans if sp[2] in kinds):  # starts are unique
        if span[0] >= reach:
            out.append(span)
            reach = span[1]
    return out


def strings_within(strings: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The string literals of a sub-span, shifted to it: candidates reuse the enclosing scan."""
    out: list[tuple[int, int]] = []
    for a, b in strings[bisect.bisect_left(strings, (start, -1)) :]:
        if a >= end:
            break
        if b <= end:
            out.append((a - start, b - start))
    return out


@dataclass
class Budget:
    eval_chars: int = _EVAL_BUDGET


_NOT_JSON = object()


def _json(s: str) -> Any:
    # The C decoder guards its recursion (RecursionError) and caps integer digits (ValueError).
    # strict=False admits raw tabs inside strings, which models do emit.
    try:
        return json.loads(s, strict=False)
    except PARSE_ERRORS:
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


def _python(s: str, depth: int, strings: list[tuple[int, int]], budget: Budget) -> Any | ParseError:
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
        except (*PARSE_ERRORS, Warning):
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


def parse_span(s: str, depth: int, strings: list[tuple[int, int]], budget: Budget) -> Any | ParseError:
    value = _json(s)
    return _python(s, depth, strings, budget) if value is _NOT_JSON else value


def _preview(s: str) -> str:
    return s if len(s) <= 80 else s[:77] + "..."


# What a Python/JSON literal can start with; prose bodies ("YES", "0->1") skip the literal parsers.
_LITERAL_START = re.compile(r"""[{\[("'+\-.\d]|(?:True|False|None|true|false|null)\b""")
_FENCE_LANGUAGE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*(?:\n|$)")


def unfence(s: str) -> str:
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


def parse_body(body: str, escaped: bool, allow_text: bool, budget: Budget) -> Any | ParseError:
    """The literal inside one final_answer block (or fence). With `allow_text`, a body with no
    brackets that is not a literal (`<final_answer>YES</final_answer>`) comes back as the string."""
    head = body[: MAX_LITERAL_CHARS * 2]  # the literal starts right after the tag
    if escaped:
        head = html.unescape(head)
    b = unfence(head)
    if not b:
        return ParseError(kind="no_final_answer", detail="final_answer is empty")
    oversized = len(b) > MAX_LITERAL_CHARS
    if oversized:
        b = b[:MAX_LITERAL_CHARS]
    else:
        value = _json(b)
        if value is not _NOT_JSON:
            return value
    scan = scan_brackets(b)
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
    for start, end, _, depth in outermost(scan.spans, "{[")[:MAX_CANDIDATES]:
        if start == 0 and end == len(b) and not oversized:
            continue  # the whole body, already tried
        value = parse_span(b[start:end], depth, strings_within(scan.strings, start, end), budget)
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


def literal_json(value: Any) -> str:
    """A parsed literal as canonical JSON (sorted keys), never raising: a literal may mix key types
    (`{1: 'a', 'b': 2}`) or hold tuple keys, which `sort_keys` and JSON refuse; such a value keeps its own key
    order, with keys as text."""
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        return json.dumps(_text_keys(value), default=str)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(repr(value))


def _text_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _text_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_text_keys(v) for v in value]
    return value
