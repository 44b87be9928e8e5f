"""The papers' parsing rule, kept beside our tolerant extractor (`nphe4v.core.extract`) so a run can be placed
among the papers' tables (ER_paper / AA_paper).

What the published checkers do (`../shared/docs/nphardeval4v-peer-spec.md` §2), as one rule:

* the literal substrings `<final_answer>` and `</final_answer>` must both be there (case-sensitive, no
  variants); the answer is the text between the **first** opening tag and the first closing tag after it;
* nothing is stripped first: no `<think>` removal, no code fences, no HTML unescaping;
* the text is read with `ast.literal_eval` (Python-literal syntax: JSON's `true` / `false` / `null` fail),
  retried wrapped in `{...}` as the hard-task checkers do;
* "parsable" means the literal is a mapping.

Not reproduced (they are bugs or dead variants, see the spec): the variants that also demand `<reasoning>` tags,
the cut at the first `}` (breaks nested mappings), the strict XML parse of the whole response, and the hard tasks'
"anything said counts as parsable". Never raises: failures are `ParseError`s.
"""

from __future__ import annotations

import ast
from typing import Any

from nphe4v.core.literals import MAX_LITERAL_CHARS
from nphe4v.core.schema import ParseError

OPEN_TAG = "<final_answer>"
CLOSE_TAG = "</final_answer>"


def _literal(body: str) -> Any | ParseError:
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        return ParseError(kind="bad_literal", detail=f"{type(e).__name__}")


def extract_paper_answer(text: str | None) -> dict[Any, Any] | ParseError:
    """The first `<final_answer>` block read as a Python literal mapping, or why the papers' parser fails."""
    if text is None or not text.strip():
        return ParseError(kind="empty", detail="no text")
    start = text.find(OPEN_TAG)
    if start < 0:
        return ParseError(kind="no_final_answer", detail="no <final_answer> tag")
    start += len(OPEN_TAG)
    end = text.find(CLOSE_TAG, start)
    if end < 0:
        return ParseError(kind="no_final_answer", detail="no </final_answer> after the first <final_answer>")
    body = text[start:end].strip()
    if len(body) > MAX_LITERAL_CHARS:  # literal_eval's cost and recursion grow with the text
        return ParseError(kind="too_large", detail=f"final answer longer than {MAX_LITERAL_CHARS} chars")
    value = _literal(body)
    if isinstance(value, ParseError):
        wrapped = _literal("{" + body + "}")
        value = value if isinstance(wrapped, ParseError) else wrapped
    if isinstance(value, ParseError) or isinstance(value, dict):
        return value
    return ParseError(kind="not_a_mapping", detail=f"final answer is a {type(value).__name__}")
