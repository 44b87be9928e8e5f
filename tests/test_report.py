"""The report: analysis tables on runs with known content, figures, Markdown/CSV outputs, the HTML file.

Two small runs are written by hand (per-sample Parquet + manifest) over tiny generated datasets (BSP, KSP,
TSP: one task per complexity class, levels 1-2, two instances per level):

run A (dataset version "v1", status "running")
  alpha  LVLM, 3 modes. figure modes: BSP, KSP correct; TSP L1 correct, TSP L2 one of two correct.
         full_text_only: the same except KSP all wrong. Recognition: match always YES; mismatch YES on TSP
         (false yes), NO elsewhere.
  beta   text-only LLM, full_text_only: BSP correct, KSP parse_error, TSP wrong.
  gamma  LVLM configured with 3 modes, has only figure+limited_text (2 of 12 rows infra_error), all wrong,
         no recognition.
  delta  configured, no rows at all.
run B (dataset version "v2", complete)
  alpha  every answer correct, every recognition match YES / mismatch NO.

Expected numbers (levels weigh 1 and 2, Σ = 3 per task and mode):
  alpha v1 AA per mode: limited = full = (3 + 3 + 1 + 2·0.5) / 9 = 8/9, text = (3 + 0 + 2) / 9 = 5/9,
  pooled = 21/27 = 7/9; AA_P = 1, AA_NPC = 6/9, AA_NPH = 2/3; RA = 1; RA_corrected = 2/3 (TSP levels 0).
  beta: ER = 8/12 -> Wilson [0.3906, 0.8619]; AA_P = 1, AA_NPC = AA_NPH = 0, AA_All = 3/9.
  alpha across versions (AA_All pooled): 7/9 and 1 -> min 7/9, mean 8/9, max 1, var (ddof 1) 2/81.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import markupsafe
import polars as pl
import pytest

from cluster.registry import load_registry
from evalcore.records import SAMPLE_SCHEMA
from gie import report_tables as gt
from nphe4v import bootstrap, consistency
from nphe4v import report_tables as nt
from nphe4v.report_tables import ANSWER_CHECK_COLUMNS
from report import analysis, figures
from report.html_report import build_report, self_contained_violations

TASKS = ["BSP", "KSP", "TSP"]
LEVELS = (1, 2)
MODES = ["figure+limited_text", "full_text_only", "figure+full_text"]
XSS = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'


def _row(run_id: str, version: str, model: str, iid: str, task: str, level: int, mode: str, *,
         variant: str = "", repeat: int = 0, status: str = "ok", verdict: str | None = "correct",
         parsed: str | None = None, raw: str | None = "ok", reason: str = "", bench: str = "nphardeval4v") -> dict:
    return {
        "run_id": run_id, "model": model, "benchmark": bench, "version": version, "task": task, "level": level,
        "instance_id": iid, "variant": variant, "prompt_mode": mode, "repeat": repeat, "status": status,
        "verdict": verdict if status == "ok" else None, "reason": reason, "raw_response": raw,
        "parsed_answer": parsed, "gold_value": 1.0, "error": None if status == "ok" else "boom",
        "prompt_sha256": "", "image_sha256": "", "template_version": "t", "latency_s": 0.0,
        "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.0, "attempts": 1, "schema_version": "1",
        "trace": None,
    }


def _instances() -> list[tuple[str, str, int, int]]:
    return [(f"{t.lower()}-L{lv:02d}-{i:03d}", t, lv, i) for t in TASKS for lv in LEVELS for i in range(2)]


def _rec_rows(run_id: str, version: str, model: str, false_yes_tasks: set[str]) -> list[dict]:
    rows = []
    for iid, task, lv, _i in _instances():
        for variant in ("match", "mismatch"):
            yes = variant == "match" or task in false_yes_tasks
            for r in range(5):
                rows.append(_row(run_id, version, model, iid, task, lv, "recognition", variant=variant, repeat=r,
                                 verdict="correct" if yes == (variant == "match") else "wrong",
                                 parsed="true" if yes else "false", raw="YES" if yes else "NO"))
    return rows


def _write_run(root: Path, run_id: str, version: str, dataset: Path, rows: list[dict], models: list[dict],
               status: str) -> Path:
    run = root / run_id
    frame = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    for (model,), part in frame.group_by(["model"], maintain_order=True):
        folder = run / "samples" / "nphardeval4v" / str(model)
        folder.mkdir(parents=True, exist_ok=True)
        part.write_parquet(folder / "part-0.parquet")
    (run / "samples").mkdir(parents=True, exist_ok=True)
    manifest = {
        "run_id": run_id, "status": status, "attempts": 1, "created_at": "2026-01-01T00:00:00+00:00",
        "config": {
            "name": run_id, "models": models, "prompt_modes": MODES, "repeats": 1,
            "recognition": {"enabled": True, "asks": 5, "controls": True, "temperature": 0.7},
            "sampling": {"temperature": 0.0, "max_tokens": "<redacted>", "seed": 0},
        },
        "datasets": [{"benchmark": "nphardeval4v", "version": version, "seed": 1, "path": str(dataset)}],
    }
    (run / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return run


def build_runs(root: Path) -> tuple[Path, Path]:
    """Write runs A and B (see the module docstring) under ``root``; returns their folders."""
    from nphe4v.generate import generate_version

    ds1, ds2 = root / "ds-v1", root / "ds-v2"
    generate_version(ds1, version="v1", seed=1, per_level=2, tasks=TASKS, levels=LEVELS, workers=1)
    generate_version(ds2, version="v2", seed=2, per_level=2, tasks=TASKS, levels=LEVELS, workers=1)

    rows: list[dict] = []
    for iid, task, lv, i in _instances():
        for mode in MODES:
            ok = not (task == "TSP" and lv == 2 and i == 1) and not (task == "KSP" and mode == "full_text_only")
            # every alpha answer carries hostile markup, so whichever sample the browser shows has it
            rows.append(_row("A", "v1", "alpha", iid, task, lv, mode, verdict="correct" if ok else "wrong",
                             raw=XSS, reason="</script><b>bold</b>"))
        verdict = {"BSP": "correct", "KSP": "parse_error", "TSP": "wrong"}[task]
        rows.append(_row("A", "v1", "beta", iid, task, lv, "full_text_only", verdict=verdict))
        infra = task == "BSP" and lv == 1
        rows.append(_row("A", "v1", "gamma", iid, task, lv, "figure+limited_text", verdict="wrong",
                         status="infra_error" if infra else "ok"))
    rows += _rec_rows("A", "v1", "alpha", {"TSP"})
    models = [{"name": "alpha"}, {"name": "beta", "text_only": True}, {"name": "gamma"}, {"name": "delta"}]
    run_a = _write_run(root, "A", "v1", ds1, rows, models, status="running")

    rows_b = [_row("B", "v2", "alpha", iid, task, lv, mode) for iid, task, lv, _ in _instances() for mode in MODES]
    rows_b += _rec_rows("B", "v2", "alpha", set())
    run_b = _write_run(root, "B", "v2", ds2, rows_b, [{"name": "alpha"}], status="complete")
    return run_a, run_b


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    return build_runs(tmp_path_factory.mktemp("report"))


def one(df: pl.DataFrame, **where) -> dict:
    out = df
    for k, v in where.items():
        out = out.filter(pl.col(k) == v)
    assert out.height == 1, f"{where}: {out.height} rows"
    return out.row(0, named=True)


# --------------------------------------------------------------------------------------------------- analysis


def test_samples_keeps_versions_apart(runs) -> None:
    df = analysis.samples(list(runs))
    assert set(df["run"].unique()) == {"A", "B"}
    assert df.filter(pl.col("version") == "v2").height == 12 * 3 + 120
    # the same instance id exists in both versions and is not merged
    assert df.filter(pl.col("instance_id") == "bsp-L01-000", pl.col("model") == "alpha",
                     pl.col("prompt_mode") == "full_text_only")["version"].sort().to_list() == ["v1", "v2"]


def test_leaderboard_values_intervals_counts(runs) -> None:
    lb = nt.leaderboard(analysis.frame_of(list(runs)), n_boot=200, seed=0)
    assert tuple(lb.columns) == nt.LEADERBOARD_COLUMNS
    a = one(lb, version="v1", model="alpha", prompt_mode="pooled")
    assert a["AA_All"] == pytest.approx(7 / 9)
    assert a["AA_P"] == pytest.approx(1) and a["AA_NPC"] == pytest.approx(6 / 9)
    assert a["AA_NPH"] == pytest.approx(2 / 3)
    assert a["RA"] == pytest.approx(1) and a["RA_corrected"] == pytest.approx(2 / 3)
    assert (a["n"], a["parsable"], a["correct"], a["n_instances"]) == (36, 36, 29, 12)
    assert (a["n_rec"], a["recognised"], a["n_control"], a["false_yes"]) == (12, 12, 12, 4)
    # BSP always correct: no resample can move AA_P
    assert (a["AA_P_lo"], a["AA_P_hi"]) == (pytest.approx(1), pytest.approx(1))
    # TSP L2 has one correct and one wrong instance: the interval is a real one around 2/3
    assert a["AA_NPH_lo"] < a["AA_NPH"] < a["AA_NPH_hi"]
    assert a["AA_NPH_lo"] >= 1 / 3 - 1e-9 and a["AA_NPH_hi"] <= 1 + 1e-9
    assert a["AA_All_lo"] <= a["AA_All"] <= a["AA_All_hi"]
    # ER = 36/36: Wilson [1 - ..., 1]
    assert a["ER_hi"] == 1.0 and 0.9 < a["ER_lo"] < 1.0
    modes = {r["prompt_mode"]: r["AA_All"] for r in lb.filter(version="v1", model="alpha").iter_rows(named=True)}
    assert modes["figure+limited_text"] == pytest.approx(8 / 9)
    assert modes["full_text_only"] == pytest.approx(5 / 9)

    b = one(lb, version="v1", model="beta", prompt_mode="pooled")
    assert b["ER"] == pytest.approx(8 / 12)
    assert (b["ER_lo"], b["ER_hi"]) == (pytest.approx(0.3906, abs=1e-4), pytest.approx(0.8619, abs=1e-4))
    assert b["AA_All"] == pytest.approx(3 / 9) and b["AA_NPC"] == 0 and b["AA_NPH"] == 0
    # text-only model on full_text_only: no picture, nothing to recognise: RA is null (n/a), no interval, n_rec 0
    assert b["RA"] is None and b["n_rec"] == 0 and b["RA_lo"] is None and b["RA_hi"] is None
    t = one(lb, version="v1", model="alpha", prompt_mode="full_text_only")
    assert (t["RA"], t["RA_lo"], t["RA_corrected"], t["n_rec"], t["n_control"]) == (None, None, None, 0, 0)

    g = one(lb, version="v1", model="gamma", prompt_mode="pooled")
    assert g["n"] == 10  # the 2 infra_error rows are not questions

    v2 = one(lb, version="v2", model="alpha", prompt_mode="pooled")
    assert v2["AA_All"] == 1 and v2["RA_corrected"] == 1


def test_bootstrap_is_seeded_and_matches_plain_resampling(runs) -> None:
    """The fast bootstrap (recognition reduced, integer ids) equals re-scoring each resampled sample table
    with metrics.leaderboard directly, and the same seed gives the same bounds."""
    from nphe4v import metrics

    df = analysis.samples(runs[0]).filter(pl.col("version") == "v1")
    n_boot = 25
    lb1 = nt.leaderboard(analysis.frame_of(df), n_boot=n_boot, seed=3)
    bootstrap._BOOT_CACHE.clear()
    lb2 = nt.leaderboard(analysis.frame_of(df), n_boot=n_boot, seed=3)
    assert lb1.equals(lb2)
    draws = bootstrap._draws(df.filter(pl.col("status") != "infra_error"), n_boot, 3)
    reps, task_reps = [], []
    for b in range(n_boot):
        d = draws.filter(pl.col("b") == b)
        res = df.join(d, on="instance_id", how="inner").with_columns(
            instance_id=pl.concat_str([pl.col("instance_id"), pl.lit("#"), pl.col("pos").cast(pl.String)]))
        reps.append(metrics.leaderboard(res).with_columns(b=pl.lit(b)))
        task_reps.append(metrics.per_task(res).with_columns(b=pl.lit(b)))
    cols = ("RA_corrected", "AA_P", "AA_NPC", "AA_NPH", "AA_All")
    ref = pl.concat(reps).group_by("model", "prompt_mode").agg(
        *[pl.col(c).quantile(q, interpolation="linear").alias(f"{c}_{s}") for c in cols
          for q, s in ((0.025, "lo"), (0.975, "hi"))])
    assert ref.height == lb1.height
    for r in ref.iter_rows(named=True):
        got = one(lb1, model=r["model"], prompt_mode=r["prompt_mode"])
        for c in cols:
            for s in ("lo", "hi"):
                assert got[f"{c}_{s}"] == pytest.approx(r[f"{c}_{s}"], nan_ok=True), (r["model"], c, s)
    pt = nt.per_task(analysis.frame_of(df), n_boot=n_boot, seed=3)
    tref = pl.concat(task_reps).group_by("model", "task", "prompt_mode").agg(
        lo=pl.col("AA").quantile(0.025, interpolation="linear"),
        hi=pl.col("AA").quantile(0.975, interpolation="linear"))
    for r in tref.iter_rows(named=True):
        got = one(pt, model=r["model"], task=r["task"], prompt_mode=r["prompt_mode"])
        assert (got["AA_lo"], got["AA_hi"]) == (pytest.approx(r["lo"]), pytest.approx(r["hi"]))


def test_wilson_columns() -> None:
    t = pl.DataFrame({"k": [8, 0, 10, 0], "n": [12, 10, 10, 0]}).select(*nt.wilson_columns("k", "n", "ER"))
    assert t.row(0) == (pytest.approx(0.3906, abs=1e-4), pytest.approx(0.8619, abs=1e-4))
    assert t["ER_lo"][1] == 0.0 and t["ER_hi"][2] == 1.0
    assert t.row(3) == (None, None)


def test_heatmap_table(runs) -> None:
    hm = nt.heatmap_table(analysis.frame_of(runs[0]))
    c = one(hm, model="alpha", task="TSP", level=2)
    assert (c["n"], c["correct"], c["accuracy"]) == (6, 3, 0.5)
    assert c["acc_lo"] < 0.5 < c["acc_hi"]
    assert c["wa"] == pytest.approx(0.5) and c["RA"] == 1 and c["RA_corrected"] == 0
    assert (c["n_rec"], c["recognised"], c["false_yes_rate"]) == (2, 2, 1.0)
    k = one(hm, model="alpha", task="KSP", level=1)
    assert (k["n"], k["correct"]) == (6, 4) and k["wa"] == pytest.approx(2 / 3)
    only_text = nt.heatmap_table(analysis.frame_of(runs[0]), prompt_mode="full_text_only")
    t = one(only_text, model="alpha", task="KSP", level=1)
    assert t["accuracy"] == 0
    # no picture in full_text_only: no RA and no recognition counts there
    assert (t["RA"], t["RA_lo"], t["n_rec"], t["RA_corrected"]) == (None, None, 0, None)


def test_class_profile_prompt_mode_ablation_lvlm_vs_llm(runs) -> None:
    prof = nt.class_profile(analysis.frame_of(runs[0]), n_boot=50)
    assert one(prof, model="alpha", complexity="NPC")["AA"] == pytest.approx(6 / 9)
    assert one(prof, model="beta", complexity="NPC")["ER"] == 0

    abl = nt.prompt_mode_ablation(analysis.frame_of(runs[0]), n_boot=50)
    t = one(abl, model="alpha", prompt_mode="full_text_only")
    assert t["delta_vs_limited"] == pytest.approx(-1 / 3) and not t["best"]
    assert one(abl, model="alpha", prompt_mode="figure+limited_text")["best"]  # tie with figure+full_text
    assert not one(abl, model="alpha", prompt_mode="figure+full_text")["best"]
    assert one(abl, model="beta", prompt_mode="full_text_only")["delta_vs_limited"] is None
    assert abl.filter(model="gamma").height == 1

    assert analysis.text_only_models(runs[0]) == {"beta"}
    vs = nt.lvlm_vs_llm(analysis.frame_of(runs[0]), text_only=analysis.text_only_models(runs[0]), n_boot=50)
    assert set(vs["kind"]) == {"LVLM", "LLM"}
    assert one(vs, kind="LLM", model="beta", complexity="P")["AA"] == pytest.approx(1)
    assert one(vs, kind="LLM", model="beta", complexity="NPC")["ER"] == 0
    lv = one(vs, kind="LVLM", model="alpha", complexity="NPH")
    assert lv["prompt_mode"] == "figure+limited_text" and lv["AA"] == pytest.approx(2 / 3)
    mean = one(vs, kind="LVLM", model="mean", complexity="P")
    assert mean["AA"] == pytest.approx((1 + 0) / 2)  # alpha 1, gamma 0


def test_version_consistency(runs) -> None:
    vc = consistency.version_consistency(analysis.frame_of(list(runs)))
    a = one(vc, model="alpha", task="All")
    assert a["n_versions"] == 2 and a["versions"] == "v1,v2"
    assert (a["AA_min"], a["AA_mean"], a["AA_max"]) == (pytest.approx(7 / 9), pytest.approx(8 / 9), 1.0)
    assert a["AA_var"] == pytest.approx(2 / 81)
    k = one(vc, model="alpha", task="KSP")
    assert (k["AA_min"], k["AA_max"]) == (pytest.approx(2 / 3), 1.0)
    b = one(vc, model="beta", task="All")
    assert b["n_versions"] == 1 and b["AA_var"] is None


def test_missing_parts(runs) -> None:
    mp = analysis.missing_parts(list(runs))
    details = mp["detail"].to_list()
    text = "\n".join(details)
    assert "run status is 'running'" in text
    assert "delta: no samples on nphardeval4v 'v1'" in details
    assert any(d.startswith("gamma: 2 infra_error samples") for d in details)
    assert "gamma: figure+limited_text: 10 of 12 samples on nphardeval4v 'v1'" in details
    assert "gamma: no full_text_only samples on nphardeval4v 'v1'" in details
    assert "gamma: no recognition samples on nphardeval4v 'v1' (RA n/a; AA takes RA as 1)" in details
    # complete parts are not reported: alpha (all modes + 120 recognition asks), beta (text-only), run B
    assert not mp.filter(pl.col("model").is_in(["alpha", "beta"])).height
    assert not mp.filter(pl.col("run") == "B").height
    # without manifests (a bare frame) the checks that need no config still work
    bare = analysis.missing_parts(analysis.samples(runs[0]))
    assert "gamma: no full_text_only samples" in bare["detail"].to_list()
    assert "gamma: no recognition samples (RA n/a; AA takes RA as 1)" in bare["detail"].to_list()


def test_graphverse_section_and_judge_missing(tmp_path) -> None:
    rows = []
    for model, good in (("m1", {"SD", "TSP"}), ("m2", {"SD"})):
        for task in ("SD", "TSP", "GED"):
            for k, edit in enumerate(("none", "patch")):
                rows.append(_row("G", "gv1", model, f"{task.lower()}-{k}", task, 1, "vision", variant=edit,
                                 verdict="correct" if task in good else "wrong", bench="graphverse"))
    run = tmp_path / "G"
    frame = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    (run / "samples" / "graphverse" / "all").mkdir(parents=True)
    frame.write_parquet(run / "samples" / "graphverse" / "all" / "part-0.parquet")
    (run / "manifest.json").write_text(json.dumps({"run_id": "G", "status": "complete", "config": {
        "models": [{"name": "m1"}, {"name": "m2"}]}, "datasets": []}))
    gv = gt.graphverse(analysis.frame_of(run))
    acc = gv["accuracy"]
    assert one(acc, model="m1", task="SD")["acc"] == 100.0
    assert one(acc, model="m2", task="TSP")["acc"] == 0.0
    assert "judge not yet run" in "\n".join(analysis.missing_parts(run)["detail"].to_list())
    res = build_report(run, tmp_path / "out" / "g.html", tmp_path / "out" / "g.md", n_boot=0)
    page = res.html.read_text()
    assert "No NPHardEval4V samples in these runs." in page
    assert 'id="gv-acc"' in page and "No GraphVerse samples" not in page
    assert (tmp_path / "out" / "g_tables" / "graphverse_by_edit.csv").is_file()
    # the witness table: value_consistent beside witness_valid, in the page and as a CSV
    assert 'id="gv-witness"' in page and "consistent_pct" in page
    assert (tmp_path / "out" / "g_tables" / "graphverse_witness.csv").is_file()
    assert "judge not yet run" in page

    # judge output under RUN/judge/, keyed like the samples: the labels show up and nothing is missing
    (run / "judge").mkdir()
    frame.select("model", "benchmark", "instance_id", "variant", "prompt_mode", "repeat").with_columns(
        steps=pl.lit('["perceive: ok", "<b>reason</b>: wrong"]')).write_parquet(run / "judge" / "j.parquet")
    assert analysis.missing_parts(run).is_empty()
    page = build_report(run, tmp_path / "out2" / "g.html", n_boot=0).html.read_text()
    assert "perceive: ok" in page and "&lt;b&gt;reason&lt;/b&gt;" in page and "judge not yet run" not in page


# --------------------------------------------------------------------------------------------------- report


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    res = build_report(list(runs), out / "report.html", out / "report.md", out / "csv", n_boot=100,
                       samples_per_group=3)
    return res, out


def test_report_outputs_exist_with_columns(report) -> None:
    res, out = report
    assert res.html.is_file() and res.markdown.is_file()
    names = {p.name for p in res.csvs}
    for n in ("leaderboard", "per_task", "class_profile", "heatmap", "prompt_mode_ablation", "lvlm_vs_llm",
              "version_consistency", "missing_parts", "runs", "sample_browser"):
        assert f"{n}.csv" in names
    lb = pl.read_csv(out / "csv" / "leaderboard.csv")
    assert tuple(lb.columns) == nt.LEADERBOARD_COLUMNS
    assert one(lb, version="v1", model="alpha", prompt_mode="pooled")["AA_All"] == pytest.approx(7 / 9, abs=1e-6)
    vc = pl.read_csv(out / "csv" / "version_consistency.csv")
    assert {"model", "task", "n_versions", "AA_min", "AA_mean", "AA_max", "AA_var"} <= set(vc.columns)
    assert set(pl.read_csv(out / "csv" / "missing_parts.csv").columns) == {"run", "benchmark", "model", "part",
                                                                          "detail"}
    fig_names = {p.name for p in res.figures}
    for n in ("radar", "heatmap_reasoning", "heatmap_recognition", "prompt_mode_ablation", "lvlm_vs_llm"):
        assert {f"{n}.svg", f"{n}.png"} <= fig_names
    for p in res.figures:
        assert p.parent == out / "report_figures" and p.stat().st_size > 500
    md = res.markdown.read_text()
    assert "## Leaderboard" in md and "AA_All [95% CI]" in md
    assert re.search(r"\| v1 \| alpha \| .*0\.778 \[", md)  # AA_All 7/9 with its interval
    assert "delta: no samples" in md and "No GraphVerse samples in these runs." in md


def test_report_html_self_contained_and_escaped(report) -> None:
    res, _ = report
    page = res.html.read_text()
    assert self_contained_violations(page) == []
    assert not re.search(r"""\s(?:src|href)\s*=\s*["']?https?:""", page, flags=re.I)
    assert "http://" not in page and "https://" not in page
    # the untrusted response is escaped, never live markup
    assert XSS not in page and "<script>alert" not in page and "onerror=alert(1)>" not in page
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in page  # markupsafe's spelling of the quote
    assert "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page
    # exactly the page's own scripts: two JSON data blocks and the inline code
    assert len(re.findall(r"<script", page)) == 3
    assert "No GraphVerse samples in these runs." in page
    assert "This report covers partial results." in page
    # every section is there
    for anchor in ("leaderboard", "classes", "heatmaps", "ablation", "lvlm-llm", "versions", "samples"):
        assert f'id="{anchor}"' in page


