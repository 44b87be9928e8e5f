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
    from test_judge_grounded_v4 import test_a_perfect_reader_scores_what_the_rule_judge_scores as same_as_rule

    failures = []
    for k, inst in enumerate(testmini_instances):
        # and on every 20th instance (all tasks): a judge reading every claim scores what the rule judge scores
        # (VGR v4: the two judges differ only in who reads), derivations in 7 notations and the attacks
        for check in (grounded, grounded_v3, *((same_as_rule,) if k % 20 == 0 else ())):
            try:
                check(inst)
            except AssertionError as e:
                failures.append(f"{inst.instance_id}: {check.__name__}: {str(e)[:300]}")
    assert len(testmini_instances) > 1000
    assert not failures, "\n".join(failures[:20]) + f"\n({len(failures)} failures)"
