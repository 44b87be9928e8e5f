"""GraphVerse as a `Benchmark` plug-in (entry point `graphverse` in pyproject.toml): eleven tasks over a fixed
split plan (full / testmini / train), each instance with one image edit (`variant`), asked in the model's
`graphverse_modes` (vision and/or PoT), judged for the process (VGR-Score), summarised as Acc per model x task."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalcore.benchmark import Benchmark, GenerateBase, Summary
from evalcore.prompting import POT_MODE, VISION_MODE
from evalcore.schema import Instance
from evalcore.task import TaskSpec

if TYPE_CHECKING:
    from evalcore.dataset import Dataset
    from evalcore.report_section import PapersBoard, ReportContext, Section

SPLITS = ("full", "testmini", "train")
# the prompt modes of a GraphVerse sample: the image(s) hold the data; answered directly and/or as a program
GRAPHVERSE_MODES: tuple[str, ...] = (VISION_MODE, POT_MODE)
MAX_LIMIT = 1_000_000  # instances: a mistyped `limit` is refused before it plans for hours


class GraphVerseGenerate(GenerateBase):
    """The `generate:` section of a GraphVerse dataset: the split's fixed plan (its tasks, levels and counts),
    optionally cut to its first `limit` instances, from the bundled sources or local copies of the paper's."""

    split: Literal["full", "testmini", "train"] | None = Field(
        None, description="GraphVerse split; defaults to the version name's suffix (graphverse-testmini)")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description="first N instances of the split's plan")
    sources: dict[str, str] | None = Field(
        None, description="NAME -> PATH, local copies of the paper's sources (dblp, digg, flixster, lastfm, "
        "pokec, dbpedia, openflights, pubchemqc, pcqm4mv2) replacing the bundled substitutes")


GenerateSettings = GraphVerseGenerate  # what the hooks below read

GraphVerseMode = Literal["vision", "pot"]  # GRAPHVERSE_MODES (a test checks they agree)