def test_report_sample_browser_content(report) -> None:
    res, _ = report
    page = res.html.read_text()
    rows = re.findall(r'<tr class="sb-row" ([^>]*)>', page)
    assert rows and res.n_samples_shown == len(rows)
    per = {}
    for attrs in rows:
        d = dict(re.findall(r'data-(\w+)="([^"]*)"', attrs))
        per.setdefault((d["version"], d["model"], d["task"]), 0)
        per[(d["version"], d["model"], d["task"])] += 1
    assert max(per.values()) <= 3
    assert {m for _, m, _ in per} == {"alpha", "beta", "gamma"}
    prompts = json.loads(re.search(r'<script type="application/json" id="sb-prompts">(.*?)</script>', page,
                                   re.S).group(1))
    images = json.loads(re.search(r'<script type="application/json" id="sb-images">(.*?)</script>', page,
                                  re.S).group(1))
    assert any("knapsack" in p.lower() for p in prompts.values())
    assert images and all(v.startswith("data:image/png;base64,") for v in images.values())
    assert "(optimal value" in page  # gold from the dataset


def test_report_is_deterministic(runs, report, tmp_path) -> None:
    res, out = report
    again = build_report(list(runs), tmp_path / "report.html", None, tmp_path / "csv", n_boot=100,
                         samples_per_group=3)
    assert again.html.read_text() == res.html.read_text()
    for p in res.figures:
        assert (tmp_path / "report_figures" / p.name).read_bytes() == p.read_bytes()
    assert (tmp_path / "csv" / "leaderboard.csv").read_text() == (out / "csv" / "leaderboard.csv").read_text()


