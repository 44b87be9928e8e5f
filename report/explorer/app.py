"""The explorer's web app (FastAPI, server-rendered Jinja2 pages, a little JS on the annotation page).

Every page is a GET whose query string holds the whole view (shareable links). The app writes nothing unless
started with `annotate=True`, and then only annotation files (`explorer.annotations`), through one JSON POST
that must carry the per-process token embedded in the annotation page (another site cannot read it, so it
cannot post in the person's name). All text from runs (responses, model names, judge claims) is untrusted:
Jinja2 autoescapes every value, and JSON handed to scripts goes through `report.html.format.json_for_script`.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import polars as pl
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.trustedhost import TrustedHostMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment
from markupsafe import Markup
from pydantic import ValidationError

from evalcore.records import KEY_COLUMNS
from evalcore.validation import first_error
from report.explorer import annotations as ann
from report.explorer.security import SecurityMiddleware, json_depth_ok, raster_type
from report.explorer.store import PAGE_SIZE, Filters, Store
from report.html.format import inline_svg, json_for_script
from report.html.tables import papers_view, table_view
from report.html.templating import SORT_JS, environment
from report.sections import DEFAULT_BOOT

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
MAX_IMAGE = 64 << 20  # a dataset image is KiBs; a bigger file is not one
MAX_PATH = 1024
POOLED = "pooled"  # the mode board's row of every prompt mode together (`evalcore.report_section.ModeBoard`)
TOKEN_HEADER = "X-Explorer-Token"


def _env() -> Environment:
    """The report's environment (its shared `tables.j2` macros) with the explorer's own templates first."""
    env = environment(TEMPLATES)
    env.globals["qs"] = lambda d: urlencode({k: v for k, v in d.items() if v not in ("", None)})
    return env


def sample_query(row: dict[str, Any]) -> str:
    """The query string naming one sample: its run and key."""
    return urlencode({"run": row["run"], **{c: row[c] for c in KEY_COLUMNS}})


def _key_from(params: dict[str, str]) -> dict[str, Any]:
    missing = [c for c in ("run", *KEY_COLUMNS) if c not in params]
    if missing:
        raise HTTPException(400, f"missing query parameter(s): {', '.join(missing)}")
    try:
        repeat = int(params["repeat"])
    except ValueError:
        raise HTTPException(400, "repeat: not an integer") from None
    return {**{c: params[c] for c in KEY_COLUMNS}, "repeat": repeat}


def _filters(request: Request) -> Filters:
    try:
        return Filters(**dict(request.query_params))
    except ValidationError as e:
        raise HTTPException(400, ": ".join(first_error(e, "body"))) from None


def _table(df: pl.DataFrame, cols: list[str], ci: dict[str, tuple[str, str]], digits: int = 3
           ) -> dict[str, Any]:
    """A table for the `table` macro of `tables.j2` (the report's table view): each cell's text, interval and
    sort value."""
    return table_view(df, ci, digits=digits, cols=cols)


def create_app(run_dirs: list[str | Path], *, annotate: bool = False, n_boot: int = DEFAULT_BOOT,
               annotate_seed: int = 0, warm: bool = False, allowed_hosts: list[str] | None = None) -> FastAPI:
    """The explorer over `run_dirs`. `allowed_hosts`: the Host headers to answer (the CLI passes the bound
    address and its loopback names, so a page of another site that rebinds its DNS name to 127.0.0.1
    cannot read the runs); None accepts any (in-process clients)."""
    # started by the CLI (warm): the bootstrap bounds compute in the background, the server listens at once
    store = Store(run_dirs, n_boot=n_boot, background_intervals=warm)
    if warm:
        store.warm()
    env = _env()
    app = FastAPI(title="nphe4v explorer", docs_url=None, redoc_url=None, openapi_url=None)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    app.add_middleware(SecurityMiddleware)  # added last: outermost, so its headers reach every response
    token = secrets.token_urlsafe(24)
    writers: dict[tuple[str, str], ann.SessionWriter] = {}
    app.state.store = store
    app.state.token = token
    app.state.writers = writers

    def page(name: str, **ctx: Any) -> HTMLResponse:
        ctx.setdefault("annotate", annotate)
        ctx.setdefault("runs", store.runs)
        return HTMLResponse(env.get_template(name).render(**ctx))

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> HTMLResponse:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)
        return HTMLResponse(env.get_template("error.j2").render(
            status=exc.status_code, detail=str(exc.detail), annotate=annotate, runs=store.runs),
            status_code=exc.status_code)

    rendered: dict[str, str] = {}

    @app.exception_handler(RequestValidationError)
    async def _bad_params(request: Request, exc: RequestValidationError) -> HTMLResponse:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ()) if x != "query")
        return await _http_error(request, HTTPException(400, f"{where}: {err.get('msg')}"))

    @app.exception_handler(ann.AnnotationError)
    async def _bad_annotations(request: Request, exc: ann.AnnotationError) -> HTMLResponse:
        return await _http_error(request, HTTPException(500, str(exc)))

    @app.get("/", response_class=HTMLResponse)
    def index(mode: str = POOLED) -> HTMLResponse:
        # the tables never change while the server runs: each mode's page is rendered once
        if mode not in rendered:
            html, final = _index_html(mode)
            if (mode not in store.facets()["prompt_mode"] and mode != POOLED) or not final:
                return HTMLResponse(html)  # an unknown mode (an empty table) or pending bounds: not kept
            rendered[mode] = html
        return HTMLResponse(rendered[mode])

    def _index_html(mode: str) -> tuple[str, bool]:
        """The page, and whether its numbers are final. Readiness is read once, BEFORE the boards: bounds that
        finish while the page renders leave a page that is not kept (the next request renders the final one).
        Read after, it could say "ready" of a page rendered from the boards without bounds, and that page was
        kept for the life of the server."""
        final = store.intervals_ready()
        boards = store.boards()
        board = boards["mode"]
        mode_t = None
        modes = [POOLED]
        if board is not None:
            pooled = board.pooled
            t = board.table
            modes = [pooled, *sorted(m for m in t["prompt_mode"].unique().to_list() if m != pooled)] \
                if not t.is_empty() else [pooled]
            view = t.filter(pl.col("prompt_mode") == mode)
            if board.sort:
                view = view.sort("version", pl.col(board.sort).fill_null(-1.0), "model",
                                 descending=[False, True, False])
            mode_t = {"title": store.mode_benchmark().title, "note": board.note, "id": board.id,
                      "table": _table(view, list(board.columns), {c: (f"{c}_lo", f"{c}_hi") for c in board.ci})}
        # a paper's table: a row per model, a column per task and All, the judge's score beside Acc when judged
        papers = []
        for title, pb, cards in boards["papers"]:
            card_rows = [] if cards is None else [(r["run"] if cards.height > 1 else "", r["grade"])
                                                  for r in cards.iter_rows(named=True)]
            papers.append({"title": title, "id": pb.id or f"board-{title.lower()}",
                           "table": papers_view(pb.accuracy, pb.vgr), "cards": card_rows})
        # every other registered benchmark with samples here: its own section, as in the report
        # (the boards above are the explorer's own: the leaderboard with the intervals cache and the mode switch,
        # a paper's table with the judge's column)
        from evalcore import benchmarks
        from report.html.section_view import section_view
        from report.sections import benchmark_sections

        shown = {b.name for b in benchmarks.registry().values()
                 if b.title in {p["title"] for p in papers} or b is store.mode_benchmark()}
        # the explorer's own table ids: board-<title>-<n>
        plugins = [section_view(s, id_prefix=f"board-{s.title.lower()}") for s in benchmark_sections(
            store.light(), [r.path for r in store.runs], n_boot=store.n_boot, skip=tuple(shown), say_absent=False)]
        return page("index.j2", board=mode_t, paper_boards=papers, modes=modes, mode=mode, plugins=plugins,
                    facets=store.facets(),
                    n_boot=store.n_boot, intervals_pending=not final,
                    interval_error=store.interval_error).body.decode(), final

    if warm:
        html, final = _index_html(POOLED)
        if final:
            rendered[POOLED] = html

    @app.get("/samples", response_class=HTMLResponse)
    def samples(request: Request) -> HTMLResponse:
        f = _filters(request)
        rows, total = store.samples_page(f)
        counts = store.outcome_counts(f, [f.model] if f.model else [])
        return page("samples.j2", f=f, facets=store.facets(), rows=rows.to_dicts(), total=total,
                    page_size=PAGE_SIZE, counts=_table(counts, counts.columns, {}), sample_query=sample_query)

    @app.get("/compare", response_class=HTMLResponse)
    def compare(request: Request) -> HTMLResponse:
        f = _filters(request)
        facets = store.facets()
        summary, pairs, total = None, [], 0
        if f.model and f.model_b:
            s, p, total = store.compare(f)
            summary = {(r["a_correct"], r["b_correct"]): r["len"] for r in s.to_dicts()}
            pairs = p.to_dicts()
        return page("compare.j2", f=f, facets=facets, summary=summary, pairs=pairs, total=total,
                    page_size=PAGE_SIZE, sample_query=lambda r, m: sample_query({**r, "model": m}))

    @app.get("/sample", response_class=HTMLResponse)
    def sample(request: Request) -> HTMLResponse:
        params = dict(request.query_params)
        key = _key_from(params)
        run = params["run"]
        if run not in store.by_label:
            raise HTTPException(404, f"run {run!r}: not one of the runs this explorer was started on")
        return page("sample.j2", **_sample_view(store, run, key))

    @app.get("/image")
    def image(run: str, benchmark: str, version: str, path: str) -> Response:
        # read whole (images are small) so that the bytes checked are the bytes served
        data, media_type = _image_bytes(_image_path(store, run, benchmark, version, path))
        return Response(data, media_type=media_type, headers={"Cache-Control": "no-store"})

    static = {p.name: (p.read_bytes(), STATIC_TYPES[p.suffix]) for p in [*STATIC.iterdir(), SORT_JS]
              if p.suffix in STATIC_TYPES}

    @app.get("/figures", response_class=HTMLResponse)
    def figures_page() -> HTMLResponse:
        # the report's own SVG (every text in it escaped by the canvas), inline so that tooltips work
        figs = store.figures()
        return page("figures.j2", figures=[(name, caption, Markup(inline_svg(c)))
                                           for name, (caption, c) in figs.items()],
                    intervals_pending=not store.intervals_ready())

    @app.get("/figure/{name}")
    def figure_file(name: str) -> Response:
        stem, _, ext = name.rpartition(".")
        figs = store.figures()
        if stem not in figs or ext not in ("svg", "png"):
            raise HTTPException(404, "no such figure")
        canvas = figs[stem][1]
        if ext == "png":
            return Response(canvas.png(), media_type="image/png")
        return Response(canvas.svg(), media_type="image/svg+xml")

    @app.get("/static/{name}")
    def static_file(name: str) -> Response:
        if name not in static:
            raise HTTPException(404, "no such file")
        return Response(static[name][0], media_type=static[name][1])

    if annotate:
        _annotation_routes(app, store, env, page, token, writers, annotate_seed)
    return app


def _image_path(store: Store, run: str, benchmark: str, version: str, rel: str) -> Path:
    """The file of an image a sample was sent, only inside that sample's dataset folder. A malformed
    path (NUL or control character, backslash, `..`, absolute, overlong) is a 400 before any file is named."""
    if len(rel) > MAX_PATH or any(ord(ch) < 32 or ch in "\\\x7f" for ch in rel):
        raise HTTPException(400, "path: control character, backslash or too long")
    if rel.startswith("/") or ".." in rel.split("/") or not rel.strip():
        raise HTTPException(400, "path: must be relative to the dataset folder, without '..'")
    if run not in store.by_label:
        raise HTTPException(404, "unknown run")
    ds, _ = store.instance(run, benchmark, version, "")
    if ds is None:
        raise HTTPException(404, "the run's dataset folder is gone")
    root = Path(ds.root).resolve()
    try:
        target = (root / rel).resolve()
        found = target.is_relative_to(root) and target.is_file()
    except (OSError, ValueError):
        found = False
    if not found:
        raise HTTPException(404, "no such image in the dataset")
    return target


def _image_bytes(target: Path) -> tuple[bytes, str]:
    """The file's bytes and media type, only for a PNG, JPEG or WebP file (by its name and its first bytes):
    an SVG or HTML file could run script in the explorer's origin, so it is never served, whatever its name."""
    try:
        with target.open("rb") as f:
            data = f.read(MAX_IMAGE + 1)
    except OSError:
        raise HTTPException(404, "no such image in the dataset") from None
    media_type = raster_type(target.suffix, data[:16])
    if media_type is None or len(data) > MAX_IMAGE:
        raise HTTPException(415, "not a PNG, JPEG or WebP image: not served")
    return data, media_type


def _sample_view(store: Store, run: str, key: dict[str, Any]) -> dict[str, Any]:
    from report.sample_rebuild import rebuild_sample

    row = store.sample(run, key)
    if row is None:
        raise HTTPException(404, "no such sample in this run")
    row["run"] = run
    ds, inst = store.instance(run, row["benchmark"], row["version"], row["instance_id"])
    rb = rebuild_sample(row, store.dataset_index()) if ds is not None else \
        {"prompt": None, "images": [], "gold": None, "note": "dataset not found: prompt, images and gold unavailable"}
    images = []
    for path, sha in rb["images"]:
        rel = str(Path(path).relative_to(ds.root))
        images.append({"url": "/image?" + urlencode({"run": run, "benchmark": row["benchmark"],
                                                     "version": row["version"], "path": rel}),
                       "path": rel, "sha256": sha})
    evidence = None
    if _judged(str(row["benchmark"])) and inst is not None:
        from judge.evidence import evidence_for

        try:
            evidence = evidence_for(inst)
        except (KeyError, ValueError, TypeError) as e:
            rb["note"] = (rb["note"] + "; " if rb["note"] else "") + f"evidence not built ({type(e).__name__})"
    judgments = []
    default = store.default_judge(run)
    for j in store.judgments(run, key):
        try:
            steps = json.loads(j.get("steps") or "[]")
        except (json.JSONDecodeError, TypeError):
            steps = [{"claim": str(j.get("steps")), "correct": False, "error_type": "unparsable"}]
        if not isinstance(steps, list):
            steps = []
        j["steps_list"] = [s if isinstance(s, dict) else {"claim": str(s)} for s in steps]
        j["is_default"] = default is not None and (j["judge"], j["judge_template"]) == default
        j["evidence_matches"] = evidence is not None and j.get("evidence_sha256") == evidence.sha256
        judgments.append(j)
    judgments.sort(key=lambda j: (not j["is_default"], j["judge"], j["judge_template"], j["judge_repeat"]))
    return {"row": row, "rb": rb, "images": images, "evidence": evidence, "judgments": judgments,
            "key": key, "run": run, "judged": _judged(str(row.get("benchmark")))}


def _judged(benchmark: str) -> bool:
    """Whether the benchmark's samples have a process judge (GraphVerse's VGR-Score): the page shows its
    judgments, or that there are none."""
    from evalcore import benchmarks

    try:
        return benchmarks.get(benchmark).judged
    except benchmarks.BenchmarkError:  # a run of a benchmark not installed here
        return False


def _annotation_routes(app: FastAPI, store: Store, env: Environment, page, token: str,
                       writers: dict[tuple[str, str], ann.SessionWriter], seed: int) -> None:
    queues: dict[tuple[str, str, str, int], pl.DataFrame] = {}

    def queue(run: str, task: str, model: str, per_cell: int) -> pl.DataFrame:
        """The responses to score: `task` ("" = the paper's five tasks, "*" = every task), `model` ("" =
        every model), at most `per_cell` per task and model (0 = all)."""
        k = (run, task, model, per_cell)
        if k not in queues:
            judged = store.judged()
            lf = store.scan(run=run, benchmark=judged.name if judged is not None else "",
                            models=[model] if model else (), columns=["run_id", *KEY_COLUMNS, "task", "level"])
            # no judged benchmark registered: nothing to annotate
            lf = lf.filter((pl.col("status") == "ok") & pl.lit(judged is not None))
            if task == "":
                lf = lf.filter(pl.col("task").is_in(list(ann.PAPER_TASKS)))
            elif task != "*":
                lf = lf.filter(pl.col("task") == task)
            queues[k] = ann.queue_order(lf.select("run", "run_id", *KEY_COLUMNS, "task").collect(), seed,
                                        per_cell)
        return queues[k]

    def done_keys(annotator: str) -> set[tuple]:
        out: set[tuple] = set()
        for r in store.runs:
            df = ann.read_annotations(r.path).filter(pl.col("annotator") == annotator)
            out |= {(r.label, *t) for t in df.select(KEY_COLUMNS).iter_rows()}
        return out

    @app.get("/annotate", response_class=HTMLResponse)
    def annotate_page(annotator: str = "", task: str = "", model: str = "", run: str = "",
                      per_cell: int = ann.PAPER_PER_CELL) -> HTMLResponse:
        import re

        facets = store.facets()
        tasks = [t for t in facets["task"] if t in store.judged_tasks()]
        judged = store.judged()
        ctx: dict[str, Any] = {"judged_title": judged.title if judged is not None else "judged",
                               "annotator": annotator, "task": task, "model": model, "run_f": run,
                               "facets": facets, "tasks": tasks, "paper_tasks": ann.PAPER_TASKS,
                               "per_cell": max(0, per_cell), "token": token, "item": None, "error": ""}
        if not annotator:
            return page("annotate.j2", **ctx)
        if not re.match(ann.ANNOTATOR_PATTERN, annotator):
            ctx["error"] = "annotator id: letters, digits, . _ - (at most 64 characters)"
            ctx["annotator"] = ""
            return page("annotate.j2", **ctx)
        q = queue(run, task, model, max(0, per_cell))
        done = done_keys(annotator)
        keys = [(r["run"], *[r[c] for c in KEY_COLUMNS]) for r in q.iter_rows(named=True)]
        n_done = sum(1 for k in keys if k in done)
        nxt = next((i for i, k in enumerate(keys) if k not in done), None)
        ctx.update(total=len(keys), n_done=n_done)
        if nxt is not None:
            r = q.row(nxt, named=True)
            view = _sample_view(store, r["run"], {c: r[c] for c in KEY_COLUMNS})
            # the judge's claims as a starting list, without its labels: the person's labels stay their own
            claims: list[str] = []
            for j in view["judgments"]:
                if j["is_default"]:
                    claims = [str(s.get("claim", "")) for s in j["steps_list"]]
                    break
            view["judgments"] = []
            ctx["item"] = view
            ctx["claims_json"] = Markup(json_for_script(claims))
            ctx["key_json"] = Markup(json_for_script({"run": r["run"], "key": {c: r[c] for c in KEY_COLUMNS}}))
        return page("annotate.j2", **ctx)

    @app.post("/api/annotations")
    async def post_annotation(request: Request) -> JSONResponse:
        # as bytes: compare_digest refuses a non-ASCII str, and a header may hold any byte
        if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, "").encode("latin-1"), token.encode()):
            raise HTTPException(403, "missing or wrong annotation token (reload the annotation page)")
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise HTTPException(415, "body: must be application/json")
        try:
            body = json.loads(await request.body())
            if not json_depth_ok(body):
                raise HTTPException(400, "body: JSON nested too deeply")
            sub = ann.Submission.model_validate(body)
        except (ValueError, ValidationError, RecursionError) as e:
            if isinstance(e, ValidationError):
                raise HTTPException(400, ": ".join(first_error(e, "body"))) from None
            raise HTTPException(400, "body: not JSON, or nested too deeply") from None
        if sub.run not in store.by_label:
            raise HTTPException(400, f"run {sub.run!r}: not one of the explorer's runs")
        key = _key_from({"run": sub.run, **{c: str(sub.key[c]) for c in KEY_COLUMNS}})
        row = store.sample(sub.run, key)
        judged = store.judged()
        if row is None or judged is None or row["benchmark"] != judged.name:
            raise HTTPException(400, f"key: no {judged.title if judged else 'judged'} sample with this key in the run")
        wk = (sub.run, sub.annotator)
        if wk not in writers:
            writers[wk] = ann.SessionWriter(store.by_label[sub.run].path, sub.annotator)
        stored = writers[wk].add(row, sub.steps)
        return JSONResponse({"stored": str(writers[wk].path), "human_vgr": stored["human_vgr"],
                             "n_steps": stored["n_steps"]})