class GraphVerseModelOptions(BaseModel):
    """What a model's entry in a run config (or a registry reference's override) says for GraphVerse."""

    model_config = ConfigDict(extra="forbid")

    graphverse_modes: list[GraphVerseMode] = Field(
        default_factory=lambda: [VISION_MODE], min_length=1,
        description="GraphVerse prompt modes: vision (reasoning + answer, the paper's direct inference) and/or "
        "pot (a program that prints the answer, run in the sandbox; GraphVerse paper §5.3)")

    @field_validator("graphverse_modes")
    @classmethod
    def _distinct_modes(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("graphverse_modes: a mode is listed twice")
        return v


class GraphVerse(Benchmark):
    name = "graphverse"
    title = "GraphVerse"
    judged = True
    levels = (1, 2)
    variant_name = "image edit"
    generate_model = GraphVerseGenerate
    # run ids and cache keys made when one model held every benchmark's fields hashed these too (per_level at
    # its default then: GraphVerse never used it)
    generate_legacy = {"per_level": 10, "tasks": None, "levels": None}
    modes_note = ("Prompt mode: `vision` (the image(s) hold the data, the text the question); `variant` is the "
                  "image edit.")

    @property
    def generator_revision(self) -> str:  # type: ignore[override]
        from gie.dataset import GENERATOR_REVISION

        return GENERATOR_REVISION

    def task_names(self) -> list[str]:
        from gie.tasks import TASK_MODULES

        return list(TASK_MODULES)

    def task(self, name: str) -> TaskSpec[Any]:
        from gie.tasks import get_task

        return get_task(name)

    # ------------------------------------------------------------------------------------ generation
    def split(self, g: GenerateSettings) -> str:
        """The split the section asks for: `split`, else the version name's suffix (graphverse-testmini)."""
        split = g.split or g.version.removeprefix("graphverse-")
        if split not in SPLITS:
            raise ValueError(f"dataset graphverse: field generate.split: {split!r} is not full, testmini or train")
        return split

    def check_generate(self, g: GenerateSettings) -> None:
        pass  # its model checks every field (tasks and levels are the split plan's, not the section's)

    def normalize_generate(self, g: GenerateSettings, d: dict[str, Any]) -> dict[str, Any]:
        # the dataset is fixed by split, seed, limit and sources: the canonical form names the split through the
        # version (`graphverse-<split>`, `split` left empty) and drops per_level; it is the form a config that
        # omits the defaults already had, so cached folders keep their names
        split = g.split or g.version.removeprefix("graphverse-")
        if split in SPLITS:  # otherwise refused where the split is used
            d["version"], d["split"] = f"graphverse-{split}", None
        d["per_level"] = self.generate_legacy["per_level"]
        d["sources"] = g.sources or None
        return d

    def planned_instances(self, g: GenerateSettings) -> int:
        from gie.dataset import plan

        return len(plan(self.split(g), g.seed, g.limit))

    def dataset_folder(self, g: GenerateSettings, key: str) -> str:
        limit, sources = g.limit, g.sources
        name = f"graphverse-{self.split(g)}-seed{g.seed}" + (f"-limit{limit}" if limit else "")
        if sources:  # user copies make another dataset even under the same paths: key on their content
            name += f"-sources{_user_sources_hash(sources)}"
        return f"graphverse/{name}-{key}"

    def default_version(self, section: dict[str, Any]) -> str:
        return f"graphverse-{section.get('split') or 'testmini'}"  # named after its split

    def generate(self, out: Path, g: GenerateSettings, progress: Callable[[int, int], None] | None = None,
                 workers: int | None = None) -> None:
        from gie.dataset import generate_split
        from gie.sources.base import SourceFileError
        from gie.sources.user_copies import use_user_sources

        split = self.split(g)
        try:
            use_user_sources(g.sources)  # also installs the copies for worker processes
        except SourceFileError as e:
            raise ValueError(f"dataset graphverse: field generate.sources: {e}") from None
        generate_split(out, split, g.seed, limit=g.limit, workers=workers, progress=progress)

    def spec_used(self, ds: Dataset) -> dict[str, Any]:
        m = ds.manifest
        used: dict[str, Any] = {"limit": m.extra.get("limit")}
        used.update({k: v for k, v in m.extra.items() if k in ("split", "sources")})
        return used

    def spec_wanted(self, g: GenerateSettings, ds: Dataset) -> dict[str, Any]:
        return {"benchmark": self.name, "version": f"graphverse-{self.split(g)}", "seed": g.seed,
                "limit": g.limit}

    # --------------------------------------------------------------------------------------- planning
    def all_prompt_modes(self) -> tuple[str, ...]:
        return GRAPHVERSE_MODES

    model_options = GraphVerseModelOptions

    def model_modes(self, options: BaseModel | None) -> list[str]:
        return list(options.graphverse_modes) if isinstance(options, GraphVerseModelOptions) else [VISION_MODE]

    def prompt_modes(self, run_modes: Sequence[str], model_modes: Sequence[str], text_only: bool) -> list[str]:
        # images + question, answered directly (vision) and/or as a program (pot), as the model's config asks
        return list(model_modes)

    def variant(self, inst: Instance) -> str:
        return str(inst.meta.get("edit", ""))  # the image edit

    def probes(self, run_modes: Sequence[str], recognition: bool) -> list[str]:
        return ["1", "2"]  # single-graph tasks and the paired tasks (two figures)

    # --------------------------------------------------------------------------------------- exports
    training_formats = ("sft", "trl", "verl")  # docs/training.md

    def export_training(self, dataset: Dataset, out: Path, fmt: str, **options: Any) -> tuple[int, list[str]]:
        from gie.training.export import TrainingExportError
        from gie.training.export import export_training as write

        try:
            return write(dataset, out, fmt, **options)
        except TrainingExportError as e:
            raise ValueError(str(e)) from None

    # ---------------------------------------------------------------------------------------- judging
    def judge_evidence(self, inst: Instance) -> Any:
        from gie.evidence import build_evidence

        return build_evidence(inst.task, inst.data)

    def wrong_answer(self, inst: Instance, graphs: Sequence[Any], query: dict[str, Any],
                     seed: int = 0) -> dict[str, Any] | None:
        # a random well-formed answer, else the gold answer with one element of its witness dropped
        import random

        from gie import answers

        rng = random.Random(f"{inst.instance_id}/{seed}")
        for _ in range(50):
            a = answers.random_answer(inst.task, graphs, query, rng)
            if answers.verify(inst.task, graphs, query, inst.gold, answers.parse(inst.task, a)).verdict != "correct":
                return a
        for key, value in inst.gold.answer.items():
            if isinstance(value, list) and len(value) > 1:
                a = {**inst.gold.answer, key: value[:1] + value[2:]}
                if answers.verify(inst.task, graphs, query, inst.gold,
                                  answers.parse(inst.task, a)).verdict != "correct":
                    return a
        return None

    # ---------------------------------------------------------------------------------------- reports
    def summaries(self, samples: pl.LazyFrame, parser: str) -> list[Summary]:
        from gie import metrics

        acc = metrics.acc_table(metrics.mode_rows(samples.collect()))  # PoT rows beside direct inference
        return [Summary(f"{self.title} accuracy (%)", "graphverse_acc.csv", acc, float_precision=2)]

    def report_sections(self, ctx: ReportContext) -> list[Section]:
        from gie.report_section import sections

        return sections(ctx, self.name, self.title)

    def papers_board(self, ctx: ReportContext) -> PapersBoard | None:
        from evalcore.report_section import PapersBoard
        from gie import report_tables as gt

        df = gt.frame_of(ctx.samples)
        gv = gt.graphverse(df)
        if not gv:
            return None
        judged = gt.graphverse_judged(df, ctx)  # the papers' Table 1: VGR-S beside Acc
        return PapersBoard(gv["accuracy"], judged["acc_vgr"] if judged else None, id="board-gv")

    compares = True  # Tables 3 / 8 / 11 / 13: PoT, fine-tuned, GIE and description arms against their baselines

    def parse_comparisons(self, raw: Any, source: str) -> Any:
        from gie.comparisons import parse_comparisons

        return parse_comparisons(raw, source)

    def comparison_tables(self, ctx: ReportContext, source: str) -> dict[str, pl.DataFrame]:
        from gie.improvement_tables import for_report

        return for_report(ctx.samples, ctx, source)

    def comparison_printout(self, tables: dict[str, pl.DataFrame]) -> list[tuple[str, pl.DataFrame]]:
        from gie.improvement_section import TITLES

        return [(f"{title}\n{note}", tables[name]) for name, title, note in TITLES
                if name in tables and tables[name].height]


def _user_sources_hash(sources: dict[str, str]) -> str:
    from evalcore.hashing import sha256_json
    from gie.sources.base import SourceFileError
    from gie.sources.user_copies import file_sha256, user_source_files

    try:
        files = {n: {f.name: file_sha256(f) for f in user_source_files(n, p)} for n, p in sorted(sources.items())}
    except (SourceFileError, OSError) as e:
        raise ValueError(f"dataset graphverse: field generate.sources: {e}") from None
    return sha256_json(files)[:12]


BENCHMARK = GraphVerse()
