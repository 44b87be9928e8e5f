"""The report's HTML page: report/templates/report.html.j2 rendered over the report's tables (as views for the
shared tables.j2 macros), its inline SVG figures and the sample browser; the page's style and script."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from markupsafe import Markup

from evalcore.report_section import Section
from report import analysis, figures
from report.html.section_view import section_view
from report.html.tables import table_view
from report.html.templating import report_environment, sort_js
from report.report_tables import Tables

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
// the sample browser's filters and lazy details (the tables' sorting: report/templates/sort.js)
(function(){
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


def _views(runs: Sequence[analysis.Run], t: Tables) -> dict[str, Any]:
    """The report's own tables as views for tables.j2's `sortable` macro."""
    return {"runs": table_view(runs_table(runs))}


def render_page(title: str, runs: Sequence[analysis.Run], t: Tables, figs: dict[str, figures.Canvas],
                browser_html: str, per_group: int) -> str:
    """The page from report/templates/report.html.j2. ``browser_html`` is the sample browser's HTML (its
    values escaped where it is built)."""
    nav = [("missing", "missing"), *_nav(t.sections), ("samples", "samples")]
    return report_environment().get_template("report.html.j2").render(
        title=title, css=Markup(CSS), js=Markup(sort_js() + JS), nav=nav, t=_views(runs, t),
        missing=[(r["run"], r["detail"]) for r in t.missing.iter_rows(named=True)],
        sections=[section_view(s, figs) for s in t.sections], browser=Markup(browser_html))


def _nav(sections: Sequence[Section]) -> list[tuple[str, str]]:
    return [(s.anchor, s.title if s.nav is None else s.nav) for s in sections if s.nav != ""]
