"""The papers' parsing rules, kept beside our tolerant extractor (`evalcore.extract`) so a run can be graded
the way the original NPHardEval4V code graded it (ER_paper / AA_paper, `parser: paper`).

The original repository (lizhouf/NPHardEval4V, `Open/check/*.py`, as its open-model runners `Open/run/*.py`
call them; `../shared/docs/nphardeval4v-peer-spec.md` §2) has four parsers. Reproduced here, quirks included:

* **tagged** (BSP, KSP; EDP, SPP, TSP-D and GCP-D with options): the literal substrings `<final_answer>` and
  `</final_answer>` must both be in the text (case-sensitive, no variants); the answer is the text from the end
  of the **first** `<final_answer>` to the **first** `</final_answer>` (an empty slice when the closing tag
  comes first), stripped, read with `ast.literal_eval` (JSON's `true` / `false` / `null` fail); any failure
  gives the empty string, which is "unparsable". The value may be any literal (a number, a list, a string):
  the runners store it and count it as parsed. Options: `require_reasoning` (TSP-D, GCP-D, SPP also demand
  `<reasoning>` and `</reasoning>` somewhere in the text); `brace_cut` (EDP, SPP: the answer must hold `{`
  and `}` and is cut from the first `{` to the first `}`, which breaks nested mappings); `only_value_error`
  (SPP catches only `ValueError` from `literal_eval`: a syntax error stops the original run — counted here
  as unparsable, kind "bad_literal").
* **hard** (TSP, GCP, MSP): the whole text is first parsed as XML (`ElementTree.fromstring`); when that
  succeeds the answer is the text of its `final_answer` child (or nothing when there is none); otherwise the
  raw substring between the first tags (not stripped); the checker then reads it with `literal_eval`,
  retried wrapped in `{...}`. Their runners store the raw output, so for ER **any non-empty output is
  parsable** (`hard_parsable`).

`extract_paper_answer` is the tagged rule followed by "a mapping", the shape most tasks need. Never raises:
failures are `ParseError`s.
"""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from evalcore.literals import MAX_LITERAL_CHARS
from evalcore.schema import ParseError

OPEN_TAG = "<final_answer>"
CLOSE_TAG = "</final_answer>"
REASONING_TAGS = ("<reasoning>", "</reasoning>")


def _literal(body: str) -> Any | ParseError:
    if len(body) > MAX_LITERAL_CHARS:  # literal_eval's cost and recursion grow with the text
        return ParseError(kind="too_large", detail=f"final answer longer than {MAX_LITERAL_CHARS} chars")
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        return ParseError(kind="bad_literal", detail=f"{type(e).__name__}")


def parse_tagged(text: str | None, *, require_reasoning: bool = False, brace_cut: bool = False) -> Any | ParseError:
    """The P / NP-complete tasks' parser: the first `<final_answer>` … first `</final_answer>` as a Python
    literal of any type, or why the original gives '' (unparsable)."""
    if not isinstance(text, str) or not text:
        return ParseError(kind="empty", detail="no text")
    if OPEN_TAG not in text or CLOSE_TAG not in text:
        return ParseError(kind="no_final_answer", detail="no <final_answer> … </final_answer> tags")
    if require_reasoning and not all(t in text for t in REASONING_TAGS):
        return ParseError(kind="no_final_answer", detail="no <reasoning> … </reasoning> tags (this task's parser "
                          "demands them)")
    body = text[text.index(OPEN_TAG) + len(OPEN_TAG):text.index(CLOSE_TAG)].strip()
    if brace_cut:
        if "{" not in body or "}" not in body:
            return ParseError(kind="not_a_mapping", detail="no { … } in the final answer")
        body = body[body.index("{"):body.index("}") + 1].strip()
    value = _literal(body)
    if isinstance(value, str) and value == "":  # the original's "unparsable" marker itself
        return ParseError(kind="bad_literal", detail="the final answer is an empty string")
    return value


@dataclass(frozen=True)
class HardAnswer:
    """What the hard tasks' parser found: `text` to read as a literal, and whether it came from the XML tree
    (`from_xml`: the checkers then read it without the `{...}` retry, and a failure is not caught)."""

    text: str | None
    from_xml: bool


def parse_hard(text: str | None) -> HardAnswer | None:
    """The TSP / GCP / MSP parser: the `final_answer` element of the whole text parsed as XML, else the raw
    text between the first tags; None when neither gives anything (the original's '' or None)."""
    if not isinstance(text, str) or not text:
        return None
    if len(text) <= 20 * MAX_LITERAL_CHARS:  # an XML parse of a huge text is not worth it: not a short answer
        try:
            root = ET.fromstring(text)
        except (ET.ParseError, ValueError, TypeError, RecursionError):
            root = None
        except Exception:  # expat's own limits (entity expansion); the original would have caught it too
            root = None
        if root is not None:
            element = root.find("final_answer")
            return None if element is None else HardAnswer(text=element.text, from_xml=True)
    if OPEN_TAG not in text or CLOSE_TAG not in text:
        return None
    return HardAnswer(text=text[text.index(OPEN_TAG) + len(OPEN_TAG):text.index(CLOSE_TAG)], from_xml=False)


def hard_literal(found: HardAnswer | None, *, wrapped_retry: bool = True) -> Any | ParseError:
    """The literal the hard checkers read from what `parse_hard` found: `literal_eval` of the text, retried
    wrapped in `{...}` when it came from the tags (a failure from the XML tree is an error the original did not
    catch: here a ParseError too)."""
    if found is None or found.text is None:
        return ParseError(kind="no_final_answer", detail="no final answer")
    if found.text == "":
        return ParseError(kind="bad_literal", detail="the final answer is empty")
    value = _literal(found.text)
    if isinstance(value, ParseError) and wrapped_retry and not found.from_xml:
        value = _literal("{" + found.text + "}")
    return value


def hard_parsable(text: str | None) -> bool:
    """ER of the hard tasks in the original: the runner stores the raw output, and "parsable" is output != ''."""
    return isinstance(text, str) and text != ""


def extract_paper_answer(text: str | None) -> dict[Any, Any] | ParseError:
    """The tagged rule (first block, Python literal) followed by "a mapping": the answer most tasks read, or why
    the papers' parser fails."""
    value = parse_tagged(text)
    if isinstance(value, ParseError):
        if value.kind == "bad_literal" and isinstance(text, str) and OPEN_TAG in text and CLOSE_TAG in text:
            # the hard checkers' retry: the block's text wrapped in {...}
            start = text.index(OPEN_TAG) + len(OPEN_TAG)
            wrapped = _literal("{" + text[start:text.index(CLOSE_TAG)].strip() + "}")
            if isinstance(wrapped, dict):
                return wrapped
        return value
    if isinstance(value, dict):
        return value
    return ParseError(kind="not_a_mapping", detail=f"final answer is a {type(value).__name__}")
