"""Run configuration (YAML), validated with pydantic. Errors come out as one line naming file and field."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from evalcore import benchmarks
from evalcore.baselines import BASELINES
from evalcore.benchmark import MAX_SEED, Benchmark, GenerateBase
from evalcore.prompting import POT_MODE
from evalcore.schema import PROMPT_MODES, PromptMode
from evalcore.validation import first_error
from judge.schema import RULE_JUDGE

# Model names become sample keys (joined with '|'), folder names and terminal output: no separators, no
# control characters.
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$"

# Backend options that change how fast or how politely a model is called, never what it answers: a run
# resumed with other values is the same run.
OPERATIONAL_OPTIONS = frozenset({
    "max_concurrency", "rpm", "timeout_s", "max_attempts", "max_rate_limited", "backoff_base_s",
    "backoff_max_s", "limiter", "latency_s",
})


# Caps of counts and sizes, named by the error that refuses a value past them: every one is far above what a
# run needs, and each keeps a mistyped value (`repeats: 1000000000000`) from planning for hours or gigabytes.
MAX_REPEATS = 100  # repeats of every prompt, recognition asks per pair
MAX_TOKENS = 1_000_000
MAX_TEMPERATURE = 10.0
MAX_RESOURCES = 4096  # CPUs or GPUs of one replica or actor, CPUs of a local Ray
MAX_REPLICAS = 1024
MAX_BATCH = 4096
MAX_INFLIGHT = 256
MAX_ATTEMPTS = 100


class ConfigError(ValueError):
    """A config that cannot run; the message is one line naming the file and field."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetSpec(Strict):
    benchmark: str = Field(default_factory=lambda: benchmarks.default().name,
                           description="a registered benchmark (evalcore.benchmarks); default: the registry's default one")
    path: str | None = Field(None, description="existing dataset folder; generated there when missing")
    # validated with the model of the benchmark named above (`Benchmark.generate_model`: one section per
    # benchmark, the variants listed in docs/config-reference.md); dumped with that model's fields
    generate: SerializeAsAny[GenerateBase] | None = Field(
        None, description="how to generate the dataset: the benchmark's own settings (version, seed, ...)")

    @field_validator("benchmark")
    @classmethod
    def _registered(cls, v: str) -> str:
        try:
            benchmarks.get(v)
        except benchmarks.BenchmarkError as e:
            raise ValueError(str(e)) from None  # one line naming the known ones
        return v

    @field_validator("generate", mode="before")
    @classmethod
    def _benchmarks_model(cls, v: Any, info: ValidationInfo) -> Any:
        name = info.data.get("benchmark")
        if v is None or name is None:  # a refused benchmark: its own error is the line shown
            return v
        bench = benchmarks.get(name)
        if isinstance(v, bench.generate_model):
            return v
        if isinstance(v, GenerateBase):  # another benchmark's model: what it was given, read by this one's
            v = v.model_dump(exclude_unset=True)
        return bench.parse_generate(v)

    @model_validator(mode="after")
    def _one_source(self) -> DatasetSpec:
        if self.path is None and self.generate is None:
            raise ValueError("give `path` (an existing dataset) or `generate` (version and seed)")
        return self

    @model_validator(mode="after")
    def _known_tasks_levels(self) -> DatasetSpec:
        if self.generate is not None:
            self.bench().check_generate(self.generate)
        return self

    def bench(self) -> Benchmark:
        return benchmarks.get(self.benchmark)


class SamplingOverrides(Strict):
    """`options.request_args` of a model: the model's own limits merged over the run's sampling for every
    request it gets (e.g. a lower max_tokens for a short-context model); recognition asks keep their own."""

    max_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS)
    temperature: float | None = Field(None, ge=0, le=MAX_TEMPERATURE, allow_inf_nan=False)

    def apply(self, temperature: float, max_tokens: int) -> tuple[float, int]:
        return (temperature if self.temperature is None else self.temperature,
                max_tokens if self.max_tokens is None else self.max_tokens)


