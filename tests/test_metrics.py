"""Unit tests of nphe4v.metrics on small hand-made tables; expected numbers are computed by hand in comments."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evalcore.schema import PROMPT_MODES, SampleRecord
from nphe4v.metrics import (
    LEADERBOARD_COLUMNS,
    aggregate,
    leaderboard,
    level_table,
    per_task,
    recognition_table,
)
from nphe4v.tasks import TASK_CLASS

LIM, TXT, FULL = PROMPT_MODES  # figure+limited_text, full_text_only, figure+full_text

SCHEMA: dict[str, Any] = {
    "run_id": pl.String, "model": pl.String, "benchmark": pl.String, "version": pl.String,
    "task": pl.String, "level": pl.Int64, "instance_id": pl.String, "variant": pl.String,
    "prompt_mode": pl.String, "repeat": pl.Int64, "status": pl.String, "verdict": pl.String,
    "reason": pl.String, "raw_response": pl.String, "parsed_answer": pl.String, "gold_value": pl.Float64,
    "error": pl.String, "prompt_sha256": pl.String, "image_sha256": pl.String,
    "template_version": pl.String, "latency_s": pl.Float64, "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64, "cost_usd": pl.Float64, "attempts": pl.Int64, "schema_version": pl.String,
}


def _record(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict(
        run_id="r", model="m", benchmark="nphardeval4v", version="4v", task="BSP", level=1,
        instance_id="BSP-1-0", variant="", prompt_mode=LIM, repeat=0, status="ok", verdict="correct",
        reason="", raw_response="x", parsed_answer=None, gold_value=None, error=None, prompt_sha256="",
        image_sha256="", template_version="t", latency_s=0.0, prompt_tokens=0, completion_tokens=0,
        cost_usd=0.0, attempts=1,
    )
    base.update(kw)
    return SampleRecord(**base).model_dump()  # validated against the real schema


def ans(level: int, verdict: str | None, *, task: str = "BSP", inst: int = 0, mode: str = LIM,
        status: str = "ok", model: str = "m", repeat: int = 0) -> dict[str, Any]:
    """One answer sample."""
    if status == "infra_error":
        verdict = None
    return _record(model=model, task=task, level=level, instance_id=f"{task}-{level}-{inst}",
                   prompt_mode=mode, status=status, verdict=verdict, repeat=repeat)


def rec(level: int, says: list[bool | None], *, variant: str = "match", task: str = "BSP", inst: int = 0,
        model: str = "m", status: str = "ok") -> list[dict[str, Any]]:
    """Recognition asks, one per entry of `says` (True = YES, False = NO, None = unparsable)."""
    truth = variant == "match"
    rows = []
    for r, s in enumerate(says):
        st = status
        verdict = None if st == "infra_error" else ("parse_error" if s is None else
                                                    ("correct" if s == truth else "wrong"))
        rows.append(_record(
            model=model, task=task, level=level, instance_id=f"{task}-{level}-{inst}", variant=variant,
            prompt_mode="recognition", repeat=r, status=st, verdict=verdict,
            parsed_answer=None if s is None or st != "ok" else ("true" if s else "false"),
        ))
    return rows


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMA)


def one(df: pl.DataFrame, **where: Any) -> dict[str, Any]:
    for k, v in where.items():
        df = df.filter(pl.col(k) == v)
    assert df.height == 1, df
    return df.row(0, named=True)


# ----------------------------------------------------------------------------------------------- weights


def test_level_weights_one_to_ten_sum_55() -> None:
    # one question per level; correct at levels 8, 9, 10 only -> wa_l = 1 there, 0 elsewhere
    # AA = (8 + 9 + 10) / (1 + ... + 10) = 27 / 55
    df = frame([ans(lv, "correct" if lv >= 8 else "wrong") for lv in range(1, 11)])
    lv = level_table(df)
    assert lv["level"].to_list() == list(range(1, 11))
    assert lv["wa"].to_list() == pytest.approx([0.0] * 7 + [1.0] * 3)
    agg = aggregate(lv, by=["model"])
    assert one(agg)["AA"] == pytest.approx(27 / 55)
    assert one(agg)["AA_P"] == pytest.approx(27 / 55)
    assert one(agg)["n_rows"] == 10
    # only level 10 correct -> 10 / 55; only level 1 correct -> 1 / 55
    only10 = frame([ans(lv, "correct" if lv == 10 else "wrong") for lv in range(1, 11)])
    only1 = frame([ans(lv, "correct" if lv == 1 else "wrong") for lv in range(1, 11)])
    assert one(leaderboard(only10), prompt_mode=LIM)["AA_All"] == pytest.approx(10 / 55)
    assert one(leaderboard(only1), prompt_mode=LIM)["AA_All"] == pytest.approx(1 / 55)


def test_aggregate_uses_level_weights_within_group() -> None:
    # level 2: 1 of 2 correct -> wa = 0.5; level 4: 1 of 4 correct -> wa = 0.25
    # AA = (2*0.5 + 4*0.25) / (2 + 4) = 2 / 6 = 1/3; ER = mean(1, 1) = 1; n = 6
    rows = [ans(2, "correct", inst=0), ans(2, "wrong", inst=1)]
    rows += [ans(4, "correct" if i == 0 else "wrong", inst=i) for i in range(4)]
    agg = aggregate(level_table(frame(rows)), by=[])
    r = one(agg)
    assert r["AA"] == pytest.approx(1 / 3)
    assert r["ER"] == pytest.approx(1.0)
    assert r["n_questions"] == 6


# ----------------------------------------------------------------------------------------------- pooling


def test_pooling_over_prompt_modes() -> None:
    # limited: correct only at level 10 -> AA = 10/55
    # text:    correct only at level 1  -> AA = 1/55
    # full:    all wrong                -> AA = 0
    # pooled:  (10 + 1 + 0) / (55 * 3) = 11 / 165 = 1/15; n = 30
    rows = [ans(lv, "correct" if lv == 10 else "wrong", mode=LIM) for lv in range(1, 11)]
    rows += [ans(lv, "correct" if lv == 1 else "wrong", mode=TXT) for lv in range(1, 11)]
    rows += [ans(lv, "wrong", mode=FULL) for lv in range(1, 11)]
    lb = leaderboard(frame(rows))
    assert lb.columns == list(LEADERBOARD_COLUMNS)
    assert lb["prompt_mode"].to_list() == [LIM, TXT, FULL, "pooled"]
    assert lb["AA_All"].to_list() == pytest.approx([10 / 55, 1 / 55, 0.0, 1 / 15])
    assert lb["n"].to_list() == [10, 10, 10, 30]


def test_leaderboard_sorted_by_model_then_mode_order() -> None:
    rows = [ans(1, "correct", mode=m, model=name) for name in ("zeta", "alpha") for m in (FULL, LIM, TXT)]
    lb = leaderboard(frame(rows))
    assert lb.select("model", "prompt_mode").rows() == [
        ("alpha", LIM), ("alpha", TXT), ("alpha", FULL), ("alpha", "pooled"),
        ("zeta", LIM), ("zeta", TXT), ("zeta", FULL), ("zeta", "pooled"),
    ]


# ----------------------------------------------------------------------------------------------- ER / A'


def test_degeneracy_everything_recognised() -> None:
    # level 3, 4 questions: correct, correct, wrong, parse_error
    # ER = 3/4; A' = 2/3; A' * ER = 2/4 = C/n; RA = 1 (no recognition) -> wa = 0.5
    rows = [ans(3, v, inst=i) for i, v in enumerate(["correct", "correct", "wrong", "parse_error"])]
    r = one(level_table(frame(rows)))
    assert (r["n"], r["parsable"], r["correct"]) == (4, 3, 2)
    assert r["ER"] == pytest.approx(0.75)
    assert r["A_prime"] == pytest.approx(2 / 3)
    assert r["A_prime"] * r["ER"] == pytest.approx(2 / 4)
    assert r["wa"] == pytest.approx(0.5)
    # with every instance recognised 5/5 (and no false YES), nothing changes: RA = 1, wa = C/n = 0.5
    recs = [x for i in range(4) for x in rec(3, [True] * 5, inst=i) + rec(3, [False] * 5, inst=i,
                                                                               variant="mismatch")]
    r2 = one(level_table(frame(rows + recs)))
    assert r2["RA"] == pytest.approx(1.0)
    assert r2["RA_corrected"] == pytest.approx(1.0)
    assert r2["A_prime"] * r2["ER"] == pytest.approx(0.5)
    assert r2["wa"] == pytest.approx(0.5)


def test_infra_errors_are_excluded_everywhere() -> None:
    rows = [ans(1, "correct", inst=0), ans(1, "wrong", inst=1), ans(2, "parse_error", inst=0)]
    rows += rec(1, [True, True, True, False, False], inst=0) + rec(1, [False] * 5, inst=1)
    rows += rec(1, [False] * 5, inst=0, variant="mismatch")
    base = frame(rows)
    # infra rows: extra answer questions, extra recognition asks (which would flip majorities if counted as NO)
    noise = [ans(1, None, inst=2, status="infra_error"), ans(2, None, inst=1, status="infra_error"),
             ans(1, None, inst=0, status="infra_error", repeat=1)]
    noise += rec(1, [None] * 5, inst=0, status="infra_error")
    noise += rec(1, [None] * 3, inst=2, status="infra_error")
    noise += rec(1, [None] * 5, inst=0, variant="mismatch", status="infra_error")
    noisy = frame(rows + noise)
    assert_frame_equal(level_table(noisy), level_table(base))
    assert_frame_equal(leaderboard(noisy), leaderboard(base))
    assert_frame_equal(per_task(noisy), per_task(base))
    # recognition counts only the 5 real asks
    r = one(recognition_table(noisy), instance_id="BSP-1-0")
    assert (r["yes_count_match"], r["asks_match"], r["recognised"]) == (3, 5, True)
    # level 1: n = 2 (infra not counted), ER = 1, RA = 1/2 (inst 0 recognised, inst 1 not)
    r1 = one(level_table(noisy), level=1)
    assert r1["n"] == 2
    assert r1["RA"] == pytest.approx(0.5)


def test_infra_only_level_has_no_row() -> None:
    df = frame([ans(1, "correct"), ans(2, None, status="infra_error")])
    assert level_table(df)["level"].to_list() == [1]


def test_model_error_counts_as_unparsable() -> None:
    # 2 questions: one correct, one model_error -> n = 2, parsable = 1, ER = 0.5, A' = 1/1, wa = 0.5
    rows = [ans(1, "correct", inst=0), ans(1, "parse_error", inst=1, status="model_error")]
    r = one(level_table(frame(rows)))
    assert (r["n"], r["parsable"], r["correct"]) == (2, 1, 1)
    assert r["ER"] == pytest.approx(0.5)
    assert r["A_prime"] == pytest.approx(1.0)
    assert r["wa"] == pytest.approx(0.5)
    # a model_error row is unparsable even if a verdict slipped through
    rows2 = [ans(1, "correct", inst=0), ans(1, "correct", inst=1, status="model_error")]
    r2 = one(level_table(frame(rows2)))
    assert (r2["parsable"], r2["correct"]) == (1, 1)


def test_a_prime_zero_when_nothing_parsable() -> None:
    rows = [ans(1, "parse_error", inst=0), ans(1, "parse_error", inst=1, status="model_error")]
    r = one(level_table(frame(rows)))
    assert r["ER"] == pytest.approx(0.0)
    assert r["A_prime"] == pytest.approx(0.0)
    assert r["wa"] == pytest.approx(0.0)


def test_repeats_count_as_questions() -> None:
    # same instance asked twice (repeat 0 correct, repeat 1 wrong) -> n = 2, wa = 1/2
    rows = [ans(1, "correct", repeat=0), ans(1, "wrong", repeat=1)]
    r = one(level_table(frame(rows)))
    assert r["n"] == 2
    assert r["wa"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------------------------- recognition


def test_recognition_majority_vs_mean_rule() -> None:
    # inst 0: 2 YES of 5 -> not recognised (2 < 3), mean 0.4
    # inst 1: 5 YES of 5 -> recognised, mean 1.0
    rows = rec(1, [True, True, False, False, False], inst=0) + rec(1, [True] * 5, inst=1)
    rt = recognition_table(frame(rows))
    r0, r1 = one(rt, instance_id="BSP-1-0"), one(rt, instance_id="BSP-1-1")
    assert (r0["yes_count_match"], r0["asks_match"], r0["recognised"]) == (2, 5, False)
    assert r0["mean_yes_match"] == pytest.approx(0.4)
    assert (r1["yes_count_match"], r1["recognised"]) == (5, True)
    assert r1["mean_yes_match"] == pytest.approx(1.0)
    assert r0["false_yes"] is None and r0["asks_mismatch"] == 0  # no control asked
    # answers: inst 0 wrong, inst 1 correct
    # RA (majority) = 1/2; RA_mean = (0.4 + 1.0)/2 = 0.7
    # A' over recognised & parsable = {inst 1}: 1/1 = 1; ER = 1; wa = 1 * 0.5 * 1 = 0.5
    # wa_peer = C/n * RA_mean = 1/2 * 0.7 = 0.35
    rows += [ans(1, "wrong", inst=0), ans(1, "correct", inst=1)]
    r = one(level_table(frame(rows)))
    assert r["n_rec"] == 2
    assert r["RA"] == pytest.approx(0.5)
    assert r["RA_mean"] == pytest.approx(0.7)
    assert (r["recognised_parsable"], r["correct_recognised"]) == (1, 1)
    assert r["A_prime"] == pytest.approx(1.0)
    assert r["wa"] == pytest.approx(0.5)
    assert r["wa_peer"] == pytest.approx(0.35)
    assert r["false_yes_rate"] is None and r["RA_corrected"] is None


def test_recognition_paper_rule_counts_unparsable_as_not_yes() -> None:
    # the paper: recognised iff YES in >= 3 of the 5 asks; an unparsable ask is not a YES.
    # inst 0: 2 YES, 1 NO, 2 unparsable -> 2 of 5: not recognised (the parsed-majority variant says yes: 2 > 3/2)
    # inst 1: 3 YES of 5, the other 2 model_error -> 3 of 5: recognised; mean 3/5
    # inst 2: 3 YES, 2 NO -> recognised; inst 3: 2 YES, 3 NO -> not recognised
    rows = rec(1, [True, True, False, None, None], inst=0)
    rows += rec(1, [True, True, True], inst=1) + rec(1, [None, None], inst=1, status="model_error")
    rows += rec(1, [True, True, True, False, False], inst=2) + rec(1, [True, True, False, False, False], inst=3)
    rt = recognition_table(frame(rows))
    r0, r1 = one(rt, instance_id="BSP-1-0"), one(rt, instance_id="BSP-1-1")
    assert (r0["yes_count_match"], r0["parsed_match"], r0["asks_match"], r0["recognised"]) == (2, 3, 5, False)
    assert r0["recognised_of_parsed"] is True
    assert r0["mean_yes_match"] == pytest.approx(0.4)
    assert r0["var_yes_match"] == pytest.approx(0.4 * 0.6)
    assert (r1["parsed_match"], r1["asks_match"], r1["recognised"]) == (3, 5, True)
    assert r1["mean_yes_match"] == pytest.approx(0.6)
    assert one(rt, instance_id="BSP-1-2")["recognised"] is True
    assert one(rt, instance_id="BSP-1-3")["recognised"] is False
    # RA = 2 of 4 instances; RA_var = mean of the per-instance variances (0.24 each: 2 or 3 YES of 5)
    lv = one(level_table(frame([*rows, ans(1, "correct")])))
    assert lv["RA"] == pytest.approx(0.5)
    assert lv["RA_var"] == pytest.approx(0.24)


def test_ra_var_independent_of_numpy() -> None:
    # the variance over asks cross-checked with numpy's population variance of the 0/1 outcomes
    import numpy as np

    says = [[True, False, True, True, False], [True] * 5, [False, None, True, False, False]]
    rows = [r for i, s in enumerate(says) for r in rec(1, s, inst=i)] + [ans(1, "correct")]
    expected = float(np.mean([np.var([1.0 if x else 0.0 for x in s]) for s in says]))
    assert one(level_table(frame(rows)))["RA_var"] == pytest.approx(expected)
    lb = one(leaderboard(frame(rows)), prompt_mode="pooled")
    assert lb["RA_var"] == pytest.approx(expected)


def test_recognition_all_unparsable_is_not_recognised() -> None:
    # 0 parsed asks -> recognised False (0 > 0 is false), mean 0; the question drops out of A'
    rows = rec(1, [None] * 5) + [ans(1, "correct")]
    r = one(level_table(frame(rows)))
    assert r["RA"] == pytest.approx(0.0)
    assert r["RA_mean"] == pytest.approx(0.0)
    assert r["recognised_parsable"] == 0
    assert r["A_prime"] == pytest.approx(0.0)


def test_always_yes_model_ra_one_corrected_zero() -> None:
    # every match ask YES and every mismatch ask YES -> RA = 1, false_yes_rate = 1, RA_corrected = max(0, 1-1) = 0
    rows = []
    for lv in (1, 2):
        for i in range(2):
            rows += rec(lv, [True] * 5, inst=i) + rec(lv, [True] * 5, inst=i, variant="mismatch")
            rows.append(ans(lv, "correct", inst=i))
    rt = recognition_table(frame(rows))
    assert rt["recognised"].to_list() == [True] * 4
    assert rt["false_yes"].to_list() == [True] * 4
    assert rt["mean_yes_mismatch"].to_list() == pytest.approx([1.0] * 4)
    lv_t = level_table(frame(rows))
    assert lv_t["RA"].to_list() == pytest.approx([1.0, 1.0])
    assert lv_t["false_yes_rate"].to_list() == pytest.approx([1.0, 1.0])
    assert lv_t["RA_corrected"].to_list() == pytest.approx([0.0, 0.0])
    r = one(leaderboard(frame(rows)), prompt_mode="pooled")
    assert r["RA"] == pytest.approx(1.0)
    assert r["RA_corrected"] == pytest.approx(0.0)


def test_ra_corrected_partial() -> None:
    # 4 instances: match recognised 3 of 4 -> RA = 0.75; mismatch false YES on 1 of 4 -> 0.25
    # RA_corrected = 0.75 - 0.25 = 0.5
    rows = []
    for i in range(4):
        rows += rec(1, [i < 3] * 5, inst=i) + rec(1, [i == 0] * 5, inst=i, variant="mismatch")
        rows.append(ans(1, "correct", inst=i))
    r = one(level_table(frame(rows)))
    assert r["RA"] == pytest.approx(0.75)
    assert r["false_yes_rate"] == pytest.approx(0.25)
    assert r["RA_corrected"] == pytest.approx(0.5)
    # A' = 3/3 (inst 3 unrecognised, excluded); ER = 1; wa = 1 * 0.75 * 1 = 0.75
    assert r["wa"] == pytest.approx(0.75)


def test_missing_recognition_set_gives_ra_na_and_factor_one() -> None:
    # level 1 has recognition data (RA 0), level 2 has none -> RA = RA_mean = null (n/a: no experiment ran),
    # all questions recognised and wa taken with RA = 1
    rows = [ans(1, "correct"), ans(2, "correct"), ans(2, "wrong", inst=1)] + rec(1, [False] * 5)
    lv = level_table(frame(rows))
    r1, r2 = one(lv, level=1), one(lv, level=2)
    assert (r1["RA"], r1["n_rec"], r1["wa"]) == (pytest.approx(0.0), 1, pytest.approx(0.0))
    assert r2["n_rec"] == 0
    assert r2["RA"] is None and r2["RA_mean"] is None and r2["RA_var"] is None
    assert r2["RA_corrected"] is None
    assert r2["recognised_parsable"] == 2
    assert r2["wa"] == pytest.approx(0.5)  # A' = 1/2, ER = 1, RA factor 1
    assert r2["wa_peer"] == pytest.approx(0.5)
    # another model's recognition rows do not leak in
    other = rows + rec(2, [False] * 5, model="other")
    assert one(level_table(frame(other)).filter(pl.col("model") == "m"), level=2)["RA"] is None
    # a model with no recognition rows at all: RA n/a on the leaderboard, AA as with RA = 1
    board = leaderboard(frame([ans(1, "correct"), ans(2, "wrong")]))
    assert board["RA"].null_count() == board.height
    assert board.filter(pl.col("prompt_mode") == LIM)["AA_All"].item() == pytest.approx(1 / 3)


def test_recognition_shared_by_the_picture_modes() -> None:
    # one instance, unrecognised (1 YES of 5), answered correctly in both picture modes -> RA = 0, wa = 0 in both
    rows = rec(1, [True, False, False, False, False]) + [ans(1, "correct", mode=LIM), ans(1, "correct", mode=FULL)]
    lv = level_table(frame(rows))
    assert lv["prompt_mode"].to_list() == [LIM, FULL]
    assert lv["RA"].to_list() == pytest.approx([0.0, 0.0])
    assert lv["RA_mean"].to_list() == pytest.approx([0.2, 0.2])
    assert lv["wa"].to_list() == pytest.approx([0.0, 0.0])
    assert lv["wa_peer"].to_list() == pytest.approx([0.2, 0.2])  # C/n * RA_mean = 1 * 0.2


def test_text_only_mode_has_nothing_to_recognise() -> None:
    # The papers' RA is the recognition "of the problems in the visual prompts"; full_text_only sends none.
    # Level 2, instances 0..3: recognised 1 of 4 (inst 0); one false YES on the controls (inst 1).
    # Answers: all four correct in every mode.
    # picture modes: A' = 1/1 (only inst 0 recognised), RA = 1/4, ER = 1 -> wa = 0.25
    # text-only:     every question counts (no filter), no RA factor -> A' = 4/4, wa = 1; RA columns null
    rows = []
    for i in range(4):
        rows += rec(2, [i == 0] * 5, inst=i) + rec(2, [i == 1] * 5, inst=i, variant="mismatch")
        rows += [ans(2, "correct", inst=i, mode=m) for m in PROMPT_MODES]
    lv = level_table(frame(rows))
    lim, txt, full = (one(lv, prompt_mode=m) for m in PROMPT_MODES)
    for r in (lim, full):
        assert (r["RA"], r["wa"], r["recognised_parsable"], r["n_rec"]) == (
            pytest.approx(0.25), pytest.approx(0.25), 1, 4)
        assert r["RA_corrected"] == pytest.approx(0.0)  # max(0, 0.25 - 0.25)
    assert (txt["RA"], txt["RA_mean"], txt["RA_var"], txt["false_yes_rate"], txt["RA_corrected"]) == (
        None, None, None, None, None)
    assert (txt["n_rec"], txt["recognised_parsable"], txt["correct_recognised"]) == (0, 4, 4)
    assert txt["A_prime"] == pytest.approx(1.0)
    assert txt["wa"] == pytest.approx(1.0)
    assert txt["wa_peer"] == pytest.approx(1.0)
    lb = leaderboard(frame(rows))
    t = one(lb, prompt_mode=TXT)
    assert (t["RA"], t["RA_corrected"], t["RA_var"]) == (None, None, None)
    assert t["AA_All"] == pytest.approx(1.0)
    # pooled: RA averages the picture modes only; AA pools wa over the three modes: (0.25 + 1 + 0.25) / 3
    p = one(lb, prompt_mode="pooled")
    assert p["RA"] == pytest.approx(0.25)
    assert p["AA_All"] == pytest.approx(1.5 / 3)
    # the text-only AA does not move whatever the recognition outcome
    never = [r for r in rows if r["prompt_mode"] != "recognition"]
    never += [x for i in range(4) for x in rec(2, [False] * 5, inst=i)]
    assert one(leaderboard(frame(never)), prompt_mode=TXT)["AA_All"] == pytest.approx(1.0)
    assert one(leaderboard(frame(never)), prompt_mode=LIM)["AA_All"] == pytest.approx(0.0)


# ----------------------------------------------------------------------------------------------- leaderboard


def _perfect_run(model: str = "m") -> list[dict[str, Any]]:
    rows = []
    for task in TASK_CLASS:
        for lv in range(1, 11):
            rows += rec(lv, [True] * 5, task=task, model=model)
            rows += rec(lv, [False] * 5, task=task, model=model, variant="mismatch")
            rows += [ans(lv, "correct", task=task, mode=m, model=model) for m in PROMPT_MODES]
    return rows


def test_perfect_model() -> None:
    lb = leaderboard(frame(_perfect_run()))
    assert lb.height == 4
    for col in ("ER", "AA_P", "AA_NPC", "AA_NPH", "AA_All"):
        assert lb[col].to_list() == pytest.approx([1.0] * 4), col
    for col in ("RA", "RA_corrected"):  # full_text_only has no picture to recognise: null there
        assert lb[col].to_list() == [pytest.approx(1.0), None, pytest.approx(1.0), pytest.approx(1.0)], col
    # 9 tasks x 10 levels per mode; 270 pooled
    assert lb["n"].to_list() == [90, 90, 90, 270]


def test_class_aa_split_by_complexity() -> None:
    # BSP (P) all correct, KSP (NPC) correct only at level 10, nothing for NPH; one mode
    # AA_P = 1; AA_NPC = 10/55; AA_NPH = null; AA_All = (55 + 10) / (55 + 55) = 65/110
    rows = [ans(lv, "correct", task="BSP") for lv in range(1, 11)]
    rows += [ans(lv, "correct" if lv == 10 else "wrong", task="KSP") for lv in range(1, 11)]
    r = one(leaderboard(frame(rows)), prompt_mode=LIM)
    assert r["AA_P"] == pytest.approx(1.0)
    assert r["AA_NPC"] == pytest.approx(10 / 55)
    assert r["AA_NPH"] is None
    assert r["AA_All"] == pytest.approx(65 / 110)
    assert r["RA_corrected"] is None


def test_missing_class_gives_null_not_crash() -> None:
    lb = leaderboard(frame([ans(1, "correct", task="TSP")]))
    r = one(lb, prompt_mode="pooled")
    assert r["AA_P"] is None and r["AA_NPC"] is None
    assert r["AA_NPH"] == pytest.approx(1.0)


def test_empty_input() -> None:
    lb = leaderboard(frame([]))
    assert lb.columns == list(LEADERBOARD_COLUMNS) and lb.height == 0
    assert level_table(frame([])).height == 0
    assert recognition_table(frame([])).height == 0


def test_per_task_pooled() -> None:
    # BSP: limited all correct (AA 1), text all wrong (AA 0) -> pooled 55/110 = 0.5
    rows = [ans(lv, "correct", mode=LIM) for lv in range(1, 11)]
    rows += [ans(lv, "wrong", mode=TXT) for lv in range(1, 11)]
    rows += [ans(1, "correct", task="MSP")]
    pt = per_task(frame(rows))
    assert pt.select("task", "prompt_mode").rows() == [
        ("BSP", LIM), ("BSP", TXT), ("BSP", "pooled"), ("MSP", LIM), ("MSP", "pooled"),
    ]
    assert pt["AA"].to_list() == pytest.approx([1.0, 0.0, 0.5, 1.0, 1.0])
    assert pt["complexity"].to_list() == ["P", "P", "P", "NPH", "NPH"]
    assert pt["n"].to_list() == [10, 10, 20, 1, 1]


def test_lazyframe_and_parquet_inputs(tmp_path: Any) -> None:
    rows = [ans(lv, "correct" if lv % 2 else "wrong", mode=m) for lv in range(1, 11) for m in (LIM, FULL)]
    rows += rec(1, [True, False, True, True, None])
    df = frame(rows)
    (tmp_path / "samples" / "a").mkdir(parents=True)
    df.head(10).write_parquet(tmp_path / "samples" / "a" / "part0.parquet")
    df.slice(10).write_parquet(tmp_path / "samples" / "part1.parquet")
    scanned = pl.scan_parquet(f"{tmp_path}/samples/**/*.parquet")
    for fn in (leaderboard, level_table, recognition_table, per_task):
        assert_frame_equal(fn(df.lazy()), fn(df))
        assert_frame_equal(fn(scanned), fn(df))
    assert_frame_equal(aggregate(level_table(df).lazy(), by=["model"]), aggregate(level_table(df), by=["model"]))


# ----------------------------------------------------------------------------------------------- papers' parser


def test_paper_parser_columns_beside_ours() -> None:
    """ER_paper / AA_paper: ER and AA_All with the papers' parse; n/a for runs that predate the column."""
    from nphe4v.metrics import primary_parse

    schema = {**SCHEMA, "verdict_paper": pl.String, "parsed_paper": pl.String}
    # level 2, 4 questions per mode; ours: correct, correct, correct, wrong (ER 1, AA 3/4)
    # papers': correct, parse_error (e.g. JSON `true`), wrong, wrong -> ER 3/4, A' = 1/3, AA = 1/4
    ours = ["correct", "correct", "correct", "wrong"]
    paper = ["correct", "parse_error", "wrong", "wrong"]
    rows = [_record(level=2, instance_id=f"BSP-2-{i}", prompt_mode=m, verdict=o, verdict_paper=p)
            for m in (LIM, TXT) for i, (o, p) in enumerate(zip(ours, paper, strict=True))]
    rows += rec(2, [True] * 5, inst=0)  # only inst 0 has recognition data; the rest count as recognised
    df = pl.DataFrame(rows, schema=schema)
    lb = leaderboard(df)
    for mode in (LIM, TXT, "pooled"):
        r = one(lb, prompt_mode=mode)
        assert (r["ER"], r["AA_All"]) == (pytest.approx(1.0), pytest.approx(0.75)), mode
        assert (r["ER_paper"], r["AA_paper"]) == (pytest.approx(0.75), pytest.approx(0.25)), mode
    # parser: paper makes the papers' parse primary: the headline columns equal the paper columns
    swapped = leaderboard(primary_parse(df, "paper"))
    assert swapped["ER"].to_list() == pytest.approx(lb["ER_paper"].to_list())
    assert swapped["AA_All"].to_list() == pytest.approx(lb["AA_paper"].to_list())
    # recognition rows never change (their verdict_paper is null)
    assert_frame_equal(recognition_table(primary_parse(df, "paper")), recognition_table(df))
    with pytest.raises(ValueError, match="parser must be one of"):
        primary_parse(df, "strict")
    # a run written before the column: n/a (null), not 0; a group mixing old and new rows: n/a too
    old = leaderboard(frame([_record(level=1, verdict="correct")]))
    assert (old["ER_paper"].to_list(), old["AA_paper"].to_list()) == ([None, None], [None, None])
    mixed = pl.concat([df, pl.DataFrame([_record(level=3, verdict="correct", prompt_mode=LIM)], schema=schema)])
    m = leaderboard(mixed)
    assert one(m, prompt_mode=LIM)["ER_paper"] is None and one(m, prompt_mode="pooled")["AA_paper"] is None
    assert one(m, prompt_mode=TXT)["ER_paper"] == pytest.approx(0.75)


