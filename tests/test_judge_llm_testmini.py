"""The LLM judge path's hostile batteries over a whole generated testmini (slow), in a file of their own so that
they run beside the rule path's (tests/test_judge_vgr3.py) on another worker, reading the same generated split."""

from __future__ import annotations

import pytest


@pytest.mark.slow(reason="the hostile LLM judge's batteries over every instance of the whole testmini split")
def test_hostile_llm_judge_whole_testmini(testmini_instances):
    """The LLM judge path over the same whole testmini: a hostile judge (every fact called correct and leading
    to the answer, paraphrase floods, invented quotes and facts) scores what code says, true facts no optimum
    needs never raise a score, false ones never help, a bare wrong answer stays <= 10 (the fixture-row tests in
    test_judge_grounded*.py, run on every instance; the transport over HTTP is tested there)."""
    from test_judge_grounded import test_hostile_judge_scores_what_code_says as grounded
    from test_judge_grounded_v3 import test_hostile_judge_under_v3 as grounded_v3

    failures = []
    for inst in testmini_instances:
        for check in (grounded, grounded_v3):
            try:
                check(inst)
            except AssertionError as e:
                failures.append(f"{inst.instance_id}: {check.__name__}: {str(e)[:300]}")
    assert len(testmini_instances) > 1000
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} failures)"
