"""Every registered task honours the contract end to end: generate -> solve -> render -> prompt ->
(oracle answer as text) -> extract -> parse -> verify, deterministically, at every level."""

from __future__ import annotations

import io
import json
import random

import pytest
from PIL import Image

from evalcore.extract import extract_final_answer, is_format_example
from evalcore.prompting import build_prompt, format_response
from evalcore.schema import PROMPT_MODES, Gold, ParseError
from nphe4v.tasks import TASK_CLASS, TASK_MODULES, get_task

TASKS = list(TASK_MODULES)


def _instances(name: str, per_level: int = 3):
    spec = get_task(name)
    for level in range(1, 11):
        for i in range(per_level):
            rng = random.Random(f"{name}-{level}-{i}")
            yield level, spec.generate(level, rng)


@pytest.mark.parametrize("name", TASKS)
def test_registry_metadata(name):
    spec = get_task(name)
    assert spec.name == name
    assert spec.benchmark == "nphardeval4v"
    assert spec.complexity == TASK_CLASS[name]
    for level in range(1, 11):
        assert isinstance(spec.params(level), dict) and spec.params(level)


@pytest.mark.parametrize("name", TASKS)
def test_generation_is_deterministic(name):
    spec = get_task(name)
    for level in (1, 5, 10):
        a = spec.generate(level, random.Random(42))
        b = spec.generate(level, random.Random(42))
        assert a.model_dump() == b.model_dump()
        assert spec.render(a) == spec.render(b), "same instance must render to the same PNG bytes"
        assert spec.solve(a) == spec.solve(b)


@pytest.mark.parametrize("name", TASKS)
def test_oracle_answer_round_trips_as_correct(name):
    spec = get_task(name)
    for _level, data in _instances(name):
        gold = spec.solve(data)
        assert isinstance(gold, Gold)
        extracted = extract_final_answer(format_response(json.loads(json.dumps(gold.answer))))
        assert isinstance(extracted, dict), extracted
        canonical = spec.parse(extracted)
        assert not isinstance(canonical, ParseError), canonical
        verdict = spec.verify(data, gold, canonical)
        assert verdict.verdict == "correct", (name, data, gold, verdict)


@pytest.mark.parametrize("name", TASKS)
def test_heuristic_and_random_answers_are_well_formed(name):
    spec = get_task(name)
    for level, data in _instances(name, per_level=2):
        gold = spec.solve(data)
        for answer in (spec.heuristic(data), spec.random_answer(data, random.Random(level))):
            canonical = spec.parse(json.loads(json.dumps(answer)))
            assert not isinstance(canonical, ParseError), (name, answer, canonical)
            assert spec.verify(data, gold, canonical).verdict in ("correct", "wrong")


@pytest.mark.parametrize("name", TASKS)
def test_images_are_png_1024_wide(name):
    spec = get_task(name)
    for level in (1, 5, 10):
        data = spec.generate(level, random.Random(7))
        pngs = spec.render(data)
        assert pngs
        for png in pngs:
            img = Image.open(io.BytesIO(png))
            assert img.format == "PNG"
            assert img.width == 1024
            assert 100 <= img.height <= 4096


@pytest.mark.parametrize("name", TASKS)
def test_prompt_modes(name):
    spec = get_task(name)
    data = spec.generate(4, random.Random(3))
    text = spec.text(data)
    assert text.data_lines, "full-text modes need the data lines"
    limited = build_prompt(text, "figure+limited_text", ())
    full = build_prompt(text, "full_text_only", ())
    both = build_prompt(text, "figure+full_text", ())
    assert text.question in full.text and text.question in both.text
    assert (text.limited_question or text.question) in limited.text
    for line in text.data_lines:
        assert line in full.text and line in both.text
        assert line not in limited.text
    assert "<final_answer>" in limited.text
    assert len({p.text for p in (limited, full, both)}) == len(PROMPT_MODES)


@pytest.mark.parametrize("name", TASKS)
def test_parse_never_raises_on_hostile_mappings(name):
    spec = get_task(name)
    hostile = [
        {}, {"x": 1}, {"": None}, {"Path": None}, {"Path": [[[]]]}, {"TotalDistance": "NaN"},
        {"Feasible": 3}, {"Position": "-1e999"}, {"Operations": [1, 2]}, {"Coloring": "red"},
        {"Schedule": {"0": "x"}}, {"SelectedItemIds": "a,b"}, {k: "9" * 400 for k in ("a", "b")},
        {"NumColors": {"a": 1}, "Coloring": {"1": {"x": []}}}, {"1": "red", "2": None},
    ]
    for obj in hostile:
        result = spec.parse(obj)
        assert isinstance(result, dict | ParseError)


@pytest.mark.parametrize("name", TASKS)
def test_prompt_example_is_a_placeholder_never_an_answer(name):
    """A model that restates the prompt's example after its answer must keep its answer (issue 10 item 5)."""
    spec = get_task(name)
    data = spec.generate(3, random.Random(5))
    example = json.loads(spec.text(data).example)
    assert is_format_example(example)
    gold = spec.solve(data)
    answer = json.dumps(gold.answer)
    prompt_example = spec.text(data).example
    response = (
        f"<root><reasoning>done</reasoning><final_answer>{answer}</final_answer></root>\n"
        f"As requested, the format is <final_answer>{prompt_example}</final_answer>."
    )
    extracted = extract_final_answer(response)
    assert extracted == json.loads(answer)
    assert spec.verify(data, gold, spec.parse(extracted)).verdict == "correct"

