"""The judge's output schema is generated from its pydantic reply models (issue 34 item 4): the prompt shows it, the
request's response_format sends it, and a reply is validated with the same model. Checked here: the schema a
template carries is the model's; a JSON-schema validator and the model accept and refuse the same generated replies
(every required key dropped, every enum and type broken, one step too many); a valid reply is accepted and an
invalid one refused with one line naming the field."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from judge.llm_judge import JudgeItem, load_template, render_messages
from judge.schema import json_schema_of, output_model, parse_verdict, validate_reply

CAPS = [(2, 32, 240), (3, 32, 240), (2, 5, None), (3, 7, None), (3, 256, 24)]


def _reply(version: int, n_steps: int) -> dict[str, Any]:
    """A schema-valid reply with `n_steps` steps (every fact type and label used somewhere)."""
    steps = []
    for i in range(n_steps):
        if version >= 3:
            steps.append({"quote": f"A -> B{i}", "fact": {"type": ["path", "edge", "none", "set"][i % 4],
                                                          "graph": [None, 1][i % 2], "nodes": ["A", f"B{i}", None][:2 + i % 2],
                                                          "value": [None, 3.5, "clique"][i % 3]},
                          "kind": ["inference", "reading"][i % 2], "leads_to_answer": bool(i % 2),
                          "correct": i != 1, "error_type": "none" if i != 1 else "perception"})
        else:
            steps.append({"claim": f"A -> B{i}", "kind": ["inference", "reading"][i % 2], "relevant": bool(i % 2),
                          "correct": i != 1, "error_type": "none" if i != 1 else "text_reasoning"})
    return {"steps": steps, "final_answer_match": False}


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a key inside a reply (dict keys and list indices)."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _at(obj: Any, path: tuple) -> tuple[Any, Any]:
    for p in path[:-1]:
        obj = obj[p]
    return obj, path[-1]


def _mutations(reply: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Broken replies: each key dropped, each value replaced by values of other JSON types and by a word no enum
    has."""
    out = []
    for path in _paths(reply):
        if isinstance(path[-1], int):
            continue
        gone = copy.deepcopy(reply)
        parent, key = _at(gone, path)
        del parent[key]
        out.append((f"drop {path}", gone))
        for bad in ("no-such-label", 7, True, None, [], {}):
            changed = copy.deepcopy(reply)
            parent, key = _at(changed, path)
            parent[key] = bad
            out.append((f"{path} = {bad!r}", changed))
    return out


def _model_accepts(model, reply) -> bool:
    try:
        validate_reply(model, reply)
        return True
    except ValidationError:
        return False


@pytest.mark.parametrize(("version", "max_steps", "max_chars"), CAPS)
def test_the_templates_schema_is_the_models(version, max_steps, max_chars):
    t = load_template(f"vgr_judge_v{version}", max_steps, max_chars)
    model = output_model(version, max_steps, max_chars)
    assert t.model is model and t.schema == json_schema_of(model)
    # what json_schema_of changes is the spelling, not the content: refs inlined, titles dropped, type lists
    raw = json.dumps(model.model_json_schema())
    assert "$ref" in raw and "$ref" not in json.dumps(t.schema) and '"title"' not in json.dumps(t.schema)
    # (the request's response_format carries it: tests/test_judge_grounded_v4.py reads it off the wire)
    if version >= 3:  # the prompt shows the same schema (v2's prompt text is kept as old runs recorded it)
        user = render_messages(t, JudgeItem("SD", "ev", "gold", "q", "resp"))[1]["content"]
        assert json.dumps(t.schema, ensure_ascii=False) in user


@pytest.mark.parametrize(("version", "max_steps", "max_chars"), CAPS)
def test_schema_and_model_accept_and_refuse_the_same_replies(version, max_steps, max_chars):
    model = output_model(version, max_steps, max_chars)
    schema = json_schema_of(model)
    check = jsonschema.Draft202012Validator(schema)
    n = min(max_steps, 4)
    good = _reply(version, n)
    assert check.is_valid(good) and _model_accepts(model, good)
    cases = _mutations(good)
    cases.append(("one step too many", _reply(version, max_steps + 1)))
    refused = 0
    for name, reply in cases:
        by_schema, by_model = check.is_valid(reply), _model_accepts(model, reply)
        assert by_schema == by_model, (name, by_schema, by_model)
        refused += not by_model
    assert refused >= len(cases) // 2  # not vacuous
    # where the two differ by design: a key the schema does not allow is refused by a strict decoder, ignored
    # (never read) by the model; a quote longer than maxLength is a decoder budget the parser does not enforce
    extra = {**good, "vgr_score": 100}
    assert not check.is_valid(extra) and _model_accepts(model, extra)
    if max_chars is not None:
        long = copy.deepcopy(good)
        long["steps"][0]["quote" if version >= 3 else "claim"] = "A -> B " * max_chars
        assert not check.is_valid(long) and _model_accepts(model, long)


def test_a_reply_is_accepted_or_refused_with_one_line():
    t = load_template()
    v = parse_verdict(json.dumps(_reply(3, 3)), t.max_steps, t.model)
    assert len(v.steps) == 3 and v.steps[0].quote == "A -> B0" and v.steps[1].relevant is True
    bad = _reply(3, 3)
    del bad["steps"][2]["fact"]["graph"]
    wrong_type = _reply(3, 2)
    wrong_type["steps"][0]["kind"] = "guess"
    for reply, where in ((bad, "steps.2.fact.graph"), (wrong_type, "steps.0.kind"),
                         ({"steps": []}, "final_answer_match"), (_reply(3, t.max_steps + 1), "steps")):
        with pytest.raises(ValueError) as e:
            parse_verdict(json.dumps(reply), t.max_steps, t.model)
        msg = str(e.value)
        assert "\n" not in msg and msg.startswith(f"schema: {where}: "), msg
    # the v2 model refuses a grounded reply (another schema) and the v3 model a v2 reply
    v2 = load_template("vgr_judge_v2")
    for reply, model in ((_reply(3, 1), v2.model), (_reply(2, 1), t.model)):
        with pytest.raises(ValueError, match=r"^schema: steps\.0\.\w+: Field required$"):
            parse_verdict(json.dumps(reply), 32, model)
    # strict JSON types: `true` is no graph number, "3" no number, 1 no boolean
    for path, bad in ((("fact", "graph"), True), (("fact", "value"), [3]), (("correct",), 1)):
        reply = _reply(3, 1)
        parent, key = _at(reply["steps"][0], path)
        parent[key] = bad
        with pytest.raises(ValueError, match=r"^schema: steps\.0\."):
            parse_verdict(json.dumps(reply), 32, t.model)
