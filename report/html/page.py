"""The report's HTML page: style, script, and one section per table and figure."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from nphe4v import metrics
from nphe4v.core.schema import PROMPT_MODES
from nphe4v.metrics import POOLED
from report import analysis, figures
from report.graphverse_tables import table2_labels
from report.html.format import drop_single_version, esc, html_table, inline_svg
from report.html.improvement_section import improvement_html
from report.report_tables import Tables

MAX_DETAIL_ROWS = 1000
"""Rows of a secondary table (inside <details>) shown in the page; the CSV holds them all."""


CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:0 auto;max-width:1500px;padding:0 24px 60px;color:#222}
h1{font-size:24px;margin:24px 0 8px} h2{font-size:19px;margin:34px 0 8px;border-bottom:2px solid #ddd}
h3{font-size:15px;margin:20px 0 6px}
nav a{margin-right:14px} .note,.empty{color:#666;font-size:13px} .empty{font-style:italic}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} caption{text-align:left;font-weight:bold;padding:4px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3;cursor:pointer;white-space:nowrap} td.num{text-align:right;white-space:nowrap}
.ci{color:#777;font-size:11px} .fig{overflow-x:auto;margin:8px 0}
.missing{background:#fff6e0;border:1px solid #f0c36d;padding:8px 14px} .ok{background:#eef8ee;padding:8px 14px}
.filters label{margin-right:12px;font-size:13px} .filters select{max-width:220px}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:6px;max-height:360px;overflow:auto;
font-size:12px;margin:2px 0 8px}
.samples td{font-size:12px} .samples details{min-width:300px;max-width:820px} .imgs img{max-width:100%;margin:4px 0;
border:1px solid #ddd}
.v{padding:1px 6px;border-radius:3px;font-size:11px} .v-correct{background:#d9f2d9} .v-wrong{background:#f8d7d7}
.v-parse_error{background:#f5e6c8} .v-model_error,.v-infra_error{background:#ddd}
.steps{font-size:12px;margin:2px 0 8px;padding-left:22px} .st-label{font-size:11px;padding:0 5px;border-radius:3px}
.st-ok .st-label{background:#d9f2d9} .st-bad .st-label{background:#f8d7d7} .vgr{font-weight:bold}
"""

JS = r"""
(function(){
  function cellValue(td){var v=td.getAttribute('data-v');return v===null?td.textContent:v;}
  document.querySelectorAll('table.sortable').forEach(function(t){
    t.querySelectorAll('th').forEach(function(th,i){
      th.addEventListener('click',function(){
        var tb=t.tBodies[0],rows=Array.prototype.slice.call(tb.rows),asc=th.getAttribute('data-dir')!=='asc';
        t.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-dir');});
        th.setAttribute('data-dir',asc?'asc':'desc');
        rows.sort(function(a,b){
          var x=cellValue(a.cells[i]),y=cellValue(b.cells[i]),nx=parseFloat(x),ny=parseFloat(y),r;
          if(x===''&&y!=='')return 1; if(y===''&&x!=='')return -1;
          r=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
          return asc?r:-r;});
        rows.forEach(function(r){tb.appendChild(r);});
      });
    });
  });
  var table=document.getElementById('sb-table'); if(!table)return;
  var prompts=JSON.parse(document.getElementById('sb-prompts').textContent);
  var images=JSON.parse(document.getElementById('sb-images').textContent);
  var rows=Array.prototype.slice.call(table.tBodies[0].rows);
  var selects=Array.prototype.slice.call(document.querySelectorAll('.filters select'));
  var count=document.getElementById('sb-count');
  function apply(){
    var f={},shown=0;
    selects.forEach(function(s){if(s.value)f[s.getAttribute('data-key')]=s.value;});
    rows.forEach(function(r){
      var ok=Object.keys(f).every(function(k){return r.getAttribute('data-'+k)===f[k];});
      r.hidden=!ok; if(ok)shown++;});
    count.textContent=shown+' of '+rows.length+' samples shown';
    return f;
  }
  function fromHash(){
    var p=new URLSearchParams(location.hash.replace(/^#/,''));
    selects.forEach(function(s){
      var v=p.get(s.getAttribute('data-key'))||'';
      if(v&&!Array.prototype.some.call(s.options,function(o){return o.value===v;})){
        var o=document.createElement('option');o.value=v;o.textContent=v;s.appendChild(o);}
      s.value=v;});
    apply();
    var n=parseInt(p.get('open')||'0',10);
    if(n>0)rows.filter(function(r){return !r.hidden;}).slice(0,n).forEach(function(r){
      var d=r.querySelector('details'); if(d)d.open=true;});
  }
  selects.forEach(function(s){s.addEventListener('change',function(){
    var f=apply(),p=new URLSearchParams();
    Object.keys(f).forEach(function(k){p.set(k,f[k]);});
    history.replaceState(null,'','#'+p.toString());});});
  window.addEventListener('hashchange',fromHash);
  table.addEventListener('toggle',function(e){
    var d=e.target; if(!d.open||d.getAttribute('data-filled'))return; d.setAttribute('data-filled','1');
    d.querySelectorAll('pre[data-prompt]').forEach(function(pre){pre.textContent=prompts[pre.getAttribute('data-prompt')]||'';});
    d.querySelectorAll('div[data-images]').forEach(function(div){
      div.getAttribute('data-images').split(',').forEach(function(k){
        if(!images[k])return; var img=document.createElement('img'); img.src=images[k]; img.alt='instance image';
        div.appendChild(img);});});
  },true);
  fromHash();
})();
"""


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{esc(title)}</h2>\n{body}\n</section>'


