"""GraphVerse metrics on hand-made sample tables: every number below is worked out by hand."""

from __future__ import annotations

import math

import polars as pl
import pytest

from gie.metrics import acc_table, accuracy, by_edit, poly_vs_nph, single_vs_paired, wilson


def row(model: str, task: str, verdict: str | None, variant: str = "none", status: str = "ok",
        benchmark: str = "graphverse") -> dict[str, object]:
    return {"model": model, "benchmark": benchmark, "task": task, "variant": variant, "status": status,
            "verdict": verdict, "instance_id": "x", "prompt_mode": "figure+limited_text", "repeat": 0}


def frame(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema_overrides={"verdict": pl.String})


def samples() -> pl.DataFrame:
    """Model m1: SD 3/4, CN 1/2, MCP 1/4, GED 0/2. Model m2: SD 2/2, MCP 2/2, MCS 1/2.
    Noise that must not count: infra errors (any verdict) and another benchmark's rows."""
    rows: list[dict[str, object]] = []
    rows += [row("m1", "SD", "correct", "none"), row("m1", "SD", "correct", "patch"),
             row("m1", "SD", "correct", "focus"), row("m1", "SD", "wrong", "patch")]
    rows += [row("m1", "CN", "correct", "none"), row("m1", "CN", "parse_error", "recolor")]
    rows += [row("m1", "MCP", "correct", "composition"), row("m1", "MCP", "wrong", "none"),
             row("m1", "MCP", "parse_error", "none"), row("m1", "MCP", "parse_error", "none", status="model_error")]
    rows += [row("m1", "GED", "wrong", "none"), row("m1", "GED", "wrong", "patch")]
    rows += [row("m2", "SD", "correct"), row("m2", "SD", "correct", "patch")]
    rows += [row("m2", "MCP", "correct"), row("m2", "MCP", "correct", "focus")]
    rows += [row("m2", "MCS", "correct"), row("m2", "MCS", "wrong")]
    # excluded everywhere
    rows += [row("m1", "SD", None, status="infra_error"), row("m2", "MCS", "correct", status="infra_error")]
    rows += [row("m1", "SD", "wrong", benchmark="nphardeval4v"), row("m3", "TSP", "correct", benchmark="other")]
    return frame(rows)


def test_wilson_known_values() -> None:
    # p = 0.5, n = 4: centre 0.5, half = z * sqrt(1/16 + z^2/64) / (1 + z^2/4)
    z = 1.959963984540054
    half = z * math.sqrt(1 / 16 + z * z / 64) / (1 + z * z / 4)
    lo, hi = wilson(2, 4)
    assert lo == pytest.approx(100 * (0.5 - half)) and hi == pytest.approx(100 * (0.5 + half))
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(100.0)
    assert wilson(0, 0) == (0.0, 100.0)
    # 1/1: the Wilson lower bound is 1 / (1 + z^2) = 20.65 %
    assert wilson(1, 1)[0] == pytest.approx(100 / (1 + z * z))


def test_accuracy_per_model_task() -> None:
    out = accuracy(samples())
    got = {(r["model"], r["task"]): (r["n"], r["correct"], r["acc"]) for r in out.iter_rows(named=True)}
    assert got == {
        ("m1", "SD"): (4, 3, 75.0), ("m1", "CN"): (2, 1, 50.0), ("m1", "MCP"): (4, 1, 25.0),
        ("m1", "GED"): (2, 0, 0.0), ("m2", "SD"): (2, 2, 100.0), ("m2", "MCP"): (2, 2, 100.0),
        ("m2", "MCS"): (2, 1, 50.0),
    }
    # canonical task order within a model: SD, CN, MCP, GED
    assert out.filter(pl.col("model") == "m1")["task"].to_list() == ["SD", "CN", "MCP", "GED"]
    for r in out.iter_rows(named=True):
        lo, hi = wilson(r["correct"], r["n"])
        assert r["ci_low"] == pytest.approx(lo) and r["ci_high"] == pytest.approx(hi)
        assert r["ci_low"] <= r["acc"] <= r["ci_high"]


