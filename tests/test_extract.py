"""The tolerant final-answer extractor: concrete model outputs, hostile inputs, and properties."""

from __future__ import annotations

import functools
import gc
import json
import random
import string
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.extract import (
    extract_final_answer,
    extract_final_answer_raw,
    extract_yes_no,
    is_format_example,
    strip_think,
)
from evalcore.literals import MAX_LITERAL_CHARS
from evalcore.prompting import format_response
from evalcore.schema import ParseError

# Per call, for any input up to 1 MB (typically well under 100 ms). A call over the limit is re-timed
# a few times with the garbage collector off and judged by its best run: on a busy 2-core machine
# other processes and GC pauses (hypothesis allocates a lot) must not make the tests flaky.
TIME_LIMIT_S = 0.2


def kind(result: object) -> str | None:
    return result.kind if isinstance(result, ParseError) else None


def timed(fn: Callable[[Any], Any], arg: Any) -> Any:
    """Call fn(arg), assert it is fast, return its result. Time is this thread's CPU time, not the wall
    clock: a bound on the work done (what catastrophic backtracking would blow), whatever else the machine runs."""
    start = time.thread_time()
    result = fn(arg)
    best = time.thread_time() - start
    if best >= TIME_LIMIT_S:
        gc.disable()
        try:
            for _ in range(3):
                start = time.thread_time()
                fn(arg)
                best = min(best, time.thread_time() - start)
        finally:
            gc.enable()
    assert best < TIME_LIMIT_S, f"{fn.__name__} took {best:.3f}s on {len(arg)} chars"
    return result


# What extract_final_answer_raw may return: an error or plain data.
ALLOWED_RESULTS = (ParseError, dict, list, tuple, set, frozenset, str, int, float, bool, type(None))


# --- concrete examples ----------------------------------------------------------------------------

MAPPINGS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "envelope",
        format_response({"Path": "0->1->2", "TotalDistance": 5}),
        {"Path": "0->1->2", "TotalDistance": 5},
    ),
    ("no root", '<final_answer>{"a": 1}</final_answer>', {"a": 1}),
    ("upper case tag", '<FINAL_ANSWER>{"a": 1}</FINAL_ANSWER>', {"a": 1}),
    ("mixed case, whitespace", '< Final_Answer >\n{"a": 1}\n</ final_answer >', {"a": 1}),
    ("space instead of underscore", '<final answer>{"a": 1}</final answer>', {"a": 1}),
    ("hyphen", '<final-answer>{"a": 1}</final-answer>', {"a": 1}),
    ("html escaped", "&lt;final_answer&gt;{&quot;a&quot;: 1}&lt;/final_answer&gt;", {"a": 1}),
    (
        "last block wins over restated format example",
        'Reply as <final_answer>{"Path": "...", "Cost": 0}</final_answer>.\n'
        'Computing... <final_answer>{"Path": "0->3", "Cost": 4}</final_answer>',
        {"Path": "0->3", "Cost": 4},
    ),
    (
        "blank last block skipped",
        '<final_answer>{"a": 1}</final_answer><final_answer> </final_answer>',
        {"a": 1},
    ),
    ("stray closing tag", '<final_answer>{"a": 1}</final_answer> junk </final_answer>', {"a": 1}),
    ("nested opening tag", '<final_answer> <final_answer>{"a": 1}</final_answer>', {"a": 1}),
    ("unclosed at end (truncated)", 'blah <final_answer>{"a": 1, "b": [2]}\n</final_ans', {"a": 1, "b": [2]}),
    (
        "prose mention of the tag after the answer",
        '<final_answer>{"a": 1}</final_answer> I put it in the <final_answer> tags as asked.',
        {"a": 1},
    ),
    ("json fence inside tags", '<final_answer>\n```json\n{"a": "3"}\n```\n</final_answer>', {"a": "3"}),
    ("bare fence inside tags", '<final_answer>```\n{"a": 3}\n```</final_answer>', {"a": 3}),
    ("inline backticks inside tags", '<final_answer>`{"a": 3}`</final_answer>', {"a": 3}),
    ("fence instead of tags", 'Here it is:\n```json\n{"a": 1}\n```\nHope this helps.', {"a": 1}),
    ("last fence wins", '```json\n{"a": 0}\n```\nfixed:\n```\n{"a": 1}\n```', {"a": 1}),
    ("python dict", "<final_answer>{'a': 1, 'b': 'x'}</final_answer>", {"a": 1, "b": "x"}),
    (
        "python constants and tuples",
        "<final_answer>{'ok': True, 'none': None, 'no': False, 'pair': (1, 2), 'one': (3,)}</final_answer>",
        {"ok": True, "none": None, "no": False, "pair": [1, 2], "one": [3]},
    ),
    ("python escapes", "<final_answer>{'s': 'it\\'s \"quoted\"'}</final_answer>", {"s": 'it\'s "quoted"'}),
    ("python hex escape", "<final_answer>{'s': '\\x41'}</final_answer>", {"s": "A"}),
    (
        "json constants in a python dict",
        "<final_answer>{'a': true, 'b': null}</final_answer>",
        {"a": True, "b": None},
    ),
    (
        "bare keys, trailing comma",
        "<final_answer>{Path: [0, 1], Cost: 2,}</final_answer>",
        {"Path": [0, 1], "Cost": 2},
    ),
    ("missing braces", '<final_answer>"Path": [0, 1], "Cost": 3</final_answer>', {"Path": [0, 1], "Cost": 3}),
    (
        "quoted numbers kept",
        '<final_answer>{"Cost": "12", "Path": ["0", "1"]}</final_answer>',
        {"Cost": "12", "Path": ["0", "1"]},
    ),
    ("trailing prose in tag", '<final_answer>{"a": 1} (this is optimal)</final_answer>', {"a": 1}),
    ("leading prose in tag", "<final_answer>The answer is {'a': 1}.</final_answer>", {"a": 1}),
    (
        "mapping preferred over list",
        '<final_answer>path [0, 1], so {"Path": [0, 1]}</final_answer>',
        {"Path": [0, 1]},
    ),
    (
        "closing brace inside a string",
        '<final_answer>{"s": "a}b{c", "t": 1} then {junk</final_answer>',
        {"s": "a}b{c", "t": 1},
    ),
    (
        "escaped quote inside a string",
        r'<final_answer>{"s": "say \"}\"", "t": 1}</final_answer>',
        {"s": 'say "}"', "t": 1},
    ),
    ("unicode", '<final_answer>{"città": "Zürich → 東京 😀"}</final_answer>', {"città": "Zürich → 東京 😀"}),
    ("nul bytes", '\x00<final_answer>{"a":\x00 1}</final_answer>\x00', {"a": 1}),
    ("raw tab inside a string", '<final_answer>{"a": "x\ty"}</final_answer>', {"a": "x\ty"}),
    (
        "dict at the end, no tags",
        "So the best route is 0, 2, 1. {'Path': '0->2->1', 'Cost': 9}",
        {"Path": "0->2->1", "Cost": 9},
    ),
    ("last dict wins, no tags", 'First guess {"a": 0}, but then {"a": 1} and done.', {"a": 1}),
    ("apostrophe and stray brace in prose", 'Don\'t { worry: here {"a": 1}', {"a": 1}),
    ("closing tag only", '{"a": 1}</final_answer>', {"a": 1}),
    ("empty mapping", "<final_answer>{}</final_answer>", {}),
]