def runs_table(runs: Sequence[analysis.Run]) -> pl.DataFrame:
    rows = []
    for r in runs:
        m = r.manifest or {}
        cfg = r.config
        rows.append({
            "run": r.label,
            "folder": str(r.path),
            "status": r.status,
            "created_at": str(m.get("created_at") or ""),
            "finished_at": str(m.get("finished_at") or ""),
            "git_sha": str(m.get("git_sha") or "")[:12],
            "datasets": ", ".join(f"{d.get('benchmark')}:{d.get('version')}" for d in m.get("datasets") or []),
            "models": ", ".join(str(x.get("name")) for x in cfg.get("models") or []),
            "prompt_modes": ", ".join(cfg.get("prompt_modes") or []),
            # which NPHardEval4V prompt text the models got; runs before the option sent the rewritten set
            "prompts": str(m.get("prompt_set") or cfg.get("prompts") or "rewritten"),
        })
    schema = {k: pl.String for k in ("run", "folder", "status", "created_at", "finished_at", "git_sha", "datasets",
                                     "models", "prompt_modes", "prompts")}
    return pl.DataFrame(rows, schema=schema)


def board_view(board: pl.DataFrame, pooled: bool) -> pl.DataFrame:
    b = board.filter((pl.col("prompt_mode") == POOLED) if pooled else (pl.col("prompt_mode") != POOLED))
    if pooled:
        b = b.sort("version", pl.col("AA_All").fill_null(-1.0), "model", descending=[False, True, False]).drop(
            "prompt_mode")
    return drop_single_version(b.drop("parsable", "correct", "recognised", "n_control", "false_yes"))


BOARD_CI = ("ER", "RA", "RA_corrected", "AA_P", "AA_NPC", "AA_NPH", "AA_All")


def ablation_wide(ablation: pl.DataFrame) -> pl.DataFrame:
    if ablation.is_empty():
        return ablation
    wide = ablation.select("version", "model", "prompt_mode", "AA_All").pivot(
        on="prompt_mode", index=["version", "model"], values="AA_All"
    )
    best = ablation.filter(pl.col("best")).select("version", "model", pl.col("prompt_mode").alias("best_mode"))
    modes = [m for m in PROMPT_MODES if m in wide.columns]
    return drop_single_version(wide.join(best, on=["version", "model"], how="left").select(
        "version", "model", *modes, "best_mode").sort("version", "model"))


def _missing_html(missing: pl.DataFrame) -> str:
    if missing.is_empty():
        return '<p class="ok">Nothing missing: every configured model, prompt mode and recognition ask has its ' \
               "samples, no infra errors, and every run finished.</p>"
    items = "".join(f"<li><b>{esc(r['run'])}</b>: {esc(r['detail'])}</li>" for r in missing.iter_rows(named=True))
    return f'<div class="missing"><p><b>This report covers partial results.</b> Missing:</p><ul>{items}</ul></div>'


def _fig_html(figs: dict[str, figures.Canvas], name: str, caption: str) -> str:
    if name not in figs:
        return ""
    return f'<figure class="fig" id="fig-{name}">{inline_svg(figs[name])}<figcaption class="note">' \
           f"{esc(caption)}</figcaption></figure>"