def test_figures_from_empty_tables() -> None:
    empty = nt.leaderboard(analysis.frame_of(pl.DataFrame(schema=SAMPLE_SCHEMA)))
    assert empty.is_empty()
    c = figures.ablation_bars(nt.prompt_mode_ablation(analysis.frame_of(pl.DataFrame(schema=SAMPLE_SCHEMA)), board=empty),
                              empty="No NPHardEval4V samples.")
    assert "No NPHardEval4V samples." in c.svg()
    assert c.png()[:4] == b"\x89PNG"


def test_cli_defaults_match_the_library() -> None:
    from nphe4v_cli import report_command as report_cli
    from report import html_report

    assert report_cli.DEFAULT_SAMPLES_PER_GROUP == html_report.DEFAULT_SAMPLES_PER_GROUP
    assert report_cli.DEFAULT_MAX_IMAGES == html_report.DEFAULT_MAX_IMAGES
    assert report_cli.DEFAULT_THUMB_PX == html_report.DEFAULT_THUMB_PX
    assert (report_cli.DEFAULT_BOOT, report_cli.DEFAULT_SEED) == (nt.DEFAULT_BOOT, nt.DEFAULT_SEED)
    assert report_cli.DEFAULT_MAX_CHARS == html_report.DEFAULT_MAX_CHARS
    assert report_cli.GROUP_BY == html_report.GROUP_BY