class ModelSpec(Strict):
    name: str = Field(pattern=MODEL_NAME_PATTERN)
    backend: Literal["baseline", "vllm", "litellm", "caption-chain", "transformers"] = "baseline"
    baseline: str | None = Field(None, description="oracle | greedy | random | always-yes")
    text_only: bool = Field(False, description="text-only LLM: full_text_only mode, no recognition")
    replicas: int | Literal["auto"] = Field(1, description="at most this many replicas, or 'auto': as many as shorten the run (within the model's share of GPU work)")
    num_cpus: float = Field(0.5, gt=0, le=MAX_RESOURCES, allow_inf_nan=False)
    num_gpus: float = Field(0, ge=0, le=MAX_RESOURCES, allow_inf_nan=False)
    batch_size: int = Field(64, ge=1, le=MAX_BATCH)
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific settings")
    # Each benchmark's own options for the model (`Benchmark.model_options`, e.g. the modes it is asked in),
    # by benchmark name. In a config they are written at the top level of the model's entry under the
    # plug-in's field names (docs/config-reference.md lists them) and dumped there again, so a config, a run
    # manifest and a run id read as before the plug-ins owned them.
    benchmark_options: dict[str, SerializeAsAny[BaseModel]] = Field(
        default_factory=dict, description="set through the benchmarks' own model fields (below), not by this name")

    @model_validator(mode="before")
    @classmethod
    def _plugin_options(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "benchmark_options" in data:
            raise ValueError("benchmark_options: write a benchmark's model options under their own names "
                             "(docs/config-reference.md), e.g. at the top level of the model's entry")
        data = dict(data)
        opts: dict[str, BaseModel] = {}
        for name, bench in benchmarks.registry().items():
            if bench.model_options is not None:
                raw = {k: data.pop(k) for k in list(data) if k in bench.model_options.model_fields}
                opts[name] = bench.model_options.model_validate(raw)
        data["benchmark_options"] = opts
        return data

    @model_serializer(mode="wrap")
    def _flat_plugin_options(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        d: dict[str, Any] = handler(self)
        for o in (d.pop("benchmark_options", None) or {}).values():
            d.update(o)
        return d

    def modes_for(self, bench: Benchmark) -> list[str]:
        """The modes this model's own options ask `bench` in (`Benchmark.model_modes`)."""
        return bench.model_modes(self.benchmark_options.get(bench.name))

    @model_validator(mode="after")
    def _replicas(self) -> ModelSpec:
        if isinstance(self.replicas, int) and not 1 <= self.replicas <= MAX_REPLICAS:
            raise ValueError(f"replicas must be 1..{MAX_REPLICAS} (or 'auto')")
        return self

    @model_validator(mode="after")
    def _request_args(self) -> ModelSpec:
        ra = self.options.get("request_args")
        if ra is not None:
            try:
                SamplingOverrides.model_validate(ra)
            except ValidationError as e:
                loc, msg = first_error(e)
                raise ValueError(f"options.request_args{'.' + loc if loc else ''}: {msg}") from None
        return self

    def sampling_overrides(self) -> SamplingOverrides:
        return SamplingOverrides.model_validate(self.options.get("request_args") or {})

    @model_validator(mode="after")
    def _baseline_kind(self) -> ModelSpec:
        if self.backend == "baseline":
            kind = self.baseline or self.name
            if kind not in BASELINES:
                raise ValueError(f"unknown baseline {kind!r}; known: {', '.join(BASELINES)}")
            self.baseline = kind
        return self


class SamplingSpec(Strict):
    temperature: float = Field(0.0, ge=0, le=MAX_TEMPERATURE, allow_inf_nan=False)
    max_tokens: int = Field(1024, ge=1, le=MAX_TOKENS)
    seed: int = Field(0, ge=0, le=MAX_SEED)


class RaySpec(Strict):
    address: str | None = Field(None, description="'auto' to join a running cluster; None starts a local one")
    num_cpus: int | None = Field(None, ge=1, le=MAX_RESOURCES, description="CPUs of the local Ray this run starts (ignored when joining)")
    stall_timeout_s: float = Field(
        600.0, gt=0, le=86400, description="a run with no result, replica load or change of cluster for this long "
        "stops with one line naming what waits for what; its samples are kept and a rerun resumes")


# the judge stage's cache of successful judgments, under the run folder unless `judge.cache_dir` says otherwise
JUDGE_CACHE_DIR = "judge_cache"


class JudgeConfig(Strict):
    """`judge:` section of a run config. `model` is `rule-based`, a model of the run's `models:`, a registry
    name (cluster/models.yaml, e.g. gpt-5.1) or any litellm model string; a vllm model (of the run or the
    registry) judges on vLLM replicas of the cluster, no outside server (`cluster.judge_stage`). `options` are
    `judge.llm_judge.JudgeSpec` fields."""

    enabled: bool = True
    model: str = RULE_JUDGE
    options: dict[str, Any] = Field(default_factory=dict)
    repeat: int = Field(0, ge=0, le=1_000_000, description="judge repeat index; a new index asks the judge again")
    actors: int = Field(2, ge=1, le=MAX_REPLICAS, description="replicas of an API judge (a vllm judge runs its "
                        "model's `replicas`)")
    batch_size: int = Field(8, ge=1, le=MAX_BATCH)
    max_inflight_batches: int = Field(4, ge=1, le=MAX_INFLIGHT, description="per actor")
    max_attempts: int = Field(3, ge=1, le=MAX_ATTEMPTS, description="tries of a batch whose judge actor died")
    num_cpus: float = Field(0.1, ge=0, le=MAX_RESOURCES, allow_inf_nan=False,
                            description="per judge actor (API calls are I/O)")
    executor: str = Field("ray", pattern="^(ray|local)$", description="ray = actor pool; local = in-process")
    cache_dir: str | None = Field(None, description=f"default RUN_DIR/{JUDGE_CACHE_DIR}")
    progress: bool = Field(True, description="report judge progress on stderr")


class RunConfigBase(Strict):
    """A run config's own fields; `RunConfig` adds every registered benchmark's run options (below)."""

    name: str = Field("run", max_length=200, description="the run's name (first part of its run id)")
    out: str = Field("runs/demo", max_length=4096, description="run folder")
    datasets: list[DatasetSpec] = Field(min_length=1)
    models: list[ModelSpec] = Field(min_length=1)
    prompt_modes: list[PromptMode] = Field(default_factory=lambda: list(PROMPT_MODES))
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    sampling: SamplingSpec = SamplingSpec()
    ray: RaySpec = RaySpec()
    max_inflight_batches: int = Field(4, ge=1, le=MAX_INFLIGHT)
    max_attempts: int = Field(3, ge=1, le=MAX_ATTEMPTS, description="tries of a batch whose model actor died")
    preflight: bool = Field(False, description="start each model once first (cluster.preflight) and leave out, "
                            "one line each, the models that fail; the others run")
    judge: JudgeConfig = Field(default_factory=JudgeConfig, description="process scoring (VGR-Score) of the judged "
                               "benchmarks' samples (`Benchmark.judged`)")
    pot_isolation: Literal["strict", "rlimits-only"] = Field(
        "strict", description="sandbox of PoT programs: strict (kernel namespaces; the run refuses to start "
        "without them) or rlimits-only (a weaker sandbox, opted into by name; docs/graphverse.md)")
    pot_timeout_s: float = Field(10.0, gt=0, le=600, allow_inf_nan=False, description="CPU-time limit of one PoT program, s (each process; a wall clock of 3x + 10 s backs it)")
    pot_workers: int = Field(2, ge=1, le=64, description="PoT programs run at once by one score task")

    @model_validator(mode="after")
    def _unique_models(self) -> RunConfigBase:
        names = [m.name for m in self.models]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"model names must be unique: {', '.join(sorted(dup))}")
        return self

    def fingerprint_fields(self) -> dict[str, Any]:
        """What makes two runs the same run (resumable into one folder); where and how it runs does not."""
        # the judge is a later stage with its own cache and identity: changing it is not another run
        # how PoT programs are sandboxed and how many run at once do not change what they print
        # a benchmark's run options: the part its plug-in says (`Benchmark.run_fingerprint`)
        d = self.model_dump(mode="json", exclude={"out", "ray", "max_inflight_batches", "max_attempts", "judge",
                                                  "pot_isolation", "pot_workers", "preflight",
                                                  *run_option_keys()})
        for bench in benchmarks.registry().values():
            if (opts := self.options_for(bench)) is not None:
                d.update(bench.run_fingerprint(opts))
        # settings appended later are left out at their defaults, so a run made before them keeps its id
        if d["pot_timeout_s"] == RunConfigBase.model_fields["pot_timeout_s"].default:
            d.pop("pot_timeout_s")
        # a `generate:` section as it was hashed before each benchmark had a model of its own (the legacy keys)
        for dd, spec in zip(d["datasets"], self.datasets, strict=True):
            if spec.generate is not None:
                dd["generate"] = spec.bench().generate_json(spec.generate)
        for m in d["models"]:
            for k in ("replicas", "num_cpus", "num_gpus", "batch_size"):
                m.pop(k, None)
            # a benchmark's model option at its default is left out: runs made before it existed keep their id
            for k, v in plugin_option_defaults().items():
                if m.get(k) == v:
                    m.pop(k)
            m["options"] = {k: v for k, v in m["options"].items() if k not in OPERATIONAL_OPTIONS}
        return d

    def wants_pot(self) -> bool:
        return any(POT_MODE in m.modes_for(b) for m in self.models for b in benchmarks.registry().values())

    def options_for(self, bench: Benchmark) -> BaseModel | None:
        """`bench`'s run options (an instance of `Benchmark.run_options`, read from this config's top level), or
        None when it has none: what its hooks (`recognition_settings`, `sends_paper_prompts`, ...) are given."""
        if bench.run_options is None:
            return None
        return bench.run_options.model_construct(**{k: getattr(self, k) for k in bench.run_options.model_fields})


def run_option_keys() -> list[str]:
    """The top-level keys of a run config that registered benchmarks own (`Benchmark.run_options`)."""
    return [k for b in benchmarks.registry().values() if b.run_options is not None for k in b.run_options.model_fields]


def _with_run_options(base: type[RunConfigBase]) -> type[RunConfigBase]:
    """`base` with every registered benchmark's run-option fields at its top level, as the plug-ins declare them
    (so a config keeps its keys where they were, a bad value is refused in one line naming its field, and the
    run manifest dumps them there). A key two plug-ins declare, or one of the config's own, is a plug-in error."""
    fields: dict[str, Any] = {}
    for bench in benchmarks.registry().values():
        for key, info in (bench.run_options.model_fields if bench.run_options is not None else {}).items():
            if key in base.model_fields or key in fields:
                raise benchmarks.BenchmarkError(f"benchmark {bench.name}: run option {key!r} is already a run "
                                                "config field")
            fields[key] = (info.annotation, info)
    model = create_model("RunConfig", __base__=base, __module__=__name__, **fields)
    model.__doc__ = "A run config: its own fields and the registered benchmarks' run options (top level)."
    return model


RunConfig = _with_run_options(RunConfigBase)


def plugin_option_defaults() -> dict[str, Any]:
    """Every benchmark's model options (`Benchmark.model_options`) at their defaults, as a config writes them."""
    out: dict[str, Any] = {}
    for bench in benchmarks.registry().values():
        if bench.model_options is not None:
            out.update(bench.model_options().model_dump(mode="json"))
    return out


# A config or registry is a few thousand values; YAML aliases may share a subtree, but a document whose
# aliases expand past this many values is refused before anything walks it (an "alias bomb" makes every
# consumer -- validation, the secrets walker, JSON dumps -- do exponential work).
MAX_YAML_VALUES = 100_000
# The largest config file read (the registry is ~32 KB, a run config a few KB): checked on the file's size
# before reading and on the bytes read, so /dev/zero, a growing file or a megabyte of keys is refused at once
# instead of being parsed for minutes by the pure-Python YAML reader.
MAX_YAML_BYTES = 1 << 20


class _StrictLoader(yaml.SafeLoader):
    """safe_load that refuses duplicate mapping keys (YAML says keys are unique; PyYAML keeps the last),
    documents of more than MAX_YAML_VALUES values (counted as they are composed, so a plain huge document stops
    early) or whose aliases expand past it (or into themselves), and integers Python will not convert."""

    _composed = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if not self.check_event(yaml.AliasEvent):
            self._composed += 1
            if self._composed > MAX_YAML_VALUES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_VALUES} values",
                                                  self.peek_event().start_mark)
        return super().compose_node(parent, index)  # type: ignore[no-any-return]

    def _construct_int(self, node: yaml.ScalarNode) -> int:
        try:
            return super().construct_yaml_int(node)  # type: ignore[no-any-return]
        except ValueError:  # past Python's int/str conversion limit (4300 digits)
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(str(node.value))} characters (too large)", node.start_mark
            ) from None

    def construct_document(self, node: yaml.Node) -> Any:
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<: *base` merges may be overridden by the mapping's own keys
                k = (key_node.tag, key_node.value)
                if k in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r}", key_node.start_mark)
                seen.add(k)
        return super().construct_mapping(node, deep=deep)


def _check_expansion(root: yaml.Node) -> None:
    """Count the values the node graph expands to (an alias counts its whole subtree again), without
    expanding it: sizes are memoised per node; a node reached from inside itself is a cycle."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            on_path.discard(nid)
            kids = _children(node)
            total = 1 + sum(size[id(k)] for k in kids)
            if total > MAX_YAML_VALUES:
                raise yaml.constructor.ConstructorError(
                    None, None, f"aliases expand to more than {MAX_YAML_VALUES} values", node.start_mark)
            size[nid] = total
            continue
        if nid in size:
            continue
        if nid in on_path:
            raise yaml.constructor.ConstructorError(None, None, "an alias refers to itself", node.start_mark)
        on_path.add(nid)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader._construct_int)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return []


def read_yaml_mapping(path: Path, shown: str, error: type[ConfigError] = ConfigError, what: str = "config"
                      ) -> dict[str, Any]:
    """A YAML file whose top level is a mapping; any problem is one `error` line naming the file (as `shown`):
    missing or unreadable file, a folder, bytes that are not UTF-8, invalid YAML, a duplicate key, aliases
    expanding past MAX_YAML_VALUES values, nesting too deep, a file that is not a regular file (a FIFO, a device,
    a link to one) or larger than MAX_YAML_BYTES."""
    text = read_small_text(path, shown, error, what, MAX_YAML_BYTES)
    try:
        raw = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except ValueError as e:  # a value the constructor cannot convert (not a YAMLError)
        raise error(f"{shown}: invalid YAML ({' '.join(str(e).split())[:200]})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "syntax"
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise error(f"{shown}: {where}: invalid YAML ({problem})") from None
    except RecursionError:
        raise error(f"{shown}: invalid YAML (nested too deeply)") from None
    if not isinstance(raw, dict):
        raise error(f"{shown}: top level must be a mapping")
    return raw


def read_small_text(path: Path, shown: str, error: type[Exception], what: str, cap: int) -> str:
    """A regular file of at most `cap` bytes as UTF-8 text, or one `error` line naming it. The file is looked at
    before it is read (stat, then fstat of a non-blocking open): a FIFO would block, a device (/dev/zero) never
    ends, and neither is a config; the bytes read are capped as well (a file growing meanwhile)."""
    def kind(mode: int) -> str:
        return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")

    def check(st: os.stat_result) -> None:
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{shown}: is a folder, not a {what} file")
        if not stat.S_ISREG(st.st_mode):
            raise error(f"{shown}: is {kind(st.st_mode)}, not a {what} file (a regular file is required)")
        if st.st_size > cap:
            raise error(f"{shown}: {what} file is {st.st_size} bytes, more than the cap of {cap} bytes")

    try:
        check(os.stat(path))  # follows links: a link to /dev/zero is judged by what it points to
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            check(os.fstat(f.fileno()))  # the file opened is the file checked
            data = f.read(cap + 1)
    except FileNotFoundError:
        raise error(f"{shown}: {what} file not found") from None
    except IsADirectoryError:
        raise error(f"{shown}: is a folder, not a {what} file") from None
    except OSError as e:
        raise error(f"{shown}: cannot read the {what} file: {e.strerror or e}") from None
    if len(data) > cap:
        raise error(f"{shown}: {what} file is more than the cap of {cap} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{shown}: not UTF-8 text (byte {e.start})") from None
