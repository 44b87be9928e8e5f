"""A benchmark's report section (evalcore.report_section) rendered by the report without knowing the benchmark:
its tables, figure specs, notes and collapsed groups in the HTML page and the explorer's template, its
Markdown summary, its CSVs and figure files; and a registered benchmark's section reaching a built report with
no edit of the report (the toy benchmark, registered the way tests/test_toy_benchmark.py does)."""

from __future__ import annotations

import json

import polars as pl
import pytest
from test_toy_benchmark import toy_registered  # noqa: F401  (a fixture)

from evalcore.records import SAMPLE_SCHEMA
from evalcore.report_section import Details, Figure, Section, Table, Text
from report.figures.spec import draw
from report.html.section_view import section_markdown, section_view
from report.html.templating import report_environment

XSS = '<script>alert(1)</script>'


def _section() -> Section:
    board = pl.DataFrame({"model": ["a", XSS], "acc": [0.5, 0.25], "acc_lo": [0.4, 0.1], "acc_hi": [0.6, 0.4]})
    bars = pl.DataFrame({"label": ["a", "a", XSS], "series": ["L1", "L2", "L1"], "value": [0.5, 1.0, 0.25],
                         "lo": [0.4, None, 0.1], "hi": [0.6, None, 0.4]})
    return Section("bench-x", "X", (
        Text("How <b>acc</b> is counted.", markdown="How acc is counted."),
        Table(board, caption="X board", ci=("acc",), csv_name="x_board.csv"),
        Figure("x_levels", "bars", bars, title="Accuracy per level", caption="Per level."),
        Details("More", (Table(board.select("model"), caption="Models", id="x-models"),)),
        Table(board, caption="Page only", in_markdown=False),
    ), {"x_board": board}, nav="x")


def test_a_section_renders_its_blocks_in_the_page_and_the_explorer_escaped():
    s = _section()
    macros = report_environment().get_template("sections.j2").module
    page = str(macros.section(section_view(s)))  # type: ignore[attr-defined]
    assert page.startswith('<section id="bench-x"><h2>X</h2>')
    assert '<p class="note">How <b>acc</b> is counted.</p>' in page  # the benchmark's own markup
    assert '<h3>X board</h3>' in page and 'id="bench-x-1"' in page and 'id="bench-x-2"' in page
    assert "acc <small>[95% CI]</small>" in page and "[0.400, 0.600]" in page
    assert '<figure class="fig" id="fig-x_levels"><svg' in page and "Accuracy per level" in page
    assert "<details><summary>More</summary>" in page and 'id="x-models"' in page
    assert XSS not in page and "&lt;script&gt;" in page  # model names are data: escaped in tables and figure
    # the explorer's variant: the model column links to its samples
    env = report_environment().overlay()
    env.globals["qs"] = lambda d: "&".join(f"{k}={v}" for k, v in d.items())
    linked = str(env.get_template("sections.j2").module.section(section_view(s), True))  # type: ignore[attr-defined]
    assert '<a href="/samples?model=a">a</a>' in linked


def test_a_section_in_markdown_keeps_the_tables_and_texts_it_offers():
    md = report_environment().get_template("sections.md.j2").module.section(  # type: ignore[attr-defined]
        section_markdown(_section()))
    assert "## X" in md and "### X board" in md and "How acc is counted." in md
    assert "Page only" not in md and "Models" not in md and "<b>" not in md


def test_a_figure_spec_is_drawn_or_refused_in_one_line():
    svg = draw(_section().figures()[0]).svg()
    assert "Accuracy per level" in svg and "L2" in svg
    with pytest.raises(ValueError, match="figure 'f': bars data lacks the column"):
        draw(Figure("f", "bars", pl.DataFrame({"label": ["a"]})))
    with pytest.raises(ValueError, match="figure 'f': kind 'pie' is not one of bars"):
        draw(Figure("f", "pie", pl.DataFrame()))  # type: ignore[arg-type]