def test_cli_report(runs, tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from nphe4v_cli.report_command import report

    app = typer.Typer()
    app.command()(report)
    res = CliRunner().invoke(app, [str(runs[0]), str(runs[1]), "--html", str(tmp_path / "r.html"), "--md",
                                   str(tmp_path / "r.md"), "--csv-dir", str(tmp_path / "t"), "--n-boot", "20"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "r.html").is_file() and (tmp_path / "r.md").is_file()
    assert (tmp_path / "t" / "leaderboard.csv").is_file()
    assert (runs[0] / "leaderboard.csv").is_file()  # the old behaviour stays
    assert "missing part(s)" in res.output and "delta: no samples" in res.output
    bad = CliRunner().invoke(app, [str(tmp_path / "nope")])
    assert bad.exit_code == 2 and "samples: not found" in bad.output


# ------------------------------------------------------------------------------- paper summaries (issue 10.9)


def test_consistency_summary_appendix_b(runs) -> None:
    # alpha, pooled AA per task: v1 BSP 1, KSP 2/3 (full_text_only all wrong), TSP 2/3; v2 all 1.
    # variances (ddof 1) over the two versions: 0, 1/18, 1/18 -> min 0, mean 1/27, max 1/18; beta has one
    # version (no variance) and is not a point.
    summ = consistency.consistency_summary(consistency.version_consistency(analysis.frame_of(list(runs))))
    r = summ.row(0, named=True)
    assert (r["n_points"], r["n_models"]) == (3, 1)
    assert (r["var_min"], r["var_mean"], r["var_max"]) == (0.0, pytest.approx(1 / 27), pytest.approx(1 / 18))
    assert r["near_zero_share"] == pytest.approx(1 / 3)
    # cross-check with numpy over the per-task AA of each version
    import numpy as np

    pt = nt.per_task(analysis.frame_of(list(runs)), n_boot=0).filter((pl.col("model") == "alpha")
                                                         & (pl.col("prompt_mode") == "pooled"))
    vs = [np.var(pt.filter(pl.col("task") == t)["AA"].to_numpy(), ddof=1) for t in TASKS]
    assert r["var_mean"] == pytest.approx(float(np.mean(vs)))


def test_open_closed_grouping_from_the_registry() -> None:
    from nphe4v.report_section import open_closed

    board = pl.DataFrame({
        "version": ["v"] * 4, "model": ["gpt-4o", "qwen2.5-vl-72b", "oracle", "my-own"],
        "prompt_mode": ["pooled"] * 4,
        "AA_P": [0.8, 0.4, 1.0, 0.2], "AA_NPC": [0.6, 0.2, 1.0, 0.1], "AA_NPH": [0.4, 0.0, 1.0, 0.0],
        "AA_All": [0.6, 0.2, 1.0, 0.1], "ER": [1.0, 0.5, 1.0, 0.3], "RA": [0.9, 0.7, 1.0, 0.5],
    })
    catalogue = load_registry().by_name
    g = open_closed(board, analysis.model_info(board["model"].to_list(), catalogue))
    assert g["access"].to_list() == ["closed", "open", "builtin", "unregistered"]
    assert one(g, access="closed")["models"] == "gpt-4o" and one(g, access="open")["AA_All"] == pytest.approx(0.2)
    info = analysis.model_info(["gpt-4o", "qvq-72b-preview", "my-own"], catalogue)
    assert one(info, model="gpt-4o")["family"] == "GPT"  # derived from the title "GPT-4o"
    assert one(info, model="qvq-72b-preview")["family"] == "Qwen"  # the registry's family field
    assert one(info, model="my-own")["access"] == "unregistered"
    two = pl.concat([board, board.with_columns(model=pl.lit("gemini-2.0-flash-exp"), AA_All=pl.lit(0.2))])
    closed = one(open_closed(two.unique(subset=["model"], keep="first"), analysis.model_info(two["model"].unique().to_list(), catalogue)), access="closed")
    assert closed["n_models"] == 2 and closed["AA_All"] == pytest.approx((0.6 + 0.2) / 2)
    # without the caller's catalogue (the report knows no registry) every model is unregistered
    assert open_closed(board, analysis.model_info(board["model"].to_list()))["access"].to_list() == ["unregistered"]


def test_graphverse_families_table2(tmp_path) -> None:
    # gemini-3-flash and gemini-3-pro form the family Gemini, o1 the family GPT (cluster/models.yaml).
    # Poly tasks here: SD; NP-hard: TSP, GED. Acc per model: flash SD 100, TSP 100, GED 0 -> Poly 100, NPH 50;
    # pro SD 100, rest 0 -> Poly 100, NPH 0; o1 SD 0, TSP 100, GED 100 -> Poly 0, NPH 100.
    good = {"gemini-3-flash": {"SD", "TSP"}, "gemini-3-pro": {"SD"}, "o1": {"TSP", "GED"}}
    rows = [_row("G", "gv1", m, f"{t.lower()}-{k}", t, 1, "vision", variant="none",
                 verdict="correct" if t in ok else "wrong", bench="graphverse")
            for m, ok in good.items() for t in ("SD", "TSP", "GED") for k in range(2)]
    catalogue = load_registry().by_name
    info = analysis.model_info(list(good), catalogue)
    fam = gt.graphverse_families(pl.DataFrame(rows, schema=SAMPLE_SCHEMA).with_columns(run=pl.lit("G")), None, info)
    gem, gpt = one(fam, family="Gemini"), one(fam, family="GPT")
    assert gem["models"] == 2 and (gem["Acc_P"], gem["Acc_NPH"]) == (100.0, 25.0)
    assert gem["Acc_drop"] == pytest.approx(0.75) and gem["VGR_P"] is None
    assert (gpt["Acc_P"], gpt["Acc_NPH"], gpt["Acc_drop"]) == (0.0, 100.0, None)
    judged = {"acc_vgr": pl.DataFrame({"model": ["gemini-3-flash", "gemini-3-flash", "gemini-3-pro", "gemini-3-pro"],
                                       "task": ["SD", "TSP", "SD", "GED"], "vgr": [80.0, 40.0, 60.0, 20.0]})}
    gem = one(gt.graphverse_families(analysis.frame_of(pl.DataFrame(rows, schema=SAMPLE_SCHEMA)), judged, info),
              family="Gemini")
    assert (gem["VGR_P"], gem["VGR_NPH"]) == (70.0, 30.0) and gem["VGR_drop"] == pytest.approx(40 / 70)
    # the paper's "Poly" is a display label only
    assert gt.table2_labels(fam).columns[2:] == ["Acc_Poly", "Acc_NPH", "Acc_drop", "VGR_Poly", "VGR_NPH",
                                                        "VGR_drop"]


def test_report_has_paper_sections_and_group_by(runs, tmp_path) -> None:
    res = build_report(list(runs), tmp_path / "r.html", n_boot=0, group_by="open_closed")
    page = res.html.read_text()
    for anchor in ('id="consistency-summary"', 'id="failures"', 'id="open-closed"', 'id="failures-task"'):
        assert anchor in page, anchor
    assert (tmp_path / "r_tables" / "failures_by_model.csv").is_file()
    fails = pl.read_csv(tmp_path / "r_tables" / "failures_by_model.csv")
    beta = one(fails, model="beta")
    # beta: 4 KSP parse errors (unparsable) and 4 TSP wrong answers (no instance names -> infeasible)
    assert (beta["n"], beta["n_failed"], beta["unparsable"], beta["infeasible"]) == (12, 8, 4, 4)
    default = build_report(list(runs), tmp_path / "d.html", n_boot=0).html.read_text()
    assert 'id="open-closed"' not in default and "--group-by open_closed" in default
    with pytest.raises(ValueError, match="group_by"):
        build_report(list(runs), tmp_path / "x.html", n_boot=0, group_by="size")


# --------------------------------------------------------------------------- bounded reports (issue 11.6)


def test_report_bounded_with_huge_responses(tmp_path) -> None:
    """Huge responses are cut in the HTML (marker present, full text still in the Parquet), the browser shows
    at most samples_per_group rows per model and task, and the page stays small."""
    from nphe4v.generate import generate_version
    from report.html_report import TRUNCATION_MARK

    ds = tmp_path / "ds"
    generate_version(ds, version="v", seed=1, per_level=2, tasks=TASKS, levels=LEVELS, workers=1)
    huge = "A" * 3_000_000
    rows = [_row("H", "v", m, iid, task, lv, mode, raw=huge if m == "m0" else "short", verdict="wrong")
            for m in ("m0", "m1", "m2") for iid, task, lv, _ in _instances() for mode in MODES]
    run = _write_run(tmp_path, "H", "v", ds, rows, [{"name": m} for m in ("m0", "m1", "m2")], "complete")
    res = build_report(run, tmp_path / "h.html", n_boot=0, samples_per_group=2, max_chars=300)
    page = res.html.read_text()
    assert res.html.stat().st_size < 1_500_000  # 72 responses of 3 MB each in the run
    marker = str(markupsafe.escape(TRUNCATION_MARK.format(shown=300, total=3_000_000)))
    assert page.count(marker) == 2 * len(TASKS)  # m0's shown rows, each cut
    assert "A" * 301 not in page
    shown = re.findall(r'<tr class="sb-row" data-version="[^"]*" data-model="([^"]+)" data-task="([^"]+)"', page)
    assert len(shown) == 3 * len(TASKS) * 2
    assert max(shown.count(k) for k in set(shown)) == 2
    full = pl.read_parquet(run / "samples" / "nphardeval4v" / "m0" / "part-0.parquet")
    assert full["raw_response"].str.len_chars().min() == 3_000_000


def test_cli_group_by_open_closed(runs, tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from nphe4v_cli.report_command import report

    app = typer.Typer()
    app.command()(report)
    res = CliRunner().invoke(app, [str(runs[1]), "--group-by", "open_closed", "--html", str(tmp_path / "g.html"),
                                   "--n-boot", "0", "--max-chars", "100"])
    assert res.exit_code == 0, res.output
    grouped = pl.read_csv(runs[1] / "open_closed.csv")
    assert grouped["access"].to_list() == ["unregistered"] and grouped["models"].to_list() == ["alpha"]
    assert "Closed vs open models" in res.output
    # the entry point hands the registry's entries to the report (which imports nothing from cluster)
    from nphe4v_cli.report_command import _model_catalogue

    assert _model_catalogue()["gpt-4o"].access == "closed"
    assert 'id="open-closed"' in (tmp_path / "g.html").read_text()
    bad = CliRunner().invoke(app, [str(runs[1]), "--group-by", "size"])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "open_closed" in bad.output


def test_browser_text_budget_and_table_row_cap(tmp_path, monkeypatch) -> None:
    from nphe4v.generate import generate_version
    from report import html_report
    from report.html import sample_browser

    t = html_report.html_table(pl.DataFrame({"a": list(range(5))}), max_rows=2, csv_name="x.csv")
    assert t.count("<tr>") == 3 and "First 2 of 5 rows shown" in t and "x.csv" in t
    ds = tmp_path / "ds"
    generate_version(ds, version="v", seed=1, per_level=2, tasks=TASKS, levels=LEVELS, workers=1)
    rows = [_row("T", "v", "m", iid, task, lv, mode, raw="B" * 5000, verdict="wrong")
            for iid, task, lv, _ in _instances() for mode in MODES]
    run = _write_run(tmp_path, "T", "v", ds, rows, [{"name": "m"}], "complete")
    # 3 tasks x 4 rows shown = 12 rows; a budget of 12 x 250 characters cuts each text to 250 (not 1000)
    monkeypatch.setattr(sample_browser, "BROWSER_TEXT_BUDGET", 12 * 250)
    page = build_report(run, tmp_path / "t.html", n_boot=0, max_chars=1000).html.read_text()
    assert "B" * 250 in page and "B" * 251 not in page
    assert str(markupsafe.escape(html_report.TRUNCATION_MARK.format(shown=250, total=5000))) in page


def test_answer_checks_stated_values_and_papers_parse() -> None:
    rows = [
        {**_row("A", "v1", "m", "tsp-L01-000", "TSP", 1, "figure+limited_text"), "value_consistent": True,
         "verdict_paper": "correct"},
        {**_row("A", "v1", "m", "tsp-L01-001", "TSP", 1, "figure+limited_text"), "value_consistent": False,
         "verdict_paper": "parse_error"},
        {**_row("A", "v1", "m", "tsp-L01-001", "TSP", 1, "full_text_only", verdict="wrong"),
         "value_consistent": None, "verdict_paper": "wrong"},
        {**_row("A", "v1", "m", "bsp-L01-000", "BSP", 1, "full_text_only", verdict="parse_error"),
         "value_consistent": None, "verdict_paper": "correct"},
        {**_row("A", "v1", "m", "bsp-L01-000", "BSP", 1, "figure+limited_text", status="infra_error"),
         "value_consistent": None, "verdict_paper": None},
    ]
    checks = nt.answer_checks(analysis.frame_of(pl.DataFrame(rows)))
    assert tuple(checks.columns) == ANSWER_CHECK_COLUMNS
    bsp, tsp = one(checks, task="BSP"), one(checks, task="TSP")
    assert (tsp["n"], tsp["n_stated"], tsp["inconsistent"], tsp["inconsistent_share"]) == (3, 2, 1, 0.5)
    assert (tsp["parsable"], tsp["parsable_paper"], tsp["verdict_differs"]) == (3, 2, 1)
    assert (bsp["n"], bsp["n_stated"], bsp["inconsistent_share"], bsp["verdict_differs"]) == (1, 0, None, 1)
    # a run that predates the columns: counts 0, not a crash
    old = nt.answer_checks(analysis.frame_of(pl.DataFrame([_row("A", "v1", "m", "bsp-L01-000", "BSP", 1, "full_text_only")])))
    assert (one(old, task="BSP")["n_paper"], one(old, task="BSP")["n_stated"]) == (0, 0)


def test_parser_paper_makes_the_papers_parse_the_headline(tmp_path) -> None:
    """`parser: paper` in a run's config: the printed leaderboard and the report lead with the papers' parse;
    the default leads with ours; ER_paper / AA_paper are shown either way, and RA is n/a on full_text_only."""
    import io

    from rich.console import Console

    from nphe4v.metrics import RA_NOTE
    from report.summaries import print_leaderboard, run_leaderboard

    rows = []
    for i in range(2):
        for mode in ("figure+limited_text", "full_text_only"):
            r = _row("P", "v1", "m", f"bsp-L01-00{i}", "BSP", 1, mode)
            rows.append({**r, "verdict_paper": "correct" if i == 0 else "parse_error"})
    boards = {}
    for parser in ("tolerant", "paper"):
        run = _write_run(tmp_path / parser, "P", "v1", tmp_path / "no-dataset", rows, [{"name": "m"}], "complete")
        manifest = json.loads((run / "manifest.json").read_text())
        manifest["config"]["parser"] = parser
        (run / "manifest.json").write_text(json.dumps(manifest))
        boards[parser] = run_leaderboard(run)
        lb = nt.leaderboard(analysis.frame_of([run]), n_boot=0)
        assert one(lb, prompt_mode="pooled")["ER"] == (1.0 if parser == "tolerant" else 0.5)
        # the explorer's board of the run leads with the same parse as the report
        from report.explorer.store import Store

        explorer = Store([run], n_boot=0).boards()["mode"].table
        assert one(explorer, prompt_mode="pooled")["ER"] == (1.0 if parser == "tolerant" else 0.5)
    for parser, er in (("tolerant", 1.0), ("paper", 0.5)):
        b = boards[parser]
        assert b["ER"].to_list() == pytest.approx([er] * 3) and b["ER_paper"].to_list() == pytest.approx([0.5] * 3)
    out = io.StringIO()
    print_leaderboard(boards["tolerant"], console=Console(file=out, width=200), note=RA_NOTE)
    text = out.getvalue()
    txt_line = next(line for line in text.splitlines() if "full_text_only" in line)
    assert "n/a" in txt_line and "visual prompts" in text


def test_ra_without_recognition_is_na_in_every_table() -> None:
    """A model whose run had no recognition experiment: its RA is null in the metrics and every table prints it
    "n/a" (HTML, Markdown, the console leaderboard), while another missing number stays "—"."""
    import io

    from rich.console import Console

    from nphe4v.metrics import leaderboard
    from report.html.format import md_table
    from report.html.tables import html_table
    from report.summaries import print_leaderboard

    rows = [{"model": "m", "task": "BSP", "level": 1, "instance_id": "BSP-1-0", "variant": "", "repeat": 0,
             "prompt_mode": "figure+limited_text", "status": "ok", "verdict": "correct", "parsed_answer": "{}"}]
    board = leaderboard(pl.DataFrame(rows))
    assert board["RA"].null_count() == board.height and board["AA_All"].to_list() == [1.0, 1.0]
    small = board.select("model", "RA", "RA_corrected", "AA_NPC")
    assert html_table(small).count(">n/a</td>") == 4 and html_table(small).count(">—</td>") == 2
    assert md_table(small).count("n/a") == 4
    out = io.StringIO()
    print_leaderboard(board, console=Console(file=out, width=250))
    header = next(ln for ln in out.getvalue().splitlines() if "prompt_mode" in ln)
    line = next(ln for ln in out.getvalue().splitlines() if "figure+limited_text" in ln)
    cells = dict(zip([c.strip() for c in header.split("┃")], [c.strip() for c in line.split("│")], strict=True))
    assert (cells["RA"], cells["RA_corrected"], cells["ER"]) == ("n/a", "n/a", "1.000")
