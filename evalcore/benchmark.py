"""What a benchmark is, for everything above it: one `Benchmark` object per benchmark, found through the
`nphe4v.benchmarks` entry points (`evalcore.benchmarks`), never by name.

The cluster (config, planning, generation, grading, export, preflight) and the report ask the object, not a
string: which tasks it has, how its `generate:` section is checked, canonicalised, counted and generated, in
which prompt modes a model is asked, whether it has a recognition experiment or a process judge, and which
summary tables its samples give.

The base class is a complete benchmark of the simplest kind, the one NPHardEval4V is: tasks x levels x
`per_level` generated instances, each asked in the run's prompt modes (`full_text_only` for a text-only model),
scored by the task's exact verifier, summarised as accuracy per model and prompt mode. A new benchmark of that
kind names its tasks and title and is done (docs/extending.md); NPHardEval4V and GraphVerse override the hooks
where their papers differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalcore.dataset import LEVELS, build_instance, write_dataset
from evalcore.rng import derive_seed, rng_for
from evalcore.schema import PROMPT_MODES, Instance, Prompt
from evalcore.task import TaskSpec

if TYPE_CHECKING:
    from evalcore.dataset import Dataset
    from evalcore.recognition import RecognitionSpec
    from evalcore.report_section import ModeBoard, PapersBoard, ReportContext, Section

FULL_TEXT_ONLY = "full_text_only"  # the one mode of a text-only model: no picture


# A version becomes a folder name under the data root: one path component, never `..`.
VERSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"
MAX_SEED = 2**63 - 1
MAX_PER_LEVEL = 1000


class AssetsMissing(RuntimeError):
    """Files a benchmark's run needs and does not ship (e.g. the authors' prompt files) cannot be had; the message
    is one line saying how to get them."""


class GenerateBase(BaseModel):
    """What every benchmark's `generate:` section has: a version name and a root seed. A benchmark's own
    settings model (`Benchmark.generate_model`) subclasses it; a run config's dataset entry is validated with
    the model of the benchmark it names."""

    model_config = ConfigDict(extra="forbid")

    version: str = Field(pattern=VERSION_PATTERN, description="name of the generated version, e.g. 'demo' or '2026-11'")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="root seed; (version, seed) fixes every byte of the dataset")

    @field_validator("version")
    @classmethod
    def _no_parent(cls, v: str) -> str:
        if ".." in v:
            raise ValueError(f"{v!r} must not contain '..' (a version is one folder name under the data root)")
        return v


class GenerateSettings(GenerateBase):
    """The `generate:` section of a benchmark of tasks x levels x `per_level` generated instances (the base
    class's kind)."""

    per_level: int = Field(10, ge=1, le=MAX_PER_LEVEL, description="instances per task and level")
    tasks: list[str] | None = Field(None, description="subset of tasks; all when omitted")
    levels: list[int] | None = Field(None, description="subset of levels; all when omitted")


@dataclass(frozen=True)
class Summary:
    """One summary table of a run (printed after a run and by `nphe4v report`, saved as `filename`).
    `by_model_access`: rows are per model and carry the leaderboard's columns, so Figure 4's closed- vs
    open-model means (`--group-by open_closed`) can be taken over them. `note`: printed under the table."""

    title: str
    filename: str
    table: pl.DataFrame
    float_precision: int = 4
    by_model_access: bool = False
    note: str = ""


class Benchmark:
    """A benchmark plug-in. Subclass it, set the class attributes, and register the instance under the
    `nphe4v.benchmarks` entry-point group (its entry-point name is `name`)."""

    name: str = ""  # the `benchmark` column of every instance and sample
    title: str = ""  # how tables and cards name it
    # the benchmark a dataset entry of a run config means when it names none (NPHardEval4V; were two to say so,
    # the first found wins)
    default: bool = False
    # the run's judge stage scores its samples' process (VGR-Score; cluster.judge_work.judged_benchmarks), the
    # explorer shows the judgments, the judge card draws its wrong answers from `wrong_answer`; the judge's
    # evidence reads graph instances (judge.evidence), so only a benchmark of graph instances sets it
    judged: bool = False
    # NPHardEval4V's recognition experiment (does the figure show the described instance?) runs on it
    recognition: bool = False
    # the NPHardEval4V authors' prompt files may replace the rewritten prompts (`prompts: paper`)
    paper_prompts: bool = False
    levels: tuple[int, ...] = LEVELS
    # bumped when the generator's bytes change for the same settings: cached dataset folders are keyed on it
    generator_revision: str = "1"
    # what a sample's `variant` column holds, in one-line errors ("this instance's image edit is 'patch'")
    variant_name: str = "variant"
    # one sentence for an exported dataset's card: what the prompt modes and `variant` mean
    modes_note: str = ("Prompt modes: `figure+limited_text` (figure, data only in the figure), `full_text_only` "
                       "(no image: send the text alone), `figure+full_text` (figure and the data in text).")

    # ---------------------------------------------------------------------------------------------- tasks
    def task_names(self) -> list[str]:
        """The tasks in their canonical (the paper's) order."""
        raise NotImplementedError

    def task(self, name: str) -> TaskSpec[Any]:
        raise NotImplementedError

    # ------------------------------------------------------------------------------------ generation
    # the model of this benchmark's `generate:` section (a `GenerateBase` subclass)
    generate_model: type[GenerateBase] = GenerateSettings
    # keys the section's JSON form had, with these values, when one model held every benchmark's fields: merged
    # under the section's own fields (after them) wherever the section is hashed (run ids, dataset cache keys), so
    # the ids and cache folders made then still match. A new benchmark leaves it empty.
    generate_legacy: dict[str, Any] = {}

    def parse_generate(self, raw: Any) -> GenerateBase:
        """The `generate:` section validated with `generate_model` (pydantic's ValidationError on a bad value);
        a key the model does not have is refused as a ValueError naming it and the keys it takes."""
        if isinstance(raw, dict):
            fields = [f for f in self.generate_model.model_fields if f not in GenerateBase.model_fields]
            for key in raw:
                if key not in self.generate_model.model_fields:
                    raise ValueError(f"generate.{key} is not used by {self.name} (it takes {', '.join(fields)})")
        return self.generate_model.model_validate(raw)

    def generate_json(self, g: GenerateBase) -> dict[str, Any]:
        """The section as JSON, as run ids and dataset cache keys hash it (with `generate_legacy`)."""
        d = g.model_dump(mode="json")
        d.update({k: v for k, v in self.generate_legacy.items() if k not in d})
        return d

    def canonical_generate(self, g: GenerateBase) -> dict[str, Any]:
        """The section in one canonical form, benchmark named: two sections asking for the same dataset compare
        equal (and share a cache folder) whether they write a default out or leave it implicit."""
        return {"benchmark": self.name, **self.normalize_generate(g, self.generate_json(g))}

    def check_generate(self, g: GenerateSettings) -> None:
        """Refuse (ValueError, one line naming the field) a `generate:` section this benchmark cannot honour
        beyond what its model checks."""
        names = self.task_names()
        for t in g.tasks or ():
            if t not in names:
                raise ValueError(f"generate.tasks: unknown task {t!r}; known: {', '.join(names)}")
        for lv in g.levels or ():
            if lv not in self.levels:
                raise ValueError(f"generate.levels: unknown level {lv!r}; levels are "
                                 f"{self.levels[0]}..{self.levels[-1]}")
        if g.tasks == [] or g.levels == []:
            raise ValueError("generate.tasks and generate.levels must not be empty (omit them for all)")

    def normalize_generate(self, g: GenerateSettings, d: dict[str, Any]) -> dict[str, Any]:
        """`d` (the section as JSON) in one canonical form: tasks and levels written out (all when omitted, in
        the canonical order), so two sections asking for the same dataset compare equal."""
        names = self.task_names()
        d["tasks"] = [t for t in names if t in set(g.tasks or names)]
        d["levels"] = sorted(set(g.levels or self.levels))
        return d

    def planned_instances(self, g: GenerateSettings) -> int:
        n = self.normalize_generate(g, {})
        return len(n["tasks"]) * len(n["levels"]) * g.per_level

    def dataset_folder(self, g: GenerateSettings, key: str) -> str:
        """The cache folder of a generated dataset, relative to the data root; `key` hashes the whole section."""
        return f"{self.name}/{g.version}-seed{g.seed}-n{g.per_level}-{key}"

    def default_version(self, section: dict[str, Any]) -> str:
        """The version `nphe4v generate` gives a section (its other fields as given) that names none."""
        return "v1"

    def generate(self, out: Path, g: GenerateSettings, progress: Callable[[int, int], None] | None = None,
                 workers: int | None = None) -> None:
        """Write the dataset the section asks for into `out`; the same section gives the same bytes (every
        instance's randomness comes from a seed derived from (seed, version, task, level, index)). `workers`:
        processes a benchmark's own generator may use (None: its default; this one uses none)."""
        n = self.normalize_generate(g, {})
        total = len(n["tasks"]) * len(n["levels"]) * g.per_level
        items: list[tuple[Instance, list[bytes]]] = []
        for name in n["tasks"]:
            spec = self.task(name)
            for level in n["levels"]:
                for index in range(g.per_level):
                    s = derive_seed(g.seed, g.version, name, level, index)
                    items.append(build_instance(spec, level, index, spec.generate(level, rng_for(s)), seed=s))
                    if progress:
                        progress(len(items), total)
        params = {t: {str(lv): self.task(t).params(lv) for lv in n["levels"]} for t in n["tasks"]}
        write_dataset(out, items, benchmark=self.name, version=g.version, seed=g.seed, per_level=g.per_level,
                      source="generated", params=params)

    def spec_used(self, ds: Dataset) -> dict[str, Any]:
        """What a dataset folder holds beyond benchmark, version, seed, per_level and instance count (recorded in
        the run manifest, and compared with `spec_wanted` before a folder is reused)."""
        names = self.task_names()
        m = ds.manifest
        return {"tasks": [t for t in names if t in m.tasks] + sorted(set(m.tasks) - set(names)),
                "levels": sorted({i.level for i in ds.instances})}

    def spec_wanted(self, g: GenerateSettings, ds: Dataset) -> dict[str, Any]:
        """What `spec_used` of the folder must say for the section `g` (a generated folder is also counted)."""
        n = self.normalize_generate(g, {})
        want: dict[str, Any] = {"benchmark": self.name, "version": g.version, "seed": g.seed,
                                "per_level": g.per_level, "tasks": n["tasks"], "levels": n["levels"]}
        if ds.manifest.source == "generated":
            want["instances"] = len(n["tasks"]) * len(n["levels"]) * g.per_level
        return want

    # --------------------------------------------------------------------------------------- planning
    def all_prompt_modes(self) -> tuple[str, ...]:
        """Every prompt mode a sample of this benchmark can have (besides recognition)."""
        return tuple(PROMPT_MODES)

    # what a model's entry in a run config may say for this benchmark (a pydantic model whose fields are
    # written at the top level of the entry and overridable on a registry reference, e.g. the modes the model
    # is asked in), or None: `cluster.config.ModelSpec` validates them with it
    model_options: type[BaseModel] | None = None

    # the run-level settings this benchmark owns (a pydantic model whose fields are written at the top level of a
    # run config, e.g. NPHardEval4V's prompt set and parser), or None: `cluster.config.RunConfig` takes its fields
    # (validated and dumped at the top level, so configs, manifests and run ids read as before the plug-in owned
    # them); the hooks below read them from an instance of it (`RunConfig.options_for`)
    run_options: type[BaseModel] | None = None

    def run_fingerprint(self, options: BaseModel) -> dict[str, Any]:
        """The run options' part of a run id (what makes two runs the same run, resumable into one folder): all of
        them by default; a benchmark leaves out what changes no sample, or a field at the value runs made before it
        existed had (so they keep their id)."""
        return options.model_dump(mode="json")

    def recognition_settings(self, options: BaseModel | None) -> RecognitionSpec | None:
        """For a `recognition` benchmark: the recognition experiment's settings in the run (`options`: its
        `run_options`); None: no recognition asks."""
        return None

    def sends_paper_prompts(self, options: BaseModel | None) -> bool:
        """For a `paper_prompts` benchmark: whether the run (`options`: its `run_options`) sends the paper
        prompts instead of the rewritten ones."""
        return False

    def prompt_assets(self, options: BaseModel | None) -> str | None:
        """For a `paper_prompts` benchmark: where the run says its prompt files are (`load_paper_prompts`' first
        argument); None: where the benchmark keeps them."""
        return None

    def model_modes(self, options: BaseModel | None) -> list[str]:
        """The modes the model's own options (an instance of `model_options`) ask this benchmark in: the
        `model_modes` given to `prompt_modes`."""
        return []

    def prompt_modes(self, run_modes: Sequence[str], model_modes: Sequence[str], text_only: bool) -> list[str]:
        """The modes a model is asked in: the run's `prompt_modes`, or `full_text_only` for a text-only model.
        `model_modes` is the model's own choice (`model_modes`), for benchmarks that take it."""
        return [FULL_TEXT_ONLY] if text_only else list(run_modes)

    def variant(self, inst: Instance) -> str:
        """The `variant` key column of a (non-recognition) sample of the instance."""
        return ""

    def probes(self, run_modes: Sequence[str], recognition: bool) -> list[str]:
        """The request shapes a run sends (`cluster.preflight`): "text", "1" / "2" figures, "recognition"."""
        out = ["text" if m == FULL_TEXT_ONLY else "1" for m in run_modes]
        if self.recognition and recognition:
            out.append("recognition")
        return out

    def recognition_partners(self, dataset: Dataset, seed: int) -> dict[str, str]:
        """For a `recognition` benchmark: instance id -> the instance whose text a `mismatch` recognition probe
        of it shows (the report rebuilds those prompts and counts the planned probes with it)."""
        return {}

    def paper_prompt(self, inst: Instance, mode: str, backend: str, prompt_assets: str | None) -> Any:
        """For a `paper_prompts` benchmark: the `evalcore.prompting.Prompt` a run with `prompts: paper` sent for
        `inst` in `mode` to a model served by `backend` (read from the checkout or the cache, never downloaded:
        the report rebuilds it). ValueError when it cannot be rebuilt."""
        raise ValueError(f"{self.name} has no paper prompts")

    # For a `paper_prompts` benchmark, what a run with `prompts: paper` asks of it: the planner builds every
    # prompt in a mode of PROMPT_MODES from the set `load_paper_prompts` gives (loaded before any model starts),
    # `nphe4v grade` rebuilds the prompt a response line's `template_version` names, `nphe4v show` prints one.
    # The kinds of prompt file a prompt comes from (e.g. one for open-weights models, one for API models).
    paper_prompt_kinds: tuple[str, ...] = ()

    def paper_prompts_label(self) -> str:
        """What the paper prompt set is (where from, which file for which models): the run manifest's
        `prompt_set`."""
        raise ValueError(f"{self.name} has no paper prompts")

    def load_paper_prompts(self, prompt_assets: str | None, download: bool = True) -> Any:
        """The parsed prompt files, from `prompt_assets` (a run config's field: a local copy) or where the
        benchmark keeps them (fetched once when `download`). AssetsMissing: one line saying how to get them."""
        raise ValueError(f"{self.name} has no paper prompts")

    def paper_prompt_kind(self, backend: str) -> str:
        """Which of `paper_prompt_kinds` a model served by `backend` is sent."""
        raise ValueError(f"{self.name} has no paper prompts")

    def paper_template_kind(self, template_version: str) -> str | None:
        """The kind a prompt's `template_version` names when it is one of this benchmark's paper prompts (it may
        be no kind of `paper_prompt_kinds`: the caller refuses it), else None."""
        return None

    def build_paper_prompt(self, prompts: Any, inst: Instance, mode: str, kind: str) -> Prompt:
        """The paper prompt of `inst` in `mode` (one of PROMPT_MODES) from the set `load_paper_prompts` gave, in
        the file `kind`; ValueError (one line) when the files cannot give it."""
        raise ValueError(f"{self.name} has no paper prompts")

    # --------------------------------------------------------------------------------------- scoring
    def answer_examples(self, prompt: Any) -> tuple[Any, ...]:
        """The format examples a prompt of this benchmark shows (values or their text), which an answer that
        restates one does not give: the extractor skips them (`evalcore.scoring`). The rewritten prompts'
        placeholder examples the extractor recognises itself."""
        return ()

    def paper_verdict(self, inst: Instance, text: str | None, model_error: bool = False) -> tuple[Any, str | None]:
        """A second reading of an answer to `inst` (the sample's `verdict_paper`, `parsed_paper`), e.g. as the
        benchmark's original code graded it; `model_error`: the model gave no answer. (None, None): none."""
        return None, None

    # --------------------------------------------------------------------------------------- imports
    # `nphe4v import-peer KIND` formats: the published data files of the benchmark's authors (or of their earlier
    # benchmark) it imports as a dataset (`import_peer`); a format's name is a file format, not a benchmark's
    peer_formats: tuple[str, ...] = ()

    def import_peer(self, fmt: str, src: Path, out: Path) -> tuple[Any, list[str]]:
        """Import the data files under `src` (in `fmt`, one of `peer_formats`) as the new dataset folder `out`:
        (its DatasetManifest, one warning line per problem). DatasetError or ValueError (one line) on a refusal."""
        raise ValueError(f"{self.name} imports no published data")

    # --------------------------------------------------------------------------------------- exports
    # `nphe4v export --format F` formats of training sets this benchmark writes (`export_training`)
    training_formats: tuple[str, ...] = ()

    def export_training(self, dataset: Dataset, out: Path, fmt: str, **options: Any) -> tuple[int, list[str]]:
        """Write `dataset` as a training set in `fmt` (one of `training_formats`) into the new folder `out`:
        (rows, notes). `options`: edits, limit, allow_test_split, seed. ValueError (one line) on a refusal."""
        raise ValueError(f"{self.name} has no training export")

    # ---------------------------------------------------------------------------------------- judging
    def judge_evidence(self, inst: Instance) -> Any:
        """For a `judged` benchmark: the `evalcore.evidence.Evidence` of `inst` the judge scores a response
        against (its text and the facts of the instance's graphs). Deterministic: same instance, same bytes."""
        raise NotImplementedError(f"{self.name} is not judged: it builds no judge evidence")

    def wrong_answer(self, inst: Instance, graphs: Sequence[Any], query: dict[str, Any],
                     seed: int = 0) -> dict[str, Any] | None:
        """For a `judged` benchmark: a readable answer to `inst` that its exact verifier calls wrong (the judge
        card's wrong-final-answer cases; `graphs` and `query` as the judge's evidence read them), or None when
        there is none. Deterministic in (instance, seed)."""
        return None

    # ---------------------------------------------------------------------------------------- reports
    # takes a comparisons spec (`nphe4v report --comparisons`: which arm is the baseline of which)
    compares: bool = False

    def parse_comparisons(self, raw: Any, source: str) -> Any:
        """For a `compares` benchmark: the spec in the YAML mapping `raw` read from `source`
        (`evalcore.report_section.ComparisonError`, one line naming `source` and the field, when wrong)."""
        raise ValueError(f"{self.name} takes no comparisons spec")

    def comparison_tables(self, ctx: ReportContext, source: str) -> dict[str, pl.DataFrame]:
        """For a `compares` benchmark: its comparison tables by name, of `ctx`'s samples as `ctx.comparisons`
        asks (None: the benchmark's default); ComparisonError naming `source` for an arm the runs lack."""
        return {}

    def comparison_printout(self, tables: dict[str, pl.DataFrame]) -> list[tuple[str, pl.DataFrame]]:
        """(title, table as shown) of `comparison_tables`' output, as the command line prints them."""
        return []

    def summaries(self, samples: pl.LazyFrame, parser: str) -> list[Summary]:
        """The tables printed after a run (and by `nphe4v report`) from the run's samples of this benchmark
        (responses and traces left out). `parser` is the run's `parser` setting."""
        return [Summary(f"{self.title} leaderboard", f"{self.name}_leaderboard.csv", leaderboard(samples))]

    def group_by_access(self, table: pl.DataFrame, info: pl.DataFrame) -> pl.DataFrame:
        """For a summary with `by_model_access` (with a ``version`` column): its means per model access
        (`info`: columns model, access; `nphe4v report --group-by open_closed`)."""
        raise NotImplementedError(f"{self.name} has no summary by model access")

    # the explorer's boards (`nphe4v explore`'s first page; each benchmark's sections follow them)
    def mode_board(self, samples: pl.DataFrame, n_boot: int, seed: int) -> ModeBoard | None:
        """The leaderboard over `samples` (this benchmark's, graded) the explorer shows one prompt mode at a time,
        with `n_boot` bootstrap replicates (0: without the `boot_bounds` columns' values); None: none."""
        return None

    def papers_board(self, ctx: ReportContext) -> PapersBoard | None:
        """The accuracy per model and task the explorer shows as a paper's table (with the judge's score beside
        it when judged); None: none (or no samples)."""
        return None

    def report_sections(self, ctx: ReportContext) -> list[Section]:
        """This benchmark's part of the report (`evalcore.report_section`): its tables, figure specs and notes,
        computed from `ctx` (its graded samples and the runs' settings) and drawn by the report. Default: one
        section holding the `summaries` tables, each also written as a CSV `<name>_<table>.csv`."""
        from evalcore.report_section import Section, Table

        tables, csvs = [], {}
        for x in self.summaries(ctx.samples, "tolerant"):  # the samples are graded with each run's parser already
            stem = Path(x.filename).stem
            csv = f"{self.name}_{stem.removeprefix(self.name + '_')}"
            tables.append(Table(x.table, caption=x.title, digits=x.float_precision, csv_name=f"{csv}.csv"))
            csvs[csv] = x.table
        return [Section(f"bench-{self.name}", self.title, tuple(tables), csvs)]


def leaderboard(samples: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Per model and prompt mode: `n` samples, `ER` the share with a parsable answer and `acc` the share the
    exact verifier found correct (a failed call counts as wrong: the denominator is every planned sample)."""
    lf = samples.lazy() if isinstance(samples, pl.DataFrame) else samples
    return (lf.group_by("model", "prompt_mode")
            .agg(n=pl.len(),
                 ER=(pl.col("verdict").is_in(["correct", "wrong"])).mean(),
                 acc=(pl.col("verdict") == "correct").mean())
            .sort("model", "prompt_mode").collect())

