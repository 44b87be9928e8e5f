"""GraphVerse's improvement tables (Tables 3 / 8, 11, 13): runs of direct inference, PoT, fine-tuned checkpoints
and a description -> LLM model, checked against a hand computation over the rows written; the comparisons spec
and its one-line errors; the report and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalcore.bootstrap import instance_draws
from evalcore.records import SAMPLE_SCHEMA
from gie import metrics as gm
from gie import report_tables as gt
from gie.comparisons import auto_comparisons, missing_arms
from gie.improvement_tables import (
    CATEGORIES,
    description_table,
    gie_ablation_table,
    improvement_table,
    improvement_tables,
)
from judge import vgr
from judge.schema import JUDGMENT_SCHEMA
from report import analysis
from report.comparisons import ComparisonError, parse_comparisons
from report.html_report import build_report
from report.report_tables import improvement

TASKS = ("SD", "CN", "TSP", "GED")  # Poly single, Poly single, NPH single, NPH paired
EDITS = ("none", "patch", "focus", "recolor")
# (run, model, prompt mode) -> (how often right: correct iff (i + shift) % every == 0, VGR base)
ARMS = {
    ("A", "base", "vision"): (3, 0, 20.0),
    ("A", "base", "pot"): (2, 0, 35.0),
    ("A", "base-sft", "vision"): (2, 1, 40.0),
    ("A", "rl-nogie", "vision"): (4, 1, 30.0),
    ("A", "rl-patch", "vision"): (3, 1, 45.0),
    ("A", "rl-recolor", "vision"): (2, 1, 50.0),
    ("B", "caption+base", "vision"): (5, 2, 10.0),
}
SPEC = {
    "improvements": [{"base": "base", "variants": [{"model": "base", "prompt_mode": "pot", "label": "Coder"},
                                                   {"model": "base-sft", "label": "SFT w/ GIE"}]}],
    "gie_ablation": [{"label": "RL", "without": "rl-nogie", "with": {"recolor": "rl-recolor", "patch": "rl-patch"}}],
    "description": [{"label": "base", "visual": "base", "description": "caption+base"}],
}


def _instances() -> list[tuple[str, int, str, str]]:
    """(task, level, instance_id, edit): 3 instances per task and level."""
    out = []
    for task in TASKS:
        for level in (1, 2):
            for k in range(3):
                out.append((task, level, f"{task.lower()}-L0{level}-{k:03d}", EDITS[(k + level) % len(EDITS)]))
    return out


def _rows() -> tuple[list[dict], list[dict]]:
    """Samples and judgments: each arm answers every instance once; one infra error and one judge error."""
    samples, judgments = [], []
    for (run, model, mode), (every, shift, vbase) in ARMS.items():
        for i, (task, level, iid, edit) in enumerate(_instances()):
            key = {"model": model, "benchmark": "graphverse", "instance_id": iid, "variant": edit,
                   "prompt_mode": mode, "repeat": 0}
            infra = model == "base" and mode == "vision" and i == 5
            correct = (i + shift) % every == 0
            samples.append({**key, "run_id": run, "version": "gv1", "task": task, "level": level,
                            "status": "infra_error" if infra else "ok",
                            "verdict": None if infra else ("correct" if correct else "wrong"),
                            "raw_response": "r", "parsed_answer": "1", "reason": ""})
            if infra:
                continue
            judge_error = model == "base-sft" and i == 7
            judgments.append({**key, "run_id": run, "task": task, "judge": "rule-based",
                              "judge_snapshot": "rule-based", "judge_template": "rule-v3", "judge_repeat": 0,
                              "status": "judge_error" if judge_error else "ok",
                              "vgr_score": None if judge_error else vbase + (i * 7) % 40 + (20 if correct else 0),
                              "final_answer_match": correct, "steps": "[]", "sample_verdict": "correct"
                              if correct else "wrong", "evidence_sha256": "e", "response_sha256": "r",
                              "cache_key": "c", "attempts": 0, "calls": 0, "cached": False})
    return samples, judgments


def _write_run(root: Path, run_id: str, samples: list[dict], judgments: list[dict]) -> Path:
    run = root / run_id
    (run / "samples" / "graphverse" / "all").mkdir(parents=True)
    pl.DataFrame([s for s in samples if s["run_id"] == run_id], schema=SAMPLE_SCHEMA).write_parquet(
        run / "samples" / "graphverse" / "all" / "p.parquet")
    models = sorted({s["model"] for s in samples if s["run_id"] == run_id})
    (run / "manifest.json").write_text(json.dumps({"run_id": run_id, "status": "complete", "config": {
        "models": [{"name": m} for m in models]}, "datasets": []}))
    jd = run / "judgments" / "rule-based"
    jd.mkdir(parents=True)
    pl.DataFrame([j for j in judgments if j["run_id"] == run_id], schema=JUDGMENT_SCHEMA).write_parquet(
        jd / "part-0.parquet")
    ident = {"judge": "rule-based", "judge_repeat": 0, "judge_snapshot": "rule-based", "judge_template": "rule-v3"}
    (run / "judgments" / "manifest.json").write_text(json.dumps({"default": ident, "judges": [ident]}))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("improve")
    samples, judgments = _rows()
    return [_write_run(root, "A", samples, judgments), _write_run(root, "B", samples, judgments)]


@pytest.fixture(scope="module")
def joined(runs) -> pl.DataFrame:
    from report.judgments import judged_samples

    return judged_samples(runs, "graphverse")


# ------------------------------------------------------------------------------------- hand computation


def _hand(model: str, mode: str, tasks: set[str] | None = None, weights: dict[str, int] | None = None
          ) -> tuple[float | None, float | None, int, int]:
    """(acc %, mean VGR, n, n scored) of one arm from the rows written, in plain Python; ``weights``: how often
    each instance id counts (a bootstrap replicate)."""
    samples, judgments = _rows()
    score = {(j["model"], j["prompt_mode"], j["instance_id"]): j for j in judgments}
    n = c = m = 0
    s = 0.0
    for r in samples:
        if (r["model"], r["prompt_mode"]) != (model, mode) or r["status"] == "infra_error":
            continue
        if tasks is not None and r["task"] not in tasks:
            continue
        w = 1 if weights is None else weights.get(r["instance_id"], 0)
        n += w
        c += w * (r["verdict"] == "correct")
        j = score.get((model, mode, r["instance_id"]))
        if j is not None and j["status"] == "ok":
            m += w
            s += w * j["vgr_score"]
    return (100 * c / n if n else None), (s / m if m else None), n, m


def _wilson(k: int, n: int) -> tuple[float, float]:
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (0.0 if k == 0 else centre - half), 100 * (1.0 if k == n else centre + half)


def _one(df: pl.DataFrame, **where) -> dict:
    out = df
    for k, v in where.items():
        out = out.filter(pl.col(k) == v)
    assert out.height == 1, (where, out)
    return out.row(0, named=True)


# ------------------------------------------------------------------------------------------------ tables


def test_table3_and_8_match_a_hand_computation(joined) -> None:
    spec = parse_comparisons(SPEC)
    long = improvement_table(joined, spec, n_boot=0)
    cats = {**{k: set(v) for k, v in CATEGORIES.items()}, "All": None}
    assert long.height == 3 * len(cats)  # direct + two variants, each per category
    for cat, tasks in cats.items():
        b_acc, b_vgr, b_n, b_m = _hand("base", "vision", tasks)
        direct = _one(long, role="direct", category=cat)
        assert (direct["n_acc"], direct["n_vgr"]) == (b_n, b_m)
        assert direct["acc"] == pytest.approx(b_acc) and direct["vgr"] == pytest.approx(b_vgr)
        assert direct["d_acc"] is None
        k = round(b_acc * b_n / 100)
        assert (direct["acc_lo"], direct["acc_hi"]) == pytest.approx(_wilson(k, b_n))
        for model, mode, row in (("base", "pot", "Coder"), ("base-sft", "vision", "SFT w/ GIE")):
            acc, v, n, m = _hand(model, mode, tasks)
            got = _one(long, row=row, category=cat)
            assert (got["model"], got["prompt_mode"], got["base_model"], got["base_prompt_mode"]) == (
                model, mode, "base", "vision")
            assert (got["n_acc"], got["n_vgr"]) == (n, m)
            assert got["acc"] == pytest.approx(acc) and got["d_acc"] == pytest.approx(acc - b_acc)
            assert got["vgr"] == pytest.approx(v) and got["d_vgr"] == pytest.approx(v - b_vgr)
    # the infra error counts nowhere, the judge error only in Acc
    assert _one(long, role="direct", category="All")["n_acc"] == 23
    sft = _one(long, row="SFT w/ GIE", category="All")
    assert (sft["n_acc"], sft["n_vgr"]) == (24, 23)
    # Acc and VGR-S of All agree with gie.metrics and judge.vgr (Table 1's sources)
    direct = joined.filter(pl.col("model") == "base", pl.col("prompt_mode") == "vision")
    assert _one(long, role="direct", category="All")["acc"] == pytest.approx(gm.accuracy(direct, by=())["acc"][0])
    assert _one(long, role="direct", category="All")["vgr"] == pytest.approx(vgr.vgr_table(direct, ())["vgr"][0])


def test_bootstrap_intervals_are_paired_resampling(joined) -> None:
    spec = parse_comparisons(SPEC)
    n_boot, seed = 40, 3
    long = improvement_table(joined, spec, n_boot=n_boot, seed=seed)
    got = _one(long, row="Coder", category="NPH")
    inst = pl.DataFrame([{"task": t, "level": lv, "instance_id": "gv1\x1f" + iid}
                         for t, lv, iid, _ in _instances()])
    draws = instance_draws(inst, n_boot, seed)
    d_acc, d_vgr, vgrs = [], [], []
    for b in range(n_boot):
        ids = [i.split("\x1f")[1] for i in draws.filter(pl.col("b") == b)["instance_id"].to_list()]
        weights = {i: ids.count(i) for i in set(ids)}
        a1, v1, *_ = _hand("base", "pot", set(CATEGORIES["NPH"]), weights)
        a0, v0, *_ = _hand("base", "vision", set(CATEGORIES["NPH"]), weights)
        d_acc.append(np.nan if a1 is None or a0 is None else a1 - a0)
        d_vgr.append(np.nan if v1 is None or v0 is None else v1 - v0)
        vgrs.append(np.nan if v1 is None else v1)
    for col, reps in (("d_acc", d_acc), ("d_vgr", d_vgr), ("vgr", vgrs)):
        lo, hi = np.nanquantile(np.array(reps), [0.025, 0.975], method="linear")
        assert (got[f"{col}_lo"], got[f"{col}_hi"]) == pytest.approx((lo, hi)), col
        assert got[f"{col}_lo"] <= got[col] <= got[f"{col}_hi"] or col == "vgr"
    # the same inputs and seed give the same bounds
    again = _one(improvement_table(joined, spec, n_boot=n_boot, seed=seed), row="Coder", category="NPH")
    assert again == got


def test_table11_and_13_match_a_hand_computation(joined) -> None:
    spec = parse_comparisons(SPEC)
    t11 = gie_ablation_table(joined, spec, n_boot=0)
    assert t11["edit"].to_list() == ["none", "patch", "recolor"]  # catalogue order, not the spec's
    a0, v0, *_ = _hand("rl-nogie", "vision")
    for edit, model in (("patch", "rl-patch"), ("recolor", "rl-recolor")):
        a, v, *_ = _hand(model, "vision")
        r = _one(t11, edit=edit)
        assert r["acc"] == pytest.approx(a) and r["d_acc"] == pytest.approx(a - a0)
        assert r["rel_acc"] == pytest.approx(100 * (a - a0) / a0)
        assert r["vgr"] == pytest.approx(v) and r["rel_vgr"] == pytest.approx(100 * (v - v0) / v0)
    assert _one(t11, edit="none")["row"] == "w/o GIE" and _one(t11, edit="none")["acc"] == pytest.approx(a0)
    t13 = description_table(joined, spec, n_boot=0)
    da, dv, *_ = _hand("caption+base", "vision")
    va, vv, *_ = _hand("base", "vision")
    d = _one(t13, setting="description")
    v = _one(t13, setting="visual")
    assert d["acc"] == pytest.approx(da) and d["vgr"] == pytest.approx(dv) and d["d_acc"] is None
    assert v["d_acc"] == pytest.approx(va - da) and v["d_vgr"] == pytest.approx(vv - dv)
    # as shown: "value [CI] ↑Δ [CI]" (Tables 3 / 8 / 11), "value [CI] (+Δ [CI])" (Table 13)
    shown = improvement_tables(joined, spec, n_boot=20)
    assert set(shown) == {"improvement", "table3", "table8", "gie_ablation", "table11", "description", "table13"}
    assert shown["table3"].columns == ["group", "method", *CATEGORIES, "All"]
    assert shown["table3"]["method"].to_list() == ["Direct", "Coder", "SFT w/ GIE"]
    coder = _one(shown["improvement"], row="Coder", category="All")
    arrow = "↑" if round(coder["d_acc"], 1) > 0 else "↓"
    assert _one(shown["table3"], method="Coder")["All"] == (
        f"{coder['acc']:.1f} [{coder['acc_lo']:.1f}, {coder['acc_hi']:.1f}] {arrow}{abs(coder['d_acc']):.1f} "
        f"[{coder['d_acc_lo']:.1f}, {coder['d_acc_hi']:.1f}]")
    vis = _one(shown["description"], setting="visual")
    assert _one(shown["table13"], model="base")["Visual Acc"].endswith(
        f"({vis['d_acc']:+.1f} [{vis['d_acc_lo']:.1f}, {vis['d_acc_hi']:.1f}])")
    assert "%)" in _one(shown["table11"], training="w/ patch only")["Acc"]


# ------------------------------------------------------------------------------------------------ the spec


@pytest.mark.parametrize(("raw", "line"), [
    ({"improvement": []}, "f.yaml: field improvement: Extra inputs are not permitted"),
    ({"improvements": [{"base": "b"}]}, "f.yaml: field improvements.0.variants: Field required"),
    ({"improvements": [{"base": "b", "variants": []}]}, "f.yaml: field improvements.0.variants: List should have at least 1 item"),
    ({"improvements": [{"base": "b", "variants": ["b"]}]}, "f.yaml: field improvements.0: variants.0 is the base itself (b, vision)"),
    ({"improvements": [{"base": "bad|name", "variants": ["x"]}]}, "f.yaml: field improvements.0.base.model: String should match pattern"),
    ({"gie_ablation": [{"without": "a", "with": {"blur": "b"}}]}, "f.yaml: field gie_ablation.0.with.blur.[key]: Input should be 'patch', 'composition', 'focus' or 'recolor'"),
    ({"description": [{"visual": "a", "description": {"model": "a", "mode": "pot"}}]}, "f.yaml: field description.0.description.mode: Extra inputs are not permitted"),
    ({"improvements": [{"base": "b", "variants": ["x", {"model": "x", "label": "again"}]}]}, "f.yaml: field improvements.0: variants.1 repeats an earlier variant (again)"),
    (["a"], "f.yaml: the top level must be a mapping"),
])
def test_a_wrong_spec_is_one_line(raw, line) -> None:
    with pytest.raises(ComparisonError) as e:
        parse_comparisons(raw, "f.yaml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(line), msg


def test_missing_arms_and_the_default(joined) -> None:
    from gie.improvement_tables import arms_present

    present = arms_present(joined)
    spec = parse_comparisons({"improvements": [{"base": "base", "variants": [{"model": "base", "prompt_mode": "cot"}]}]})
    [line] = missing_arms(spec, present, "c.yaml")
    assert line.startswith("c.yaml: field improvements.0.variants.0: no GraphVerse samples of model 'base' in "
                           "prompt mode 'cot' in these runs (they hold: base/pot, base/vision, base-sft/vision")
    auto = auto_comparisons(present)  # without a spec: PoT against the same model's direct inference
    assert [(i.base.key, [v.key for v in i.variants]) for i in auto.improvements] == [
        (("base", "vision"), [("base", "pot")])]


# ------------------------------------------------------------------------------------------------ report, CLI


def test_report_and_cli_render_the_tables(runs, tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from nphe4v_cli.report_command import report
    from report.html_report import self_contained_violations

    evil = {**SPEC, "gie_ablation": [{**SPEC["gie_ablation"][0], "label": "<script>alert(1)</script>"}]}
    res = build_report(runs, tmp_path / "r.html", tmp_path / "r.md", n_boot=20, comparisons=parse_comparisons(evil))
    page = res.html.read_text()
    assert self_contained_violations(page) == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    spec = parse_comparisons(SPEC)
    res = build_report(runs, tmp_path / "r.html", tmp_path / "r.md", n_boot=20, comparisons=spec)
    page = res.html.read_text()
    for name in ("table3", "table8", "table11", "table13"):
        assert f'id="gv-{name}"' in page and (tmp_path / "r_tables" / f"graphverse_{name}.csv").is_file()
    assert (tmp_path / "r_tables" / "graphverse_improvement.csv").is_file()
    md = res.markdown.read_text()
    assert "#### Table 3: Acc (%)" in md and "#### Table 13:" in md and "| RL | w/ recolor only |" in md
    # without a spec: PoT against direct inference only
    assert set(gt.graphverse(analysis.frame_of(runs))) and set(improvement(runs, n_boot=0, seed=0)) == {
        "improvement", "table3", "table8"}

    app = typer.Typer()
    app.command()(report)
    f = tmp_path / "cmp.yaml"
    f.write_text(json.dumps(SPEC))
    ok = CliRunner().invoke(app, [*map(str, runs), "--comparisons", str(f), "--n-boot", "0"])
    assert ok.exit_code == 0, ok.output
    assert "Table 3: Acc (%)" in ok.output and "Table 11" in ok.output and "Table 13" in ok.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("improvements:\n  - base: base\n    variants: [{model: ghost}]\n")
    out = CliRunner().invoke(app, [*map(str, runs), "--comparisons", str(bad)])
    assert out.exit_code == 2
    assert out.output.strip().splitlines() == [
        f"error: {bad}: field improvements.0.variants.0: no GraphVerse samples of model 'ghost' in prompt mode "
        "'vision' in these runs (they hold: base/pot, base/vision, base-sft/vision, caption+base/vision, "
        "rl-nogie/vision, rl-patch/vision, rl-recolor/vision)"]
    bad.write_text("improvements: [{base: base, variants: [x], extra: 1}]\n")
    out = CliRunner().invoke(app, [*map(str, runs), "--comparisons", str(bad)])
    assert out.exit_code == 2 and out.output.strip() == f"error: {bad}: field improvements.0.extra: Extra inputs are not permitted"


def test_the_documented_spec_is_valid() -> None:
    """docs/report.md's example spec parses as written."""
    import yaml

    doc = (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text()
    block = doc.split("### Improving VGR", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    spec = parse_comparisons(yaml.safe_load(block), "docs/report.md")
    assert (len(spec.improvements[0].variants), len(spec.gie_ablation[0].with_), len(spec.description)) == (3, 4, 1)