def render_page(title: str, runs: Sequence[analysis.Run], t: Tables, figs: dict[str, figures.Canvas],
          browser_html: str, per_group: int) -> str:
    nph = not t.board.is_empty()
    no_nph = '<p class="empty">No NPHardEval4V samples in these runs.</p>'
    sec = []
    sec.append(_section("runs", "Runs", html_table(runs_table(runs), table_id="runs-table")))
    sec.append(_section("missing", "Missing parts", _missing_html(t.missing)))
    lb_body = no_nph
    if nph:
        lb_body = "\n".join([
            "<p class='note'>All prompt modes pooled, as the papers' summary notebook pools them (the papers' Figure 6 "
            "shows figure+limited_text alone: see the per-mode table). RA: the paper's rule (YES in at least 3 of "
            "the 5 asks; an unparsable ask is not a YES); RA_var: the variance of the asks' outcomes, mean over "
            "instances; RA_corrected: RA minus the false-YES rate on mismatched controls (not in the paper). "
            "ER and RA: Wilson 95% intervals of the "
            "pooled counts; RA_corrected and AA: percentile bootstrap over instances (resampled within each task "
            "and level, fixed seed). n = answer questions (infra errors excluded), n_rec = instances with "
            "recognition data (RA = 1 without). ER_paper / AA_paper: ER and AA_All with the papers' parsing rule "
            "(first &lt;final_answer&gt; block read as a Python literal, the papers' keys spelt exactly; "
            "docs/metrics.md), to place a model among the papers' tables; empty for runs that predate it. "
            + esc(metrics.RA_NOTE) + "</p>",
            html_table(board_view(t.board, True), ci=BOARD_CI, table_id="leaderboard"),
            "<details><summary>Per prompt mode</summary>",
            html_table(board_view(t.board, False), ci=BOARD_CI, table_id="leaderboard-modes"),
            "</details>",
            "<details><summary>Stated values and the papers' parse, per task</summary>",
            "<p class='note'>The witness (path, tour, selection, colouring, schedule) decides the verdict; "
            "inconsistent = answers whose stated value (total, count) disagrees with their own witness "
            "(value_consistent false), of n_stated compared. parsable / parsable_paper: answers our parse and "
            "the papers' parse could read; verdict_differs: answers the two grade differently.</p>",
            html_table(drop_single_version(t.answer_checks) if t.answer_checks is not None else pl.DataFrame(),
                       table_id="answer-checks"),
            "</details>",
        ])
    sec.append(_section("leaderboard", "Leaderboard", lb_body))
    if nph:
        sec.append(_section("classes", "By complexity class (Figure 4)", "\n".join([
            _fig_html(figs, "radar", "RA, ER and AA on P, NP-complete and NP-hard tasks, prompt modes pooled."
                      + (" One panel per model access (closed, open, builtin)." if t.open_closed is not None
                         else "")),
            _open_closed_html(t.open_closed),
            html_table(drop_single_version(t.profile), ci=("AA", "ER", "RA"), table_id="class-profile"),
        ])))
        sec.append(_section("heatmaps", "Per task and level (Figures 7 and 9)", "\n".join([
            _fig_html(figs, "heatmap_reasoning", "Hover a cell for its value, interval and count."),
            _fig_html(figs, "heatmap_recognition", "Grey: no recognition data (RA counts as 1 in the metrics)."),
            "<details><summary>Raw accuracy heatmap and the full table</summary>",
            _fig_html(figs, "heatmap_accuracy", "correct / n per level; Wilson interval in the tooltip."),
            html_table(drop_single_version(t.heat), ci=("accuracy", "RA"), hide=("acc_lo", "acc_hi"),
                       table_id="heatmap-table", max_rows=MAX_DETAIL_ROWS, csv_name="heatmap.csv"),
            "</details>",
        ])))
        sec.append(_section("ablation", "Prompt-mode ablation (Figure 8)", "\n".join([
            _fig_html(figs, "prompt_mode_ablation", "AA_All per prompt mode with bootstrap intervals."),
            html_table(ablation_wide(t.ablation), table_id="ablation-wide", caption="AA_All by prompt mode"),
            "<details><summary>Details</summary>",
            html_table(drop_single_version(t.ablation), ci=("AA_All", "ER"), table_id="ablation"),
            "</details>",
        ])))
        llm_note = ("<p class='note'>No text-only LLM in these runs (set <code>text_only: true</code> on a model "
                    "to run it on full_text_only); only LVLMs are shown.</p>" if not t.text_only else
                    f"<p class='note'>Text-only LLMs: {esc(', '.join(sorted(t.text_only)))}.</p>")
        sec.append(_section("lvlm-llm", "LVLMs vs text-only LLMs (Figure 6)", "\n".join([
            llm_note,
            _fig_html(figs, "lvlm_vs_llm", "AA and ER per complexity class; 'mean' rows average the kind's models."),
            html_table(drop_single_version(t.llm), ci=("AA", "ER"), table_id="lvlm-llm"),
        ])))
        versions = t.board["version"].n_unique()
        vc_note = ("<p class='note'>These runs hold one dataset version: min = mean = max and no variance. "
                   "Report several runs of the same models on different versions to measure consistency.</p>"
                   if versions <= 1 else
                   f"<p class='note'>{versions} versions. AA per model and task (prompt modes pooled); "
                   "variance with ddof = 1.</p>")
        vc_table = html_table(t.consistency, table_id="version-consistency")
        if versions <= 1:
            vc_table = f"<details><summary>Per model and task</summary>{vc_table}</details>"
        summary = ("<h3>Appendix B summary</h3><p class='note'>Variance of AA across versions per (model, task), "
                   "then its minimum, mean and maximum over all points (the paper: 135 points, min 0.0, mean "
                   f"0.01167, max 0.11029); near zero = below {analysis.NEAR_ZERO_VARIANCE:g}.</p>"
                   + html_table(t.consistency_summary, digits=5, table_id="consistency-summary")
                   if t.consistency_summary is not None else "")
        sec.append(_section("versions", "Version consistency", vc_note + summary + vc_table))
        sec.append(_section("failures", "Failure analysis (§5.3)", _failures_html(t.failures)))
        sec.append(_section("per-task", "Per task", "<details><summary>AA per model, task and prompt mode</summary>"
                            + html_table(drop_single_version(t.tasks), ci=("AA", "ER"), table_id="per-task",
                                         max_rows=MAX_DETAIL_ROWS, csv_name="per_task.csv")
                            + "</details>"))
    gv = t.graphverse
    if gv:
        gv_body = "\n".join([
            _fig_html(figs, "graphverse_edits", "Accuracy per image edit (Wilson intervals)."),
            "<h3>Accuracy per model and task (%)</h3>", html_table(gv["acc_table"], digits=1, table_id="gv-acc"),
            "<h3>With counts and Wilson intervals (%)</h3>",
            html_table(gv["accuracy"], digits=1, ci=("acc",), hide=("ci_low", "ci_high"), table_id="gv-accuracy"),
            "<h3>Per edit</h3>", html_table(gv["by_edit"], digits=1, table_id="gv-edit"),
            "<h3>Single vs paired images</h3>", html_table(gv["single_vs_paired"], digits=1, table_id="gv-paired"),
            "<h3>Poly vs NP-hard</h3>", html_table(gv["poly_vs_nph"], digits=3, table_id="gv-poly"),
            "<h3>Witnesses and stated values</h3>",
            "<p class='note'>Per model and task, over parsed answers: <code>valid_pct</code> = % of answers giving a "
            "path / set / tour / cycle / colouring / mapping whose witness is feasible; <code>consistent_pct</code> "
            "= % of feasible witnesses whose stated value (Length, Size, NumColors, Distance, ...) agrees with "
            "the witness (<code>value_consistent</code>). The witness decides the verdict, except on SD, DIAM, GED "
            "and MCS, which the paper scores by the stated value; <code>correct_inconsistent_value</code> counts "
            "correct answers whose stated value disagrees with their witness.</p>",
            html_table(gv["witness"], digits=1, table_id="gv-witness") if "witness" in gv else "",
            "<h3>Model families (Table 2)</h3>",
            "<p class='note'>Per family (cluster/models.yaml <code>family</code>, else the leading letters of the "
            "title): the mean over its models of each model's mean Acc / VGR-S (%) on Poly and on NP-hard tasks; "
            "drop = (Poly − NPH) / Poly. VGR-S is blank until the judge has run.</p>", _card_html(t),
            html_table(table2_labels(t.gv_families) if t.gv_families is not None else pl.DataFrame(), digits=3,
                       table_id="gv-families"),
            _judge_html(t, figs),
        ])
    else:
        gv_body = '<p class="empty">No GraphVerse samples in these runs.</p>'
    sec.append(_section("graphverse", "GraphVerse", gv_body))
    if gv:
        sec.append(_section("improvement", "Improving VGR (GraphVerse §5.3, Appendix E)",
                            _card_html(t) + improvement_html(t.improvement)))
    sec.append(_section("samples", "Sample browser", browser_html))
    nav = " ".join(f'<a href="#{a}">{esc(n)}</a>' for a, n in (
        ("missing", "missing"), ("leaderboard", "leaderboard"), ("classes", "classes"), ("heatmaps", "heatmaps"),
        ("ablation", "prompt modes"), ("lvlm-llm", "LVLM vs LLM"), ("versions", "versions"), ("failures", "failures"),
        ("graphverse", "GraphVerse"), *((("improvement", "improvement"),) if gv else ()), ("samples", "samples")))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # nothing may load from anywhere: only inline styles, inline scripts and data: images
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">",
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<nav>{nav}</nav>",
        *sec,
        f"<script>{JS}</script>",
        "</body></html>",
        "",
    ])


