"""The explorer's queries over run folders: lazy Parquet scans pruned to the shard folders a filter needs.

Samples are never all loaded: a drill-down or sample lookup scans only the shards of the benchmarks and
models it asks for (the sink writes `samples/<benchmark>/<model>/part-*.parquet`) and only the columns it
shows. The tables computed over every sample (leaderboards, facets) read the metric columns once and are
kept for the life of the server: a run folder is finished data, the explorer never writes samples.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalcore import benchmarks
from evalcore.benchmark import Benchmark
from evalcore.records import KEY_COLUMNS, SAMPLE_SCHEMA, primary_parse
from evalcore.report_section import ModeBoard
from evalcore.shards import slug
from report.interval_cache import IntervalCache
from report.judge_cards import card_lines
from report.runs import LIGHT_COLUMNS, Run, load_runs, run_datasets
from report.sections import DEFAULT_BOOT, DEFAULT_SEED, RunsContext

PAGE_SIZE = 100
LIST_COLUMNS = ["run", "model", "benchmark", "version", "task", "level", "instance_id", "variant", "prompt_mode",
                "repeat", "status", "verdict", "outcome"]
PAIR_KEY = ["run", "benchmark", "version", "instance_id", "variant", "prompt_mode", "repeat"]
FACET_COLUMNS = ("benchmark", "model", "task", "level", "prompt_mode", "variant", "outcome", "run")
# the columns every all-samples table (leaderboards, facets) needs; free text never
METRIC_COLUMNS = [c for c in LIGHT_COLUMNS
                  if c not in ("reason", "prompt_sha256", "image_sha256", "template_version", "schema_version")]


class StoreError(ValueError):
    """A run folder the explorer cannot open; one line naming it."""


def _damaged(path: Path, e: BaseException) -> str:
    first = (str(e).strip().splitlines() or [""])[0][:200]
    return (f"{path}: unreadable sample shard ({type(e).__name__}: {first}); move it out of "
            f"{path.parents[2].name}/ and rerun: its samples are recomputed")


def outcome_expr() -> pl.Expr:
    """What a sample came to, as the report names it: its status when not ok, else its verdict."""
    return (pl.when(pl.col("status") != "ok").then(pl.col("status"))
            .otherwise(pl.col("verdict").fill_null("parse_error")).alias("outcome"))


class Filters(BaseModel):
    """The drill-down filters, exactly the URL's query parameters (so a link reproduces the view)."""

    model_config = ConfigDict(extra="ignore")

    benchmark: str = ""
    model: str = ""
    model_b: str = ""
    task: str = ""
    level: str = ""
    prompt_mode: str = ""
    variant: str = ""
    outcome: str = ""
    run: str = ""
    page: int = Field(0, ge=0, le=1_000_000)

    @field_validator("*", mode="before")
    @classmethod
    def _strip(cls, v: Any) -> Any:
        return v.strip() if isinstance(v, str) else v

    def exprs(self) -> list[pl.Expr]:
        out = []
        for col in ("benchmark", "task", "prompt_mode", "variant", "outcome", "run"):
            v = getattr(self, col)
            if v:
                out.append(pl.col(col) == v)
        if self.level:
            try:
                out.append(pl.col("level") == int(self.level))
            except ValueError:
                out.append(pl.lit(False))
        return out

    def query(self, **override: Any) -> dict[str, str]:
        """The non-empty filters as query parameters (links keep every filter but the ones overridden)."""
        d = {k: str(v) for k, v in self.model_dump().items() if v not in ("", 0, None)}
        for k, v in override.items():
            if v in ("", None):
                d.pop(k, None)
            else:
                d[k] = str(v)
        return d


@dataclass(frozen=True)
class Shard:
    run: str
    bench_slug: str
    model_slug: str
    path: Path