@pytest.mark.parametrize(("text", "expected"), [m[1:] for m in MAPPINGS], ids=[m[0] for m in MAPPINGS])
def test_extracts_mapping(text: str, expected: dict[str, Any]) -> None:
    assert extract_final_answer(text) == expected
    assert extract_final_answer_raw(text) == expected


ERRORS: list[tuple[str, str | None, str]] = [
    ("none", None, "empty"),
    ("empty", "", "empty"),
    ("blank", " \n\t ", "empty"),
    ("prose only", "I could not solve this problem.", "no_final_answer"),
    ("list in prose is not an answer without tags", "The path is [0, 1, 2].", "no_final_answer"),
    (
        "only reasoning",
        "<think>Let me think about <final_answer>{'a': 1}</final_answer></think>",
        "no_final_answer",
    ),
    (
        "truncated while thinking",
        "<think>step 1, step 2, <final_answer>{'a': 1}</final_answer>",
        "no_final_answer",
    ),
    ("empty block", "<final_answer></final_answer>", "no_final_answer"),
    ("truncated object", '<final_answer>{"Path": "0->1->', "bad_literal"),
    ("unbalanced", '<final_answer>{"a": [1, 2}</final_answer>', "bad_literal"),
    ("not a literal", "<final_answer>{Path: 0 -> 1}</final_answer>", "bad_literal"),
    ("number", "<final_answer>42</final_answer>", "not_a_mapping"),
    ("list", "<final_answer>[0, 1, 2]</final_answer>", "not_a_mapping"),
    ("list with trailing prose", '<final_answer>[{"a": 1}] done</final_answer>', "not_a_mapping"),
    ("word", "<final_answer>YES</final_answer>", "not_a_mapping"),
    (
        "huge body",
        '<final_answer>{"a": "' + "x" * (MAX_LITERAL_CHARS + 10) + '"}</final_answer>',
        "too_large",
    ),
    (
        "deep python literal",
        "<final_answer>" + "{'a': " * 150 + "1" + "}" * 150 + "</final_answer>",
        "too_large",
    ),
    ("deep unclosed", "<final_answer>" + '{"a":' * 100_000, "too_large"),
]


@pytest.mark.parametrize(("text", "expected_kind"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_typed_errors(text: str | None, expected_kind: str) -> None:
    assert kind(extract_final_answer(text)) == expected_kind


RAW: list[tuple[str, str, Any]] = [
    ("number", "<final_answer>42</final_answer>", 42),
    ("float", "<final_answer> 3.5 </final_answer>", 3.5),
    ("list", "<final_answer>[0, 1, 2]</final_answer>", [0, 1, 2]),
    ("tuple", "<final_answer>(0, 1)</final_answer>", [0, 1]),
    ("quoted string", '<final_answer>"0->1->2"</final_answer>', "0->1->2"),
    ("bare word", "<final_answer> YES </final_answer>", "YES"),
    ("bare path", "<final_answer>0->1->2</final_answer>", "0->1->2"),
    ("placeholder is text, not Ellipsis", "<final_answer>...</final_answer>", "..."),
    ("json bool", "<final_answer>true</final_answer>", True),
    ("list with trailing prose", "<final_answer>[3, 4] is the order</final_answer>", [3, 4]),
]


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in RAW], ids=[r[0] for r in RAW])
def test_raw_returns_any_literal(text: str, expected: Any) -> None:
    assert extract_final_answer_raw(text) == expected
    assert kind(extract_final_answer(text)) == "not_a_mapping"