def _open_closed_html(table: pl.DataFrame | None) -> str:
    if table is None:
        return ("<p class='note'>Closed vs open models: <code>nphe4v report --group-by open_closed</code> "
                "(model access from cluster/models.yaml).</p>")
    return ("<h3>Closed vs open models</h3><p class='note'>Plain means over each group's models (pooled prompt "
            "modes); access from cluster/models.yaml, <i>unregistered</i> for models it does not list.</p>"
            + html_table(drop_single_version(table), table_id="open-closed"))


def _failures_html(failures: dict[str, pl.DataFrame]) -> str:
    if not failures:
        return '<p class="empty">No NPHardEval4V answer samples.</p>'
    note = ("<p class='note'>Every answer that is not correct (infra errors excluded), in the first category that "
            "applies: unparsable; perception error (names an item, node, city, vertex, meeting, slot or position "
            "the instance does not have); wrong decision (TSP-D, GCP-D); feasible but suboptimal; infeasible (any "
            "other wrong answer). Shares are of the failures.</p>")
    return "\n".join([
        note, html_table(failures["by_model"], table_id="failures"),
        "<details><summary>Per model and task</summary>",
        html_table(failures["by_model_task"], table_id="failures-task", max_rows=MAX_DETAIL_ROWS,
                   csv_name="failures_by_model_task.csv"), "</details>",
    ])