class Store:
    """The run folders the server was started on, their shard index and the cached whole-run tables."""

    def __init__(self, run_dirs: Sequence[str | Path], n_boot: int = DEFAULT_BOOT,
                 background_intervals: bool = False) -> None:
        for d in run_dirs:
            try:
                found = Path(d, "manifest.json").is_file()
            except OSError as e:  # a name too long for the file system, a loop of links
                raise StoreError(f"{str(d)[:200]}: {e.strerror or e}") from None
            if not found:
                raise StoreError(f"{d}: not a run folder (no manifest.json)")
        self.runs = load_runs(list(run_dirs))
        for r in self.runs:
            if r.manifest is None:
                raise StoreError(f"{r.path}/manifest.json: unreadable run manifest (not a JSON object in UTF-8)")
        labels = [r.label for r in self.runs]
        if len(set(labels)) != len(labels):
            # two folders of the same run id: the second gets its folder name so links stay unambiguous
            seen: set[str] = set()
            fixed = []
            for r in self.runs:
                lab = r.label if r.label not in seen else f"{r.label}@{r.path.name}"
                seen.add(lab)
                fixed.append(Run(path=r.path, label=lab, manifest=r.manifest))
            self.runs = fixed
        self.by_label = {r.label: r for r in self.runs}
        self.n_boot = n_boot
        self.shards: list[Shard] = []
        for r in self.runs:
            for f in sorted(Path(r.path, "samples").glob("*/*/*.parquet")):
                self.shards.append(Shard(r.label, f.parent.parent.name, f.parent.name, f))
        for sh in self.shards:  # a footer read per shard (cheap): a 0-byte or cut shard is one line, up front
            try:
                pl.read_parquet_schema(sh.path)
            except Exception as e:  # polars raises several unrelated types for a damaged file
                raise StoreError(_damaged(sh.path, e)) from None
        self._lock = threading.RLock()  # cached tables build on each other
        self._cache: dict[str, Any] = {}
        self._dataset_index = None
        # the leaderboard's bootstrap bounds: from the run's cache file, else computed once (in a background
        # thread when `background_intervals`, so that the server listens before they are ready)
        finished = all(r.manifest.get("status") == "complete" for r in self.runs)  # else a writer is at work
        self._iv_cache = IntervalCache([r.path for r in self.runs], n_boot, DEFAULT_SEED, write=finished)
        self._background = background_intervals
        self._intervals: pl.DataFrame | None = None
        self._iv_thread: threading.Thread | None = None
        self.interval_error: str | None = None

    # ------------------------------------------------------------------------------------------ scanning

    def scan(self, *, run: str = "", benchmark: str = "", models: Sequence[str] = (),
             columns: Sequence[str] | None = None) -> pl.LazyFrame:
        """The samples of the shards that can hold rows of `run`, `benchmark` and `models` (folder pruning),
        with `run` (label) and `outcome` columns; rows still filtered by value, as slugs may collide."""
        mslugs = {slug(m) for m in models}
        picked: dict[str, list[Path]] = {}
        for s in self.shards:
            if run and s.run != run:
                continue
            if benchmark and s.bench_slug != slug(benchmark):
                continue
            if mslugs and s.model_slug not in mslugs:
                continue
            picked.setdefault(s.run, []).append(s.path)
        want = [c for c in (columns or SAMPLE_SCHEMA) if c in SAMPLE_SCHEMA]
        for need in ("status", "verdict"):
            if need not in want:
                want.append(need)
        frames = []
        for label, files in picked.items():
            lf = pl.scan_parquet(files, schema=SAMPLE_SCHEMA, hive_partitioning=False, missing_columns="insert")
            frames.append(lf.select(want).with_columns(run=pl.lit(label)))
        if not frames:
            return pl.LazyFrame(schema={**{c: SAMPLE_SCHEMA[c] for c in want}, "run": pl.String}) \
                .with_columns(outcome_expr())
        lf = frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
        if benchmark:
            lf = lf.filter(pl.col("benchmark") == benchmark)
        if models:
            lf = lf.filter(pl.col("model").is_in(list(models)))
        return lf.with_columns(outcome_expr())

    def _cached(self, name: str, build) -> Any:
        with self._lock:
            if name not in self._cache:
                self._cache[name] = build()
            return self._cache[name]

    # ------------------------------------------------------------------------------------------ whole runs

    def light(self) -> pl.DataFrame:
        """Metric columns of every sample (no free text), the same (version, key) once (first run wins). Each
        run's answers are graded with the parse its config leads with (`parser`), as the report grades them, so
        the explorer's boards and the report's tables of a `parser: paper` run agree."""
        def build() -> pl.DataFrame:
            lf = self.scan(columns=METRIC_COLUMNS)
            parsers = {r.label: str(r.config.get("parser") or "tolerant") for r in self.runs}
            if any(p != "tolerant" for p in parsers.values()):
                lf = pl.concat([primary_parse(lf.filter(pl.col("run") == label), p)
                                .drop("outcome").with_columns(outcome_expr()) for label, p in parsers.items()],
                               how="vertical")
            df = lf.collect(engine="streaming")
            if len(self.runs) == 1:  # the sink writes a key once per run folder
                return df
            return df.unique(subset=["version", *KEY_COLUMNS], keep="first", maintain_order=True)
        return self._cached("light", build)

    def facets(self) -> dict[str, list[str]]:
        def build() -> dict[str, list[str]]:
            df = self.light()
            out = {}
            for c in FACET_COLUMNS:
                # "" (no variant: NPHardEval4V answers) cannot be chosen apart from "all"
                vals = [v for v in df.get_column(c).drop_nulls().unique().to_list() if v != ""]
                out[c] = [str(v) for v in sorted(vals, key=lambda v: (isinstance(v, str), v))]
            return out
        return self._cached("facets", build)

    def judged(self) -> Benchmark | None:
        """The registered benchmark whose samples people annotate (the first `judged` one), None when none is."""
        return next((b for b in benchmarks.registry().values() if b.judged), None)

    def judged_tasks(self) -> list[str]:
        def build() -> list[str]:
            b = self.judged()
            df = self.light().filter(pl.col("benchmark") == (b.name if b is not None else ""))
            return sorted(df.get_column("task").unique().to_list())
        return self._cached("judged_tasks", build)

    def _rows(self, b: Benchmark) -> pl.DataFrame:
        return self.light().filter(pl.col("benchmark") == b.name)

    def mode_benchmark(self) -> Benchmark | None:
        """The benchmark whose leaderboard the explorer shows per prompt mode, with the bootstrap bounds of its
        interval cache (`Benchmark.mode_board`: the first registered benchmark that has one)."""
        def build() -> Benchmark | None:
            return next((b for b in benchmarks.registry().values()
                         if b.mode_board(self._rows(b).head(0), 0, DEFAULT_SEED) is not None), None)
        return self._cached("mode_benchmark", build)

    def _base_boards(self) -> dict[str, Any]:
        """The boards without the bootstrap bounds (quick: counts, Wilson intervals): ``mode`` the mode board
        (`mode_benchmark`; None without one), ``papers`` (title, `PapersBoard`, judge card lines or None) of each
        benchmark with samples that has one (`Benchmark.papers_board`)."""
        def build() -> dict[str, Any]:
            mb = self.mode_benchmark()
            paths = [r.path for r in self.runs]
            papers = []
            for b in benchmarks.registry().values():
                rows = self._rows(b)
                if rows.is_empty():
                    continue
                pb = b.papers_board(RunsContext(b.name, rows.lazy(), paths, self.n_boot, DEFAULT_SEED))
                if pb is not None:
                    # the grade of each run's judge, shown beside its column
                    cards = card_lines(paths, [r.label for r in self.runs]) if pb.vgr is not None else None
                    papers.append((b.title, pb, cards))
            return {"mode": None if mb is None else mb.mode_board(self._rows(mb), 0, DEFAULT_SEED),
                    "papers": papers}
        return self._cached("base_boards", build)

    def _compute_intervals(self) -> pl.DataFrame:
        mb = self.mode_benchmark()
        board = mb.mode_board(self._rows(mb), self.n_boot, DEFAULT_SEED) if mb is not None else None
        if board is None:
            return pl.DataFrame()
        iv = board.table.select("version", "model", "prompt_mode", *board.boot_bounds)
        self._iv_cache.save(iv)  # a read-only run folder keeps them in memory only
        return iv

    def _run_intervals(self) -> None:
        try:
            iv = self._compute_intervals()
        except Exception as e:  # shown on the page instead of intervals; the server keeps serving
            self.interval_error = f"{type(e).__name__}: {e}"
            return
        with self._lock:
            self._intervals = iv

    def _boot_bounds(self) -> list[str]:
        board = self._base_boards()["mode"]
        return list(board.boot_bounds) if board is not None else []

    def intervals(self) -> pl.DataFrame | None:
        """The bootstrap bound columns per version, model and prompt mode; None while they are computed."""
        if self.n_boot <= 0 or not self._boot_bounds():
            return None
        with self._lock:
            if self._intervals is not None or self._iv_thread is not None:
                return self._intervals
            cached = self._iv_cache.load()
            if cached is not None and set(self._boot_bounds()) <= set(cached.columns):
                self._intervals = cached
                return cached
            if not self._background:
                self._intervals = self._compute_intervals()
                return self._intervals
            self._iv_thread = threading.Thread(target=self._run_intervals, name="bootstrap-intervals", daemon=True)
            self._iv_thread.start()
            return None

    def intervals_ready(self) -> bool:
        """True once the boards carry their final numbers (bootstrap bounds, or none asked for)."""
        return (self.n_boot <= 0 or not self._boot_bounds() or self.intervals() is not None
                or self.interval_error is not None)

    def wait_intervals(self, timeout: float | None = None) -> bool:
        self.intervals()
        t = self._iv_thread
        if t is not None:
            t.join(timeout)
        return self.intervals_ready()

    def boards(self) -> dict[str, Any]:
        """The boards with their intervals (``_base_boards``): the mode board's bootstrap bounds are null while
        the bootstrap runs in the background (`intervals_ready`)."""
        base = self._base_boards()
        iv = self.intervals()
        if iv is None:
            return base
        def build() -> dict[str, Any]:
            board: ModeBoard = base["mode"]
            keys = ["version", "model", "prompt_mode"]
            table = board.table.drop(list(board.boot_bounds)).join(iv, on=keys, how="left", nulls_equal=True) \
                .select(board.table.columns)
            return {**base, "mode": replace(board, table=table)}
        return self._cached("boards", build)

    def sections(self) -> list[Any]:
        """Every benchmark's report sections over these runs (`report.sections.benchmark_sections`) from the
        samples as the report reads them (`report.runs.samples`), computed once."""
        from report.runs import samples
        from report.sections import benchmark_sections

        paths = [r.path for r in self.runs]
        return self._cached("sections", lambda: benchmark_sections(
            samples(paths, light=True), paths, n_boot=self.n_boot, seed=DEFAULT_SEED, say_absent=False))

    def figures(self) -> dict[str, tuple[str, Any]]:
        """The report's figures over these runs: the benchmarks' sections' figure specs drawn as the report draws
        them, by name: (caption, canvas)."""
        from report.figures.spec import draw

        def build() -> dict[str, tuple[str, Any]]:
            return {f.name: (f.caption, draw(f)) for s in self.sections() for f in s.figures()}
        return self._cached("figures", build)

    def warm(self) -> None:
        """Build the whole-run tables now (the server does before it listens), so no page waits for them; the
        bootstrap bounds come from the run's cache file or start computing (in the background if so made), and
        so does the datasets' index the sample pages need (a second or more of reading manifests). A shard whose
        data cannot be read (its footer could) is one StoreError line naming it."""
        try:
            self.boards()
            self.facets()
        except (pl.exceptions.PolarsError, OSError) as e:
            for sh in self.shards:  # which shard: the combined scan's error does not say
                try:
                    pl.read_parquet(sh.path, columns=METRIC_COLUMNS, missing_columns="insert")
                except Exception as bad:
                    raise StoreError(_damaged(sh.path, bad)) from None
            raise StoreError(f"{self.runs[0].path if len(self.runs) == 1 else 'the runs'}: samples unreadable "
                             f"({type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]})") from None
        if self._background:
            threading.Thread(target=self._warm_datasets, name="dataset-index", daemon=True).start()
        else:
            self.dataset_index()

    def _warm_datasets(self) -> None:
        from report.sample_rebuild import DatasetIndex

        idx = DatasetIndex(self.runs)  # built outside the lock: pages keep reading the other cached tables
        with self._lock:
            self._cache.setdefault("dataset_index", idx)

    # ------------------------------------------------------------------------------------------ drill-down

    def samples_page(self, f: Filters) -> tuple[pl.DataFrame, int]:
        """One page of the matching samples (list columns only) and the number of matches."""
        lf = self.scan(run=f.run, benchmark=f.benchmark, models=[f.model] if f.model else (),
                       columns=LIST_COLUMNS[1:-1])
        for e in f.exprs():
            lf = lf.filter(e)
        lf = lf.select(LIST_COLUMNS)
        total = lf.select(pl.len()).collect().item()
        page = lf.sort(["model", "benchmark", "task", "level", "instance_id", "prompt_mode", "variant", "repeat"]) \
            .slice(f.page * PAGE_SIZE, PAGE_SIZE).collect()
        return page, int(total)

    def outcome_counts(self, f: Filters, models: Sequence[str]) -> pl.DataFrame:
        """Per model (and task): samples by outcome under the filters, from the cached metric columns."""
        df = self.light().lazy()
        for e in Filters(**{**f.model_dump(), "outcome": ""}).exprs():
            df = df.filter(e)
        if models:
            df = df.filter(pl.col("model").is_in(list(models)))
        return (df.group_by("model", "outcome").len().collect()
                .pivot(on="outcome", index="model", values="len").fill_null(0).sort("model"))

    def compare(self, f: Filters) -> tuple[pl.DataFrame, pl.DataFrame, int]:
        """Model A vs model B on the samples both answered (same run, version, instance, mode, variant,
        repeat): the 2x2 counts of correct / not correct and one page of the pairs under the filters;
        `outcome` filters on A's outcome."""
        a, b = f.model, f.model_b
        cols = ["model", "benchmark", "version", "task", "level", "instance_id", "variant", "prompt_mode",
                "repeat", "status", "verdict"]
        base = Filters(**{**f.model_dump(), "outcome": ""})
        sides = []
        for name, tag in ((a, "a"), (b, "b")):
            lf = self.scan(run=f.run, benchmark=f.benchmark, models=[name], columns=cols)
            for e in base.exprs():
                lf = lf.filter(e)
            sides.append(lf.select(*PAIR_KEY, "task", "level",
                                   pl.col("outcome").alias(f"outcome_{tag}")))
        both = sides[0].join(sides[1].drop("task", "level"), on=PAIR_KEY, how="inner")
        summary = both.group_by(
            (pl.col("outcome_a") == "correct").alias("a_correct"),
            (pl.col("outcome_b") == "correct").alias("b_correct"),
        ).len().collect().sort("a_correct", "b_correct")
        if f.outcome:
            both = both.filter(pl.col("outcome_a") == f.outcome)
        diff = pl.col("outcome_a") != pl.col("outcome_b")
        total = both.select(pl.len()).collect().item()
        page = (both.with_columns(differ=diff)
                .sort(["differ", "benchmark", "task", "level", "instance_id", "prompt_mode", "variant", "repeat"],
                      descending=[True, False, False, False, False, False, False, False])
                .slice(f.page * PAGE_SIZE, PAGE_SIZE).collect())
        return summary, page, int(total)

    # ------------------------------------------------------------------------------------------ one sample

    def sample(self, run: str, key: dict[str, Any]) -> dict[str, Any] | None:
        """Every column of one sample (key: the sample key columns), or None."""
        lf = self.scan(run=run, benchmark=str(key["benchmark"]), models=[str(key["model"])])
        for c in KEY_COLUMNS:
            lf = lf.filter(pl.col(c) == key[c])
        rows = lf.head(1).collect().to_dicts()
        return rows[0] if rows else None

    def judgments(self, run: str, key: dict[str, Any]) -> list[dict[str, Any]]:
        """Every judgment of one sample (all judges and repeats) in the run's judgments/ folder."""
        from judge.schema import JUDGMENT_SCHEMA
        from judge.vgr import judgments_dir

        files = sorted(judgments_dir(self.by_label[run].path).glob("**/*.parquet"))
        if not files:
            return []
        lf = pl.scan_parquet(files, schema=JUDGMENT_SCHEMA, hive_partitioning=False, missing_columns="insert")
        for c in KEY_COLUMNS:
            lf = lf.filter(pl.col(c) == key[c])
        return lf.sort("judge", "judge_template", "judge_repeat").collect().to_dicts()

    def default_judge(self, run: str) -> tuple[str, str] | None:
        from judge.vgr import read_manifest

        d = read_manifest(self.by_label[run].path).get("default")
        return (d["judge"], d["judge_template"]) if d else None

    def dataset_index(self):
        from report.sample_rebuild import DatasetIndex

        return self._cached("dataset_index", lambda: DatasetIndex(self.runs))

    def instance(self, run: str, benchmark: str, version: str, instance_id: str):
        """(dataset, instance) of a sample, or (None, None) when the dataset folder is gone."""
        hit = self.dataset_index().get(run, benchmark, version)
        if hit is None:
            return None, None
        ds, info = hit
        return ds, info["by_id"].get(instance_id)

    def dataset_roots(self, run: str) -> list[Path]:
        return [ds.root.resolve() for _e, ds in run_datasets(self.by_label[run]) if ds is not None]