def test_raw_errors_match_mapping_errors() -> None:
    assert kind(extract_final_answer_raw(None)) == "empty"
    assert kind(extract_final_answer_raw('<final_answer>{"a": [</final_answer>')) == "bad_literal"


# --- realistic model outputs ----------------------------------------------------------------------

GPT_MARKDOWN = """\
Let me work through this carefully.

**Step 1 — read the graph.** The figure shows 4 nodes; edge (0, 2) has weight 3.

**Step 2 — search.** Checking all tours, the cheapest is 0 → 2 → 1 → 3 → 0.

<root>
<reasoning>
I enumerated the 6 tours starting at node 0 and kept the cheapest one, {0, 2, 1, 3}.
</reasoning>
<final_answer>
```json
{"Path": "0->2->1->3->0", "TotalDistance": 17}
```
</final_answer>
</root>

Let me know if you want the other tours too!"""

REASONING_MODEL = """\
<think>
The required format is <final_answer>{"Path": "0->...->0", "TotalDistance": 0}</final_answer>.
Try 0->1->2->0: 3+4+2 = 9. Try 0->2->1->0: 2+4+3 = 9. Both 9. </final_answer>
</think>

<root><reasoning>Both directions of the triangle cost 9.</reasoning><final_answer>{"Path": "0->1->2->0", "TotalDistance": 9}</final_answer></root>"""

QWEN_NO_OPEN_THINK = """\
Okay, so the user wants <final_answer>{'Feasible': 'NO'}</final_answer> style output. Let me check.
The constraints conflict, so it is feasible? No wait, it IS feasible.
</think>

<final_answer>{'Feasible': 'YES'}</final_answer>"""

LLAVA_DICT_ONLY = (
    "The shortest path from 0 to 4 is 0 -> 3 -> 4 with length 12. {'Path': '0->3->4', 'TotalDistance': '12'}"
)

TRUNCATED_MID_ANSWER = (
    "<root><reasoning>" + "Consider every subset of items. " * 200 + "</reasoning><final_answer>"
    '{"SelectedItems": [1, 4, 7, 9, 1'
)

TRUNCATED_AFTER_OBJECT = (
    '<root><reasoning>done</reasoning><final_answer>{"SelectedItems": [1, 4], "TotalValue": 30}\n</final_ans'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GPT_MARKDOWN, {"Path": "0->2->1->3->0", "TotalDistance": 17}),
        (REASONING_MODEL, {"Path": "0->1->2->0", "TotalDistance": 9}),
        (QWEN_NO_OPEN_THINK, {"Feasible": "YES"}),
        (LLAVA_DICT_ONLY, {"Path": "0->3->4", "TotalDistance": "12"}),
        (TRUNCATED_AFTER_OBJECT, {"SelectedItems": [1, 4], "TotalValue": 30}),
    ],
    ids=[
        "gpt-markdown",
        "reasoning-model",
        "qwen-no-open-think",
        "llava-dict-only",
        "truncated-after-object",
    ],
)
def test_realistic_outputs(text: str, expected: dict[str, Any]) -> None:
    assert extract_final_answer(text) == expected


def test_truncated_mid_answer_is_bad_literal() -> None:
    assert kind(extract_final_answer(TRUNCATED_MID_ANSWER)) == "bad_literal"


# --- strip_think --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no reasoning here", "no reasoning here"),
        ("<think>a</think>answer", "answer"),
        ("x<THINK>y</Think >z", "xz"),
        ("<thinking>a</thinking>b", "b"),
        ("< think >a< / think >b", "b"),
        ("a<think>b</think>c<think>d</think>e", "ace"),
        ("<think>a<think>b</think>c</think>answer", "answer"),  # nested: everything to the last close
        ("reasoning without opening tag</think>answer", "answer"),
        ("r1</think>r2</think>answer", "answer"),
        ("answer<think>truncated while thinking", "answer"),
        ("<think>only reasoning", ""),
        ("I think that is <b>bold</b>", "I think that is <b>bold</b>"),
    ],
)
def test_strip_think(text: str, expected: str) -> None:
    assert strip_think(text) == expected


# --- yes / no -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("YES, the figure matches the description.", True),
        ("No. Edge (1, 2) is missing in the figure.", False),
        ("yes", True),
        ("**NO** - the weights differ", False),
        ("> **Yes.** Same graph.", True),
        ("- YES: all items match", True),
        ("Answer: NO, node 3 differs", False),
        ("**Final answer:** yes", True),
        ("<think>maybe no... let me check. yes</think>\nNO, they differ.", False),
        ("Checked it.</think>Yes", True),
        ("<root><final_answer>NO</final_answer></root>", False),
        ('{"answer": "yes"}', True),
        ('I compared them.\n<final_answer>{"Same": false}</final_answer>', False),
        ("<final_answer>{'answer': 'Yes, identical'}</final_answer>", True),
        ("I compared every edge carefully.\nAnswer: Yes", True),
        ("Not sure at first. Answer: No", False),
    ],
)
def test_yes_no(text: str, expected: bool) -> None:
    assert extract_yes_no(text) is expected