NO_JUDGE = ("The judge has not been run on these runs: no VGR-Score, no failure modes. Run the judge stage "
             "(cluster run with a judge) or <code>jobs/judge_rerun.py --run RUN_DIR</code>.")
JUDGE_CSV_TITLES = (
    ("judge_deltas", "Judge robustness (Table 10: VGR of each setting − the default judge)",
     "jobs/judge_rerun.py --run RUN_DIR --judge JUDGE [--repeat K]"),
    ("human_agreement", "Human agreement (Table 9: human − judge VGR)",
     "jobs/judge_rerun.py --run RUN_DIR --human CSV"),
)


def _card_html(t: Tables) -> str:
    """The judge card's grade line of each run's VGR judge (report.judge_cards), shown beside every VGR table."""
    cards = t.judge_csvs.get("judge_card")
    if cards is None:
        return ""
    many = cards.height > 1
    return "".join(f"<p class='note judge-card'>{esc(r['run'] + ': ' if many else '')}{esc(r['grade'])}</p>"
                   for r in cards.iter_rows(named=True))


def _judge_html(t: Tables, figs: dict[str, figures.Canvas]) -> str:
    """The judge part of the GraphVerse section (Table 1 with VGR-S, per edit, Figure 3, agreement)."""
    if not t.judged:
        return f'<h3>VGR-Score</h3><p class="empty">{NO_JUDGE}</p>'
    j = t.judged
    card = _card_html(t)
    out = [
        "<h3>Acc and VGR-S per model and task (%, Table 1)</h3>", card,
        "<p class='note'>Each cell: Acc / VGR-S (default judge, repeat 0), ↑ where VGR-S is above Acc, ↓ below, "
        "no arrow when equal at one decimal; n = samples behind Acc / samples the judge scored. All = every "
        "sample of the model.</p>",
        html_table(j["acc_vgr_wide"], table_id="gv-acc-vgr"),
        "<details><summary>As a long table</summary>",
        html_table(j["acc_vgr"], digits=1, table_id="gv-acc-vgr-long"), "</details>",
        "<h3>Acc and VGR-S per edit (%)</h3>", card, html_table(j["edit_vgr"], digits=1, table_id="gv-edit-vgr"),
        "<h3>Failure modes of incorrect responses (Figure 3)</h3>",
        "<p class='note'>Share of incorrect responses by the type of their first wrong step; unattributed = "
        "no wrong step labelled (e.g. no steps extracted). Shares sum to 1 per model.</p>",
        _fig_html(figs, "graphverse_failure_modes", "Failure-mode shares per model."),
        html_table(j["failure_modes"], digits=3, table_id="gv-failure-modes"),
    ]
    for name, title, how in JUDGE_CSV_TITLES:
        out.append(f"<h3>{esc(title)}</h3>")
        if name in t.judge_csvs:
            out.append(html_table(t.judge_csvs[name], digits=2, table_id=f"gv-{name.replace('_', '-')}"))
        else:
            out.append(f'<p class="empty">Not run yet ({esc(name)}.csv absent): <code>{esc(how)}</code>.</p>')
    return "\n".join(out)