def test_accuracy_pooled_and_lazy() -> None:
    out = accuracy(samples().lazy(), by=())
    assert out.rows() == [(18, 10, pytest.approx(100 * 10 / 18), pytest.approx(wilson(10, 18)[0]),
                           pytest.approx(wilson(10, 18)[1]))]


def test_infra_errors_never_change_anything() -> None:
    base = samples()
    extra = frame([row("m1", "SD", "wrong", status="infra_error"), row("m9", "CN", None, status="infra_error")])
    assert accuracy(base).equals(accuracy(pl.concat([base, extra])))
    assert acc_table(base).equals(acc_table(pl.concat([base, extra])))


def test_acc_table() -> None:
    out = acc_table(samples())
    assert out.columns == ["model", "SD", "CN", "MCP", "GED", "MCS", "All"]
    m1, m2 = out.rows(named=True)
    assert (m1["model"], m1["SD"], m1["CN"], m1["MCP"], m1["GED"], m1["MCS"]) == ("m1", 75.0, 50.0, 25.0, 0.0, None)
    assert m1["All"] == pytest.approx(100 * 5 / 12)
    assert (m2["SD"], m2["CN"], m2["MCP"], m2["GED"], m2["MCS"]) == (100.0, None, 100.0, None, 50.0)
    assert m2["All"] == pytest.approx(100 * 5 / 6)


def test_by_edit() -> None:
    out = by_edit(samples())
    got = {(r["model"], r["variant"]): (r["n"], r["correct"], r["delta_vs_none"]) for r in out.iter_rows(named=True)}
    # m1 none: SD 1/1, CN 1/1, MCP 0/3, GED 0/1 -> 2/6 = 33.3 %
    base1 = 100 * 2 / 6
    assert got[("m1", "none")] == (6, 2, pytest.approx(0.0))
    assert got[("m1", "patch")] == (3, 1, pytest.approx(100 / 3 - base1))
    assert got[("m1", "focus")] == (1, 1, pytest.approx(100 - base1))
    assert got[("m1", "composition")] == (1, 1, pytest.approx(100 - base1))
    assert got[("m1", "recolor")] == (1, 0, pytest.approx(-base1))
    # m2 none: SD, MCP, MCS correct, MCS wrong -> 3/4
    assert got[("m2", "none")] == (4, 3, pytest.approx(0.0))
    assert got[("m2", "patch")] == (1, 1, pytest.approx(25.0))
    assert out.filter(pl.col("model") == "m1")["variant"].to_list() == ["none", "patch", "composition", "focus",
                                                                        "recolor"]


def test_single_vs_paired() -> None:
    out = single_vs_paired(samples())
    got = {(r["model"], r["setting"]): (r["n"], r["correct"], r["acc"]) for r in out.iter_rows(named=True)}
    assert got == {("m1", "single"): (10, 5, 50.0), ("m1", "paired"): (2, 0, 0.0),
                   ("m2", "single"): (4, 4, 100.0), ("m2", "paired"): (2, 1, 50.0)}
    assert out["setting"].to_list() == ["single", "paired", "single", "paired"]


def test_poly_vs_nph_per_model_and_family() -> None:
    # m1: Poly = mean(SD 75, CN 50) = 62.5; NPH = mean(MCP 25, GED 0) = 12.5; drop = 50 / 62.5 = 0.8
    # m2: Poly = SD 100; NPH = mean(MCP 100, MCS 50) = 75; drop = 0.25
    per_model = {r["family"]: r for r in poly_vs_nph(samples()).iter_rows(named=True)}
    assert per_model["m1"]["Poly"] == pytest.approx(62.5) and per_model["m1"]["NPH"] == pytest.approx(12.5)
    assert per_model["m1"]["rel_drop"] == pytest.approx(0.8)
    assert per_model["m2"]["rel_drop"] == pytest.approx(0.25) and per_model["m2"]["models"] == 1
    # one family: Poly = (62.5 + 100) / 2 = 81.25, NPH = (12.5 + 75) / 2 = 43.75, drop = 37.5 / 81.25
    fam = poly_vs_nph(samples(), {"m1": "F", "m2": "F"}).row(0, named=True)
    assert fam["family"] == "F" and fam["models"] == 2
    assert fam["Poly"] == pytest.approx(81.25) and fam["NPH"] == pytest.approx(43.75)
    assert fam["rel_drop"] == pytest.approx(37.5 / 81.25)