def test_a_run_written_before_the_issue_19_columns_still_loads(tmp_path: Any) -> None:
    """Shards without value_consistent / parsed_paper / verdict_paper read back with them null; the leaderboard
    shows the papers'-parser columns as n/a."""
    from evalcore.records import SAMPLE_SCHEMA, read_samples

    rows = [ans(lv, "correct") for lv in (1, 2)]
    old = pl.DataFrame(rows, schema=SCHEMA)  # the schema of an old run: no new columns
    assert "verdict_paper" not in old.columns
    (tmp_path / "samples" / "nphardeval4v" / "m").mkdir(parents=True)
    old.write_parquet(tmp_path / "samples" / "nphardeval4v" / "m" / "part-0.parquet")
    df = read_samples(tmp_path)
    assert df.columns == list(SAMPLE_SCHEMA)
    assert df["verdict_paper"].to_list() == [None, None] and df["value_consistent"].to_list() == [None, None]
    lb = leaderboard(df)
    assert lb["AA_All"].to_list() == pytest.approx([1.0, 1.0])
    assert lb["ER_paper"].to_list() == [None, None] and lb["AA_paper"].to_list() == [None, None]


def test_tables_are_bit_identical_whatever_order_the_samples_come_in() -> None:
    """A leaderboard is reproducible: the same samples read in another order (shards listed differently, Ray
    results arriving in another order, polars' parallel group-by) give the same bits in every cell, not a float
    summed in another order whose last digit then prints as .852 on one run and .853 on the next."""
    import random

    rnd = random.Random(7)
    rows: list[dict[str, Any]] = []
    for model in ("a", "b", "c"):
        for task in ("BSP", "SPP", "TSP", "GCP", "KSP"):
            for level in range(1, 11):
                for inst in range(7):
                    for mode in PROMPT_MODES:
                        rows.append(ans(level, rnd.choice(["correct", "wrong", "parse_error"]), task=task,
                                        inst=inst, mode=mode, model=model))
                    says = [rnd.random() < 0.6 for _ in range(5)]
                    rows += rec(level, says, task=task, inst=inst, model=model)
                    rows += rec(level, [rnd.random() < 0.3 for _ in range(5)], variant="mismatch", task=task,
                                inst=inst, model=model)
    base = frame(rows)
    want_board, want_tasks = leaderboard(base), per_task(base)
    for seed in range(6):
        shuffled = base.sample(fraction=1.0, shuffle=True, seed=seed)
        assert_frame_equal(leaderboard(shuffled), want_board, check_exact=True)
        assert_frame_equal(per_task(shuffled), want_tasks, check_exact=True)