def test_a_registered_benchmarks_section_reaches_the_report(toy_registered, tmp_path):  # noqa: F811
    """The toy's default section (its `summaries` as tables) in the page, the nav, the Markdown summary and the
    CSVs of a report over a run folder that holds toy samples only."""
    from report.html_report import build_report

    run = tmp_path / "run"
    rows = [{"run_id": "r", "model": m, "benchmark": "toy", "version": "t1", "task": "MAX", "level": lv,
             "instance_id": f"max-L{lv:02d}-000", "variant": "", "prompt_mode": "full_text_only", "repeat": 0,
             "status": "ok", "verdict": "correct" if m == "oracle" else "wrong", "parsed_answer": "1",
             "raw_response": "x"} for m in ("oracle", "random") for lv in (1, 2)]
    folder = run / "samples" / "toy" / "m"
    folder.mkdir(parents=True)
    pl.DataFrame(rows, schema=SAMPLE_SCHEMA).write_parquet(folder / "part-0.parquet")
    (run / "manifest.json").write_text(json.dumps({"run_id": "r", "status": "complete", "config": {
        "models": [{"name": "oracle"}, {"name": "random"}], "prompt_modes": ["full_text_only"]}, "datasets": []}))
    res = build_report([run], tmp_path / "out" / "report.html", tmp_path / "out" / "report.md", n_boot=10)
    html = res.html.read_text()
    assert '<section id="bench-toy"><h2>Toy</h2>' in html and '<a href="#bench-toy">Toy</a>' in html
    assert "<h3>Toy accuracy per level</h3>" in html and 'id="bench-toy-2"' in html
    assert "## Toy" in res.markdown.read_text() and "### Toy leaderboard" in res.markdown.read_text()
    by_level = pl.read_csv(tmp_path / "out" / "report_tables" / "toy_by_level.csv")
    assert by_level.select("model", "level", "n", "acc").sort("model", "level").rows() == [
        ("oracle", 1, 1, 1.0), ("oracle", 2, 1, 1.0), ("random", 1, 1, 0.0), ("random", 2, 1, 0.0)]
    assert pl.read_csv(tmp_path / "out" / "report_tables" / "toy_leaderboard.csv").height == 2


def test_a_heatmap_spec_carries_its_task_order_classes_and_empty_text():
    """The drawer knows no benchmark: the spec's params give the columns' task order, each task's complexity
    class (a bar over the class's tasks) and the text of a figure without rows."""
    cells = pl.DataFrame({"version": ["v"] * 4, "model": ["m"] * 4, "task": ["A", "A", "B", "B"],
                          "level": [1, 2, 1, 2], "wa": [0.1, 0.2, 0.3, 0.4]})
    params = {"value": "wa", "task_order": ["B", "A"], "task_class": {"A": "NPH", "B": "P"}, "empty": "Nothing."}
    svg = draw(Figure("h", "heatmap", cells, params=params)).svg()
    assert svg.index(">B<") < svg.index(">A<") and "NP-hard" in svg
    assert "Nothing." in draw(Figure("h", "heatmap", cells.head(0), params=params)).svg()


def test_a_benchmark_without_the_report_hooks(monkeypatch):
    """The base class's defaults: no explorer boards, no comparisons spec; with no registered benchmark taking
    one, `nphe4v report --comparisons` is refused in one line naming the file, and the command line's
    comparison tables are none."""
    from evalcore import benchmarks
    from evalcore.benchmark import Benchmark
    from report.comparisons import ComparisonError, parse_comparisons
    from report.report_tables import improvement

    plain = Benchmark()
    rows = pl.DataFrame(schema=SAMPLE_SCHEMA)
    assert plain.mode_board(rows, 0, 0) is None and plain.comparison_printout({}) == [] and not plain.compares
    monkeypatch.setattr(benchmarks, "registry", lambda: {"x": plain})
    with pytest.raises(ComparisonError, match="^c.yaml: no registered benchmark takes a comparisons spec$"):
        parse_comparisons({"improvements": []}, "c.yaml")
    assert improvement([], rows, None, n_boot=0, seed=0) == {}