def test_poly_vs_nph_missing_groups() -> None:
    # Only NP-hard tasks: Poly null, so rel_drop null; Poly 0 also gives null (no division by zero).
    only_nph = frame([row("a", "TSP", "correct"), row("b", "SD", "wrong"), row("b", "MIS", "correct")])
    got = {r["family"]: r for r in poly_vs_nph(only_nph).iter_rows(named=True)}
    assert got["a"]["Poly"] is None and got["a"]["NPH"] == 100.0 and got["a"]["rel_drop"] is None
    assert got["b"]["Poly"] == 0.0 and got["b"]["rel_drop"] is None
    empty = poly_vs_nph(frame([row("a", "SD", None, status="infra_error")]))
    assert empty.is_empty() and empty.columns == ["family", "models", "Poly", "NPH", "rel_drop"]


def test_witness_validity() -> None:
    from gie.metrics import witness_validity

    rows = [
        {**row("m1", "DIAM", "correct"), "witness_valid": None, "value_consistent": None},  # value only
        {**row("m1", "DIAM", "correct"), "witness_valid": True, "value_consistent": True},
        {**row("m1", "DIAM", "correct"), "witness_valid": False, "value_consistent": None},  # right value, wrong path
        {**row("m1", "DIAM", "wrong"), "witness_valid": True, "value_consistent": False},
        {**row("m1", "DIAM", "parse_error"), "witness_valid": None, "value_consistent": None},  # not an answer
        {**row("m1", "TSP", "correct"), "witness_valid": True, "value_consistent": False},  # Length misstated
        {**row("m1", "TSP", "correct"), "witness_valid": True, "value_consistent": None},  # no Length given
        {**row("m1", "MCP", "wrong"), "witness_valid": False, "value_consistent": None},
        {**row("m1", "MCP", "correct", status="infra_error"), "witness_valid": True, "value_consistent": False},
    ]
    frame = pl.DataFrame(rows, schema_overrides={"verdict": pl.String, "witness_valid": pl.Boolean,
                                                 "value_consistent": pl.Boolean})
    got = witness_validity(frame)
    assert got.to_dicts() == [
        {"model": "m1", "task": "DIAM", "answered": 4, "with_witness": 3, "valid_witness": 2,
         "valid_pct": pytest.approx(200 / 3), "correct_invalid_witness": 1, "with_value": 2,
         "consistent_pct": 50.0, "correct_inconsistent_value": 0},
        {"model": "m1", "task": "TSP", "answered": 2, "with_witness": 2, "valid_witness": 2, "valid_pct": 100.0,
         "correct_invalid_witness": 0, "with_value": 1, "consistent_pct": 0.0, "correct_inconsistent_value": 1},
        {"model": "m1", "task": "MCP", "answered": 1, "with_witness": 1, "valid_witness": 0, "valid_pct": 0.0,
         "correct_invalid_witness": 0, "with_value": 0, "consistent_pct": None, "correct_inconsistent_value": 0},
    ]
    # a sample table from before the columns existed
    old = witness_validity(samples(), by=("model",))
    assert old["with_value"].to_list() == [0, 0] and old["consistent_pct"].null_count() == 2
    assert old["with_witness"].to_list() == [0, 0] and old["valid_pct"].null_count() == 2