@pytest.mark.parametrize(
    "text",
    [
        "Eyes can deceive; the figure looks similar.",
        "Not yet clear whether they match.",
        "Nothing obviously differs.",
        "Yesterday I saw a similar graph.",
        "Nope",
        "I cannot tell from the image.",
        "The answer depends on the weights; no idea.",
    ],
)
def test_yes_no_does_not_guess(text: str) -> None:
    assert kind(extract_yes_no(text)) == "no_final_answer"


def test_yes_no_empty() -> None:
    assert kind(extract_yes_no(None)) == "empty"
    assert kind(extract_yes_no("   ")) == "empty"


# --- bounded cost -------------------------------------------------------------------------------

MB = 1_000_000
_rng = random.Random(1234)


def _garbage(alphabet: str | list[str], n: int) -> str:
    return "".join(_rng.choices(alphabet, k=n))


SOUP_PIECES = [
    "<final_answer>",
    "</final_answer>",
    "{",
    "}",
    '"',
    "'",
    "```json",
    "<think>",
    "</think>",
    "1",
    "[",
    "]",
]
# Built on use: generating them all costs seconds that most test selections do not need.
HOSTILE: dict[str, Callable[[], str]] = {
    "letters": lambda: "x" * MB,
    "open angles": lambda: "<" * MB,
    "open braces": lambda: "{" * MB,
    "open brackets": lambda: "[" * MB,
    "brace pairs": lambda: "{}" * (MB // 2),
    "paren pairs": lambda: "()" * (MB // 2),
    "quotes": lambda: '"' * MB,
    "apostrophes": lambda: "'" * MB,
    "deep object": lambda: '{"a":' * (MB // 5),
    "balanced deep object": lambda: '{"a":' * 100_000 + "1" + "}" * 100_000,
    "bracket soup": lambda: _garbage("{}[]()\"':, ab\\\n", MB),
    "printable": lambda: _garbage(string.printable, MB),
    "unicode": lambda: _garbage("é漢字😀İ\x00 {}\"'", MB),
    "tag soup": lambda: _garbage(SOUP_PIECES, MB // 5),
    "open tags": lambda: "<final_answer>" * (MB // 14),
    "close tags": lambda: "</final_answer>" * (MB // 15),
    "keyword": lambda: "answer" * (MB // 6),
    "think blocks": lambda: "<think></think>" * (MB // 15),
    "think opens": lambda: "<think>" * (MB // 7),
    "think closes": lambda: "</think>" * (MB // 8),
    "fences": lambda: "```" * (MB // 3),
    "fenced garbage": lambda: ('```json\n{"a": [' + "1," * 3000 + "x]}\n```\n") * 80,
    "huge string in tag": lambda: '<final_answer>{"a": "' + "x" * MB + '"}</final_answer>',
    "tag then garbage": lambda: "<final_answer>" + _garbage("{}[]\"':, ab", MB) + "</final_answer>",
    "many bad blocks": lambda: ('<final_answer>{"a": [' + "1," * 5000 + "}</final_answer>") * 40,
    "prose then dict": lambda: _garbage(string.ascii_letters + " ", MB) + '{"a": 1}',
}


@functools.cache
def hostile(name: str) -> str:
    return HOSTILE[name]()


@pytest.mark.parametrize("name", list(HOSTILE))
@pytest.mark.parametrize("fn", [extract_final_answer, extract_final_answer_raw, extract_yes_no])
def test_hostile_megabyte_is_fast_and_total(name: str, fn: Callable[[str], Any]) -> None:
    assert isinstance(timed(fn, hostile(name)), ALLOWED_RESULTS)


def test_deep_nesting_returns_parse_error_quickly() -> None:
    text = '{"a":' * 100_000
    for candidate in (text, "<final_answer>" + text, "<final_answer>" + text + "</final_answer>"):
        assert isinstance(timed(extract_final_answer, candidate), ParseError)


def test_prose_then_dict_found_at_the_end_of_a_megabyte() -> None:
    assert extract_final_answer(hostile("prose then dict")) == {"a": 1}


# --- properties ---------------------------------------------------------------------------------

FRAGMENTS = [
    "<final_answer>",
    "</final_answer>",
    "<FINAL_ANSWER>",
    "</ final answer>",
    "&lt;final_answer&gt;",
    "<root>",
    "</root>",
    "<think>",
    "</think>",
    "<thinking>",
    "```json\n",
    "```",
    "`",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    '"',
    "'",
    "\\",
    ":",
    ",",
    "\n",
    " ",
    '"a": ',
    "'k': ",
    "True",
    "null",
    "0",
    "42",
    "-1.5e3",
    "YES",
    "no",
    "Answer: ",
    "\x00",
    "é",
    "😀",
]
HUGE_REPEATS = ["[", "{", '{"a":', "(", "'", '"', "<think>", "</think>", "<final_answer>", "}", "x", "\\"]


def build_soup(seed: int) -> str:
    """Hostile output from a seed: mostly tag/bracket/quote fragments and random characters, and in
    a third of the outputs one huge piece (a long run of one fragment or an unterminated string).
    Built with `random` so that hypothesis only draws one integer: thousands of examples stay cheap."""
    rng = random.Random(seed)
    parts: list[str] = []
    for _ in range(rng.randrange(60)):
        if rng.random() < 0.8:
            parts.append(rng.choice(FRAGMENTS))
        else:
            parts.append(
                "".join(
                    chr(rng.choice((rng.randrange(32, 127), rng.randrange(0x10FFFF))))
                    for _ in range(rng.randrange(8))
                )
            )
    if rng.random() < 0.33:
        piece = (
            rng.choice(HUGE_REPEATS) * rng.randrange(10_000)
            if rng.random() < 0.8
            else '"' + "s" * rng.randrange(30_000)
        )
        parts.insert(rng.randrange(len(parts) + 1), piece)
    return "".join(parts).encode("utf-8", "replace").decode("utf-8", "replace")


fragment = st.sampled_from(FRAGMENTS)
tag_soup = st.integers(0, 2**64).map(build_soup)
# Built by hypothesis itself: shrinks to a minimal failing soup, but costs several times more per example.
native_soup = st.lists(st.one_of(fragment, st.text(max_size=8)), max_size=30).map("".join)


def _check_total_and_fast(text: str) -> None:
    assert isinstance(timed(extract_final_answer, text), ParseError | dict)
    assert isinstance(timed(extract_final_answer_raw, text), ALLOWED_RESULTS)


COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}

# Examples per run: 3500 + 5500 + 1000 = 10,000 generated hostile outputs, plus 2100 round trips.


@settings(max_examples=3500, **COMMON)
@given(st.text(max_size=400))
def test_random_text_never_raises(text: str) -> None:
    _check_total_and_fast(text)


@settings(max_examples=5500, **COMMON)
@given(tag_soup)
def test_tag_soup_never_raises(text: str) -> None:
    _check_total_and_fast(text)


@settings(max_examples=1000, **COMMON)
@given(st.one_of(tag_soup, native_soup, st.text(max_size=200)))
def test_yes_no_and_strip_think_never_raise(text: str) -> None:
    verdict = timed(extract_yes_no, text)
    stripped = timed(strip_think, text)
    assert isinstance(verdict, bool | ParseError)
    assert isinstance(stripped, str) and len(stripped) <= len(text)


json_value = st.one_of(
    st.integers(),
    st.text(max_size=20),
    st.lists(st.one_of(st.integers(), st.text(max_size=6)), max_size=5),
)
# An answer whose every value is a placeholder ("<...>") reads as a restated format example and is skipped by
# design (is_format_example); round trips are about every other answer.
answers = st.dictionaries(st.text(max_size=12), json_value, max_size=6).filter(lambda a: not is_format_example(a))
# Prose with no backticks, braces or tags, so that it cannot itself look like an answer.
plain = st.text(st.characters(exclude_characters="`{}<>&"), max_size=80)


@settings(max_examples=800, **COMMON)
@given(answers)
def test_round_trip_envelope(answer: dict[str, Any]) -> None:
    assert extract_final_answer(format_response(answer)) == answer


@settings(max_examples=500, **COMMON)
@given(answers, st.text(max_size=80), st.text(max_size=80), st.text(max_size=40))
def test_round_trip_with_prose(answer: dict[str, Any], before: str, after: str, reasoning: str) -> None:
    text = before + "\n" + format_response(answer, reasoning=reasoning.replace("<", " ")) + "\n" + after
    assert extract_final_answer(text) == answer


@settings(max_examples=500, **COMMON)
@given(answers, plain, plain, st.sampled_from(["```json\n", "```\n", "```JSON\n", "```python\n"]))
def test_round_trip_in_code_fences(answer: dict[str, Any], before: str, after: str, fence: str) -> None:
    fenced_envelope = before + fence + format_response(answer) + "\n```" + after
    assert extract_final_answer(fenced_envelope) == answer
    fenced_json = before + fence + json.dumps(answer, ensure_ascii=False, indent=1) + "\n```" + after
    assert extract_final_answer(fenced_json) == answer
    bare_json_at_end = before + " " + json.dumps(answer, ensure_ascii=False)
    assert extract_final_answer(bare_json_at_end) == answer


@settings(max_examples=300, **COMMON)
@given(answers, st.text(max_size=60))
def test_round_trip_after_reasoning_block(answer: dict[str, Any], thought: str) -> None:
    thought = thought.replace("<", " ")
    decoy = format_response({"decoy": thought})
    assert extract_final_answer(f"<think>{decoy}</think>\n{format_response(answer)}") == answer
    assert extract_final_answer(f"{decoy}</think>\n{format_response(answer)}") == answer


@pytest.mark.parametrize("answer", [{"<THINK>": 0}, {"a": "x</think>y"}, {"a": "<think>x</think>"},
                                    {"<thinking>": ["</thinking>", 1]}])
def test_think_tags_inside_the_answer_are_its_text(answer: dict[str, Any]) -> None:
    """A think tag inside a final-answer block is the answer's text: an unclosed `<THINK>` in a key read as a
    reasoning block cut the answer (hypothesis found `{"<THINK>": 0}` after a think block)."""
    decoy = format_response({"decoy": ""})
    for text in (format_response(answer), f"<think>{decoy}</think>\n{format_response(answer)}",
                 f"{decoy}</think>\n{format_response(answer)}", f"<think>plan</think>{format_response(answer)}"):
        assert extract_final_answer(text) == answer, text


# The answer's own strings may hold the envelope's tags (a model quoting the format, a key such as "<final_answer>
# goes here"): the tag walk alone cut the block at the first tag inside a string; a JSON object that reaches the
# closing tag is the block.
_TAGS = st.sampled_from(["<final_answer>", "</final_answer>", "<FINALANSWER>", "</FINALANSWER>", "< final_answer >",
                         "&lt;final_answer&gt;", "</Final_Answer>"])
tagged_text = st.tuples(st.text(max_size=6), _TAGS, st.text(max_size=6)).map("".join)
tagged_answers = st.dictionaries(st.text(max_size=8), st.one_of(tagged_text, st.lists(tagged_text, max_size=3)),
                                 min_size=1, max_size=4).filter(lambda a: not is_format_example(a))


@settings(max_examples=300, **COMMON)
@given(tagged_answers, plain, plain)
def test_round_trip_with_tags_inside_the_answers_strings(answer: dict[str, Any], before: str, after: str) -> None:
    assert extract_final_answer(format_response(answer)) == answer
    assert extract_final_answer(before + "\n" + format_response(answer, reasoning="r") + "\n" + after) == answer


# --- restated format examples (issue 10 item 5) ----------------------------------------------------


def test_answer_then_restated_example_keeps_the_answer_on_bsp_l10_000():
    """bsp-L10-000's shape: the right answer, then the prompt's format example restated after it. With
    the v1 concrete example ({"Position": 0}) the last block used to win and grade a right answer wrong."""
    from evalcore.rng import derive_seed, rng_for
    from evalcore.schema import Gold
    from nphe4v.tasks import get_task

    spec = get_task("BSP")
    data = spec.generate(10, rng_for(derive_seed(0, "v1", "BSP", 10, 0)))
    gold: Gold = spec.solve(data)
    assert gold.answer["Position"] != 0  # else the old bug would hide here
    right = json.dumps(gold.answer)
    example = spec.text(data).example  # what the prompt shows now: a placeholder
    tail = "\nRemember, the answer must look like <final_answer>{}</final_answer>."
    response = f"<root><reasoning>sorted, then searched</reasoning><final_answer>{right}</final_answer></root>"
    assert extract_final_answer(response + tail.format(example)) == gold.answer
    # The concrete v1 example is skipped when the caller names it as the prompt's example.
    old = tail.format('{"Position": 0}')
    assert extract_final_answer(response + old) == {"Position": 0}
    assert extract_final_answer(response + old, ignore=({"Position": 0},)) == gold.answer
    verdict = spec.verify(data, gold, spec.parse(extract_final_answer(response + tail.format(example))))
    assert verdict.verdict == "correct"


@pytest.mark.parametrize(
    ("value", "is_example"),
    [
        ({"Position": "<POSITION>"}, True),
        ({"Path": "<START>->...-><END>", "TotalDistance": "<TOTAL_DISTANCE>"}, True),
        ({"Coloring": {"<VERTEX>": "<COLOR>", "...": "..."}}, True),
        ({"SelectedItemIds": ["<ITEM_ID>", "..."], "TotalValue": "<TOTAL_VALUE>"}, True),
        ({"Feasible": "YES"}, False),
        ({"Feasible": "<YES_OR_NO>", "Extra": 3}, False),
        ({"Path": "0->...->0"}, False),  # digits: a real (if lazy) answer, graded as such
        ({"Path": "->"}, False),
        ({"a": {}}, False),
        ({}, False),
        ([], False),
        ("<POSITION>", False),
    ],
)
def test_is_format_example(value, is_example):
    assert is_format_example(value) is is_example


def test_only_the_example_is_no_answer():
    out = extract_final_answer('<final_answer>{"Position": "<POSITION>"}</final_answer>')
    assert isinstance(out, ParseError) and out.kind == "no_final_answer" and "format example" in out.detail
    # Example first, answer after: the answer, as before.
    both = '<final_answer>{"Position": "<POSITION>"}</final_answer> so <final_answer>{"Position": 4}</final_answer>'
    assert extract_final_answer(both) == {"Position": 4}
    # A truncated tail that is only the example does not hide the complete answer before it.
    cut = '<final_answer>{"Position": 4}</final_answer> format: <final_answer>{"Position": "<POSITION>"}'
    assert extract_final_answer(cut) == {"Position": 4}


# --------------------------------------------------------------------------------------------------------
# Decision answers (issue 19 item 5): one reading for TSP-D and GCP-D


@pytest.mark.parametrize(("raw", "want"), [
    ("YES", True), ("no", False), ("True", True), ("false", False), (True, True), (0, False), ("No.", False),
    ("Yes, such a tour exists.", True), ("No - every tour is longer than the limit", False),
    ("  **Yes** it can be coloured", True), ('"No", because of the clique', False), ("TRUE: a tour fits", True),
    ("YES_OR_NO", None), ("Yes or No", None), ("yes/no", None), ("yesterday", None), ("Not feasible at all", None),
    ("none", None), ("maybe yes", None), ("", None), (None, None), (2, None), ([True], None),
])
def test_as_decision_reads_words_and_leading_words(raw: Any, want: bool | None) -> None:
    from evalcore.coerce import as_decision

    assert as_decision(raw) is want


def test_read_decision_keys_and_unrequested_keys() -> None:
    from nphe4v.tasks.decision import read_decision

    assert read_decision({"Feasible": "Yes, such a tour exists"}) is True
    assert read_decision({"answer": "NO"}) is False
    assert read_decision({"final_answer": "NO"}) == ParseError(kind="missing_key", detail="Feasible")
    assert read_decision({"Feasible": "NO", "Answer": "YES"}) is False  # Feasible first
    assert read_decision({"Feasible": "?", "Answer": "YES"}) is True  # unreadable Feasible: Answer decides
    assert read_decision({"Feasible": "NO", "NumColors": "three", "Path": [None]}) is False
    err = read_decision({"Feasible": "perhaps"})
    assert isinstance(err, ParseError) and err.kind == "bad_value"
    assert read_decision(["YES"]) == ParseError(kind="not_a_mapping", detail="list")
    # through the extractor: a bare sentence in the Answer key of a final_answer block
    assert read_decision(extract_final_answer(
        "<root><final_answer>{'Answer': 'No, no 3-colouring exists'}</final_answer></root>")) is False


# --------------------------------------------------------------------------------------------------------
# The papers' parsing rule (issue 19 item 4), beside ours


def test_paper_parser_rule() -> None:
    from nphe4v.paper_parse import extract_paper_answer

    assert extract_paper_answer("<final_answer>{'Position': 3}</final_answer>") == {"Position": 3}
    # the FIRST block decides (ours: the last non-example block)
    two = "<final_answer>{'Position': 1}</final_answer> wait, <final_answer>{'Position': 2}</final_answer>"
    assert extract_paper_answer(two) == {"Position": 1}
    assert extract_final_answer(two) == {"Position": 2}
    # a Python literal: JSON's true/false/null fail; the hard checkers' {}-wrap retry is kept
    assert extract_paper_answer('<final_answer>{"Feasible": true}</final_answer>').kind == "bad_literal"
    assert extract_paper_answer("<final_answer>'Path': '0->1', 'TotalDistance': 3</final_answer>") == {
        "Path": "0->1", "TotalDistance": 3}
    # exact tags only, nothing stripped; both tags needed; a mapping needed
    for text, kind in [
        ("{'Position': 3}", "no_final_answer"),  # ours takes a bare mapping
        ("<Final_Answer>{'Position': 3}</Final_Answer>", "no_final_answer"),
        ("<final_answer>{'Position': 3}", "no_final_answer"),
        ("<final_answer>```python\n{'Position': 3}\n```</final_answer>", "bad_literal"),
        ("<final_answer>{'Position': 3} because the target is there</final_answer>", "bad_literal"),
        ("<final_answer>3</final_answer>", "not_a_mapping"),
        ("<final_answer>" + "[" * 5000 + "</final_answer>", "bad_literal"),
        ("<final_answer>" + "1" * 30_000 + "</final_answer>", "too_large"),
        ("", "empty"),
        (None, "empty"),
    ]:
        out = extract_paper_answer(text)
        assert isinstance(out, ParseError) and out.kind == kind, (text and text[:60], out)
    # a think block restating the format comes first: the papers' rule reads it
    think = ("<think>format: <final_answer>{'Position': '<POSITION>'}</final_answer></think>"
             "<final_answer>{'Position': 3}</final_answer>")
    assert extract_paper_answer(think) == {"Position": "<POSITION>"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_paper_parser_never_raises(text: str) -> None:
    from nphe4v.paper_parse import extract_paper_answer

    for t in (text, f"<final_answer>{text}</final_answer>", f"<final_answer>{{{text}}}</final_answer>"):
        out = extract_paper_answer(t)
        assert isinstance(out, ParseError | dict)


def test_score_answer_paper_is_the_original_code() -> None:
    """`parser: paper` decides as the original NPHardEval4V code (nphe4v.paper_check), quirks included; each
    case is one of the quirks listed in docs/metrics.md (tests/test_paper_published.py checks the whole rule on
    the papers' published outputs)."""
    import random as _random

    from evalcore.schema import Instance
    from nphe4v.scoring import score_answer, score_answer_paper
    from nphe4v.tasks import get_task

    def inst(task: str, level: int = 2) -> Instance:
        spec = get_task(task)
        data = spec.generate(level, _random.Random(5))
        return Instance(instance_id="i", benchmark="nphardeval4v", task=task, level=level, index=0,
                        data=data.model_dump(mode="json"), gold=spec.solve(data))

    def paper(i: Instance, text: str) -> str | None:
        return score_answer_paper(i, text)[0]

    r = "<reasoning>r</reasoning>"
    bsp = inst("BSP")
    pos = bsp.gold.answer["Position"]
    right = f"<final_answer>{{'Position': {pos}}}</final_answer>"
    # the open BSP checker parses the parsed answer again: never correct, but parsable
    assert score_answer(bsp, right)[0].verdict == "correct" and paper(bsp, right) == "wrong"
    for text, want in [
        (f"{{'Position': {pos}}}", "parse_error"),  # no tags
        ("<final_answer>3</final_answer>", "wrong"),  # any literal is "parsed"
        ('<final_answer>{"Position": true}</final_answer>', "parse_error"),  # JSON literal
        ("</final_answer><final_answer>{'Position': 1}</final_answer>", "parse_error"),  # first closing tag
    ]:
        assert paper(bsp, text) == want, text
    edp = inst("EDP")
    ops = edp.gold.answer["Operations"]
    assert paper(edp, f"<final_answer>{{'Operations': '{ops}'}}</final_answer>") == "correct"
    assert paper(edp, f"<final_answer>{{'Operations': {ops}.9}}</final_answer>") == "correct"  # int() truncates
    assert paper(edp, f"<final_answer>x {{'Operations': {ops}}} y</final_answer>") == "correct"  # cut at braces
    assert paper(edp, "<final_answer>3</final_answer>") == "parse_error"  # no braces
    tspd = inst("TSP-D")
    yes = "YES" if tspd.gold.answer["Feasible"] else "NO"
    assert paper(tspd, f"<final_answer>{{'Feasible': '{yes}'}}</final_answer>") == "parse_error"  # no reasoning
    # anything but "yes" reads as NO; the truth is the Christofides tour within the threshold
    no, maybe = (paper(tspd, f"{r}<final_answer>{{'Feasible': '{v}'}}</final_answer>") for v in ("no", "maybe"))
    assert no == maybe and {no, paper(tspd, f"{r}<final_answer>{{'Feasible': 'Yes'}}</final_answer>")} == {
        "correct", "wrong"}
    gcp = inst("GCP")
    n = gcp.data["num_vertices"]
    rainbow = {v: f"C{v}" for v in range(1, n + 1)}  # one colour per vertex: valid, never optimal
    assert paper(gcp, f"Answer: <final_answer>{rainbow}</final_answer>") == "correct"
    assert paper(gcp, f"<root><final_answer>{rainbow}</final_answer></root>") == "correct"
    # the block alone is well-formed XML whose root has no final_answer child: graded wrong, as the original did
    assert paper(gcp, f"<final_answer>{rainbow}</final_answer>") == "wrong"
    assert paper(gcp, "no answer at all") == "wrong"  # any output is parsable for TSP, GCP and MSP
    assert paper(gcp, "") == "parse_error"
    ksp = inst("KSP")
    ids, value = ksp.gold.answer["SelectedItemIds"], ksp.gold.answer["TotalValue"]
    full = f"<final_answer>{{'Feasible': 'yes', 'TotalValue': {value}, 'SelectedItemIds': {ids}}}</final_answer>"
    assert paper(ksp, full) == "correct"
    assert paper(ksp, full.replace("'Feasible': 'yes', ", "")) == "wrong"  # Feasible required
    assert paper(ksp, full.replace(f", 'SelectedItemIds': {ids}", "")) == "wrong"  # ids default to []
    other = Instance(instance_id="g", benchmark="graphverse", task="BSP", level=1, index=0, data={}, gold=bsp.gold)
    assert score_answer_paper(other, "<final_answer>{}</final_answer>") == (None, None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200), st.sampled_from(["BSP", "EDP", "SPP", "KSP", "TSP-D", "GCP-D", "TSP", "GCP", "MSP"]))
def test_score_answer_paper_never_raises(text: str, task: str) -> None:
    import random as _random

    from evalcore.schema import Instance
    from nphe4v.scoring import score_answer_paper
    from nphe4v.tasks import get_task

    spec = get_task(task)
    data = spec.generate(1, _random.Random(1))
    i = Instance(instance_id="i", benchmark="nphardeval4v", task=task, level=1, index=0,
                 data=data.model_dump(mode="json"), gold=spec.solve(data))
    for t in (text, f"<reasoning></reasoning><final_answer>{text}</final_answer>", f"<root><final_answer>{text}"
              f"</final_answer></root>", f"<final_answer>{{{text}}}</final_answer>"):
        assert score_answer_paper(i, t)[0] in ("parse_error", "correct", "wrong")


@pytest.mark.parametrize("body", ["{1: 'a', 'b': 2}", "{(1, 2): 3, 'x': {4, 5}}", "{'Path': {1: 2, '3': 4}}",
                                  "[{2: 1, 'a': {None: 0}}]", "{b'x': 1, 2.5: float('nan') if 0 else 1e999}"])
def test_paper_and_tolerant_scores_keep_literals_json_cannot_sort(body: str) -> None:
    """A literal the original's `literal_eval` reads may mix key types or use tuple keys, which JSON's sorted
    dump refuses: the sample is still decided and its answer kept as text (a crash here stopped a regrade)."""
    import random as _random

    from evalcore.literals import literal_json
    from evalcore.schema import Instance
    from nphe4v.scoring import score_answer, score_answer_paper
    from nphe4v.tasks import get_task

    for task in ("BSP", "KSP", "TSP-D", "GCP"):
        spec = get_task(task)
        data = spec.generate(1, _random.Random(1))
        i = Instance(instance_id="i", benchmark="nphardeval4v", task=task, level=1, index=0,
                     data=data.model_dump(mode="json"), gold=spec.solve(data))
        text = f"<reasoning>r</reasoning><final_answer>{body}</final_answer>"
        verdict, shown = score_answer_paper(i, text)
        assert verdict in ("parse_error", "correct", "wrong")
        assert shown is None or isinstance(json.loads(shown), dict | list | str)
        assert score_answer(i, text)[0].verdict in ("parse_error", "correct", "wrong")
    assert json.loads(literal_json({1: "a", "b": 2})) == {"1": "a", "b": 2}
