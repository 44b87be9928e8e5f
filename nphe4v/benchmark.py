"""NPHardEval4V as a `Benchmark` plug-in (entry point `nphardeval4v` in pyproject.toml): nine tasks x ten
levels, three prompt modes, the recognition experiment, the authors' prompt files, ER/AA/RA leaderboard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from pydantic import BaseModel

from evalcore.benchmark import Benchmark, GenerateSettings, Summary
from evalcore.recognition import RecognitionSpec
from evalcore.schema import Instance, Prompt
from evalcore.task import TaskSpec
from nphe4v.run_options import NPHardEval4VRunOptions

if TYPE_CHECKING:
    from evalcore.dataset import Dataset
    from evalcore.report_section import ModeBoard, ReportContext, Section


class NPHardEval4V(Benchmark):
    name = "nphardeval4v"
    title = "NPHardEval4V"
    default = True
    recognition = True
    paper_prompts = True
    # its `generate:` section is the base class's (version, seed, per_level, tasks, levels); run ids and cache
    # keys made when one model held every benchmark's fields hashed these as null too
    generate_legacy = {"split": None, "limit": None, "sources": None}
    modes_note = (
        "Prompt modes: `figure+limited_text` (figure, data only in the figure), `full_text_only` (no image: "
        "send the text alone), `figure+full_text` (figure and the data in text), and `recognition` (does the "
        "figure show the described instance? `variant` `match`, or `mismatch` with the text of "
        "`text_instance_id`; a live run asks each 5 times at temperature 0.7).")

    @property
    def generator_revision(self) -> str:  # type: ignore[override]
        from nphe4v.generate import GENERATOR_REVISION

        return GENERATOR_REVISION

    def task_names(self) -> list[str]:
        from nphe4v.tasks import TASK_MODULES

        return list(TASK_MODULES)

    def task(self, name: str) -> TaskSpec[Any]:
        from nphe4v.tasks import get_task

        return get_task(name)

    def generate(self, out: Path, g: GenerateSettings, progress: Callable[[int, int], None] | None = None,
                 workers: int | None = None) -> None:
        # the generator's own (parallel) loop: the same bytes as the base class's, in worker processes
        from nphe4v.generate import generate_version

        n = self.normalize_generate(g, {})
        generate_version(out, version=g.version, seed=g.seed, per_level=g.per_level, tasks=n["tasks"],
                         levels=n["levels"], workers=workers, progress=progress)

    def recognition_partners(self, dataset: Dataset, seed: int) -> dict[str, str]:
        from nphe4v.recognition import mismatch_partners

        return mismatch_partners(dataset, seed)

    def paper_prompt(self, inst: Instance, mode: str, backend: str, prompt_assets: str | None) -> Any:
        from evalcore.instance_prompt import instance_prompt
        from nphe4v.paper_prompts import prompt_file_for

        return instance_prompt(inst, mode, "paper", prompt_file_for(backend), prompt_assets, download=False)

    paper_prompt_kinds = ("open", "api")  # Open/prompts.py, Prompts/prompts.py

    # `parser:`, `prompts:`, `prompt_assets:` and `recognition:` at the top level of a run config
    run_options = NPHardEval4VRunOptions

    def run_fingerprint(self, options: BaseModel) -> dict[str, Any]:
        # `parser` only chooses which recorded parse the tables lead with: every sample carries both; where the
        # prompt files are read from does not change them (they are pinned by SHA-256)
        d = options.model_dump(mode="json", exclude={"parser", "prompt_assets"})
        # runs made before the paper prompts existed sent the rewritten set: they keep their id
        if d["prompts"] == "rewritten":
            d.pop("prompts")
        return d

    def recognition_settings(self, options: BaseModel | None) -> RecognitionSpec | None:
        return options.recognition if isinstance(options, NPHardEval4VRunOptions) else None

    def sends_paper_prompts(self, options: BaseModel | None) -> bool:
        return isinstance(options, NPHardEval4VRunOptions) and options.prompts == "paper"

    def prompt_assets(self, options: BaseModel | None) -> str | None:
        return options.prompt_assets if isinstance(options, NPHardEval4VRunOptions) else None

    # the data files the NPHardEval and NPHardEval4V authors published (`nphe4v import-peer`), gold from our solvers
    peer_formats = ("nphardeval", "nphardeval4v")

    def import_peer(self, fmt: str, src: Path, out: Path) -> tuple[Any, list[str]]:
        from nphe4v.peer_dataset import import_peer_dataset

        return import_peer_dataset(fmt, src, out)  # type: ignore[arg-type]

    def paper_prompts_label(self) -> str:
        from nphe4v.paper_prompts import PROMPT_FILES
        from nphe4v.upstream_assets import UPSTREAM_COMMIT, UPSTREAM_REPO

        return (f"paper ({UPSTREAM_REPO}@{UPSTREAM_COMMIT[:7]}: {PROMPT_FILES['open']} for open-weights models, "
                f"{PROMPT_FILES['api']} for API models)")

    def load_paper_prompts(self, prompt_assets: str | None, download: bool = True) -> Any:
        # the pinned files of the authors' repository: a checkout (`prompt_assets`, NPHE4V_PROMPT_ASSETS) or the
        # cache, filled once from the pinned commit when `download`
        from nphe4v.paper_prompts import load_prompt_set
        from nphe4v.upstream_assets import AssetSource, resolve_assets

        src = AssetSource.from_config(prompt_assets)
        if not download:
            src = AssetSource(local=src.local, download=False)
        return load_prompt_set(resolve_assets(src).resolve())

    def paper_prompt_kind(self, backend: str) -> str:
        from nphe4v.paper_prompts import prompt_file_for

        return prompt_file_for(backend)

    def paper_template_kind(self, template_version: str) -> str | None:
        from nphe4v.paper_prompts import PAPER_TEMPLATE_VERSION

        # a paper prompt's template_version is `<PAPER_TEMPLATE_VERSION>-open` or `-api`
        prefix = PAPER_TEMPLATE_VERSION + "-"
        return template_version.removeprefix(prefix) if template_version.startswith(prefix) else None

    def build_paper_prompt(self, prompts: Any, inst: Instance, mode: str, kind: str) -> Prompt:
        from nphe4v.paper_prompts import PAPER_INPUTS, build_paper_prompt

        data = self.task(inst.task).load(inst.data)
        return build_paper_prompt(prompts, inst.task, PAPER_INPUTS[inst.task](data), mode, inst.images,
                                  kind)  # type: ignore[arg-type]

    def answer_examples(self, prompt: Any) -> tuple[Any, ...]:
        from nphe4v.scoring import prompt_examples

        return prompt_examples(prompt)  # the papers' prompts show their own ('TARGET_POSITION', ...)

    def paper_verdict(self, inst: Instance, text: str | None, model_error: bool = False) -> tuple[Any, str | None]:
        # every sample is read a second time, as the original NPHardEval4V code graded it (`parser: paper`)
        if model_error:
            return "parse_error", None
        from nphe4v.scoring import score_answer_paper

        return score_answer_paper(inst, text)

    def summaries(self, samples: pl.LazyFrame, parser: str) -> list[Summary]:
        from nphe4v import metrics

        board = metrics.leaderboard(metrics.primary_parse(samples, parser))
        return [Summary(f"{self.title} leaderboard", "leaderboard.csv", board, by_model_access=True,
                        note=metrics.RA_NOTE)]

    def mode_board(self, samples: pl.DataFrame, n_boot: int, seed: int) -> ModeBoard | None:
        from evalcore.report_section import ModeBoard
        from nphe4v import report_tables as nt
        from nphe4v.bootstrap import AA_COLUMNS

        ci = ("ER", "RA", "RA_corrected", "AA_P", "AA_NPC", "AA_NPH", "AA_All")
        return ModeBoard(
            nt.leaderboard(samples, n_boot=n_boot, seed=seed), ("version", "model", *ci, "n", "n_instances"), ci,
            tuple(f"{c}_{s}" for c in ("RA_corrected", *AA_COLUMNS) for s in ("lo", "hi")), sort="AA_All",
            note="As in the report: 95% intervals beside each number (Wilson for ER and RA, an instance bootstrap "
                 "for RA_corrected and AA).", id="board-nph")

    def group_by_access(self, table: pl.DataFrame, info: pl.DataFrame) -> pl.DataFrame:
        from nphe4v.report_section import open_closed

        return open_closed(table, info)  # Figure 4's closed vs open means

    def report_sections(self, ctx: ReportContext) -> list[Section]:
        from nphe4v.report_section import sections

        return sections(ctx, self.title)


BENCHMARK = NPHardEval4V()
