"""The model registry (cluster/models.yaml): every model the papers evaluate, and named groups of them.

* `load_registry(path)` validates the file (pydantic, unknown fields rejected) and returns a `Registry`.
* `Registry.resolve(["graphverse-paper", "oracle"])` turns model and group names into `cluster.config.ModelSpec`s.
* `expand_models(raw_config)` rewrites the `models:` list of a raw run config so it may name registry entries:

      models:
        - nphardeval4v-paper                               # a group (or a model) by name
        - {use: qwen2.5-vl-72b, replicas: 2}               # a reference with ModelSpec overrides
        - {use: graphverse-paper, exclude: [kimi-k2.5]}    # a group minus some members
        - {name: my-server, backend: litellm, options: {model: hosted_vllm/x}}   # inline, unchanged

Errors are one line, e.g. "cluster/models.yaml: unknown model or group 'qwen-vl-72b' (did you mean ...?)".
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from cluster.config import ConfigError, ModelSpec, plugin_option_defaults, read_yaml_mapping

DEFAULT_PATH = Path(__file__).with_name("models.yaml")
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$"
# ModelSpec fields a `{use: ...}` reference may override (name and backend come from the registry).
OVERRIDABLE = ("replicas", "num_cpus", "num_gpus", "batch_size", "text_only", "options")


def overridable() -> tuple[str, ...]:
    """OVERRIDABLE and every benchmark's model options (`Benchmark.model_options`, e.g. the modes asked)."""
    return OVERRIDABLE + tuple(plugin_option_defaults())


class RegistryError(ConfigError):
    """A registry file or a registry reference that cannot be used; the message is one line."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelEntry(Strict):
    name: str = Field(pattern=NAME_PATTERN, description="registry and run name (unique)")
    title: str = Field(description="the model's name as the paper prints it")
    backend: Literal["baseline", "vllm", "litellm", "transformers"]
    repo: str | None = Field(None, description="vllm, transformers: Hugging Face repo id")
    revision: str = Field("main", description="vllm: repo revision; pin a commit for reproducible runs")
    model: str | None = Field(None, description="litellm: provider model string, e.g. 'openai/gpt-4o'")
    api_key_env: str | None = Field(None, pattern=r"^[A-Z][A-Z0-9_]*$", description="litellm: env var of the key")
    gpus_per_replica: int = Field(0, ge=0, description="vllm: tensor-parallel size = GPUs per replica")
    max_model_len: int | None = Field(None, ge=256, description="vllm: serving context cap")
    max_images: int = Field(1, ge=0, description="images per prompt (vllm limit_mm_per_prompt.image)")
    text_only: bool = False
    trust_remote_code: bool = False
    hf_overrides: dict[str, Any] | None = None
    chat_template: str | None = Field(None, description="name of an entry of `chat_templates`")
    engine_args: dict[str, Any] = Field(default_factory=dict, description="vllm: extra engine arguments")
    architecture: str | None = Field(None, description="vllm: the model class vLLM serves it with (after "
                                     "hf_overrides); transformers: the transformers class; `nphe4v preflight "
                                     "--tiny` builds a tiny model of it")
    no_tiny_build: str | None = Field(None, description="vllm, transformers: why the backend cannot serve the "
                                      "architecture (so no tiny build exists) and the tested way to serve it instead")
    request_args: dict[str, Any] = Field(default_factory=dict, description="per-request overrides")
    batch_size: int | None = Field(None, ge=1)
    num_cpus: float | None = Field(None, gt=0)
    params_b: float | None = Field(None, gt=0, description="parameters (billions) as the paper lists them")
    access: Literal["open", "closed", "builtin"]
    family: str | None = Field(None, description="model family for GraphVerse Table 2 (e.g. 'Qwen', 'GPT')")
    retired: bool = Field(False, description="the provider no longer serves it (as far as known)")
    paper: list[str] = Field(default_factory=list, description="which paper / table lists the model")
    notes: str = ""

    @model_validator(mode="after")
    def _backend_fields(self) -> ModelEntry:
        if self.backend not in ("vllm", "transformers") and (self.architecture or self.no_tiny_build):
            raise ValueError("`architecture` and `no_tiny_build` are for vllm and transformers models")
        if self.backend == "vllm":
            if not self.repo:
                raise ValueError("a vllm model needs `repo` (Hugging Face repo id)")
            if self.gpus_per_replica < 1:
                raise ValueError("a vllm model needs gpus_per_replica >= 1")
            if self.model or self.api_key_env:
                raise ValueError("`model` and `api_key_env` are for litellm models; a vllm model has `repo`")
        elif self.backend == "transformers":
            # open weights the papers ran with transformers (an architecture this vLLM does not serve)
            if not self.repo:
                raise ValueError("a transformers model needs `repo` (Hugging Face repo id)")
            if self.gpus_per_replica < 1:
                raise ValueError("a transformers model needs gpus_per_replica >= 1")
            if self.model or self.api_key_env or self.engine_args or self.hf_overrides:
                raise ValueError("`model`, `api_key_env`, `engine_args` and `hf_overrides` are not for transformers "
                                 "models")
            if self.trust_remote_code:
                raise ValueError("the transformers backend loads only the architectures transformers ships "
                                 "(remote code is not run)")
        elif self.backend == "litellm":
            if not self.model or "/" not in self.model:
                raise ValueError("a litellm model needs `model` as 'provider/model'")
            if not self.api_key_env:
                raise ValueError("a litellm model needs `api_key_env` (the variable holding its key)")
            if self.repo or self.gpus_per_replica or self.engine_args:
                raise ValueError("`repo`, `gpus_per_replica` and `engine_args` are for vllm models")
        elif self.repo or self.model or self.api_key_env or self.gpus_per_replica:
            raise ValueError("a baseline takes no repo, model, api_key_env or GPUs")
        allowed = {"max_tokens", "temperature"} | ({"drop_params"} if self.backend == "litellm" else set())
        bad = sorted(set(self.request_args) - allowed)
        if bad:
            raise ValueError(f"request_args: unknown {bad[0]!r}; allowed here: {', '.join(sorted(allowed))}")
        if self.text_only:
            self.max_images = 0
        return self


class Group(Strict):
    description: str = ""
    members: list[str] = Field(min_length=1, description="model names or other group names")


class Registry(Strict):
    version: Literal[1] = 1
    default_judge: str
    chat_templates: dict[str, str] = Field(default_factory=dict)
    models: list[ModelEntry]
    groups: dict[str, Group] = Field(default_factory=dict)
    _source: str = PrivateAttr("cluster/models.yaml")  # shown in error messages

    @model_validator(mode="after")
    def _consistent(self) -> Registry:
        names = [m.name for m in self.models]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"model names must be unique: {', '.join(dup)}")
        clash = sorted(set(names) & set(self.groups))
        if clash:
            raise ValueError(f"names used both as model and group: {', '.join(clash)}")
        known = set(names) | set(self.groups)
        for gname, g in self.groups.items():
            for m in g.members:
                if m not in known:
                    raise ValueError(f"group {gname!r}: unknown member {m!r}")
        for m in self.models:
            if m.chat_template is not None and m.chat_template not in self.chat_templates:
                raise ValueError(f"model {m.name!r}: unknown chat_template {m.chat_template!r}")
        if self.default_judge not in names:
            raise ValueError(f"default_judge {self.default_judge!r} is not a model")
        for gname in self.groups:
            self._members(gname, ())  # raises on a cycle
        return self

    # ------------------------------------------------------------------ lookups
    @property
    def by_name(self) -> dict[str, ModelEntry]:
        return {m.name: m for m in self.models}

    def _unknown(self, name: str) -> RegistryError:
        close = difflib.get_close_matches(name, [*self.by_name, *self.groups], n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return RegistryError(f"{self._source}: unknown model or group {name!r}{hint}")

    def _members(self, name: str, seen: tuple[str, ...]) -> list[str]:
        if name in seen:
            raise ValueError(f"group cycle: {' -> '.join([*seen, name])}")
        out: list[str] = []
        for m in self.groups[name].members:
            out.extend(self._members(m, (*seen, name)) if m in self.groups else [m])
        return out

    def names(self, names_or_groups: list[str] | str) -> list[str]:
        """Model names, in order and without repeats, for model and group names (groups expand)."""
        if isinstance(names_or_groups, str):
            names_or_groups = [names_or_groups]
        out: list[str] = []
        for n in names_or_groups:
            if n in self.groups:
                expanded = self._members(n, ())
            elif n in self.by_name:
                expanded = [n]
            else:
                raise self._unknown(n)
            out.extend(m for m in expanded if m not in out)
        return out

    def entries(self, names_or_groups: list[str] | str) -> list[ModelEntry]:
        by_name = self.by_name
        return [by_name[n] for n in self.names(names_or_groups)]

    def resolve(self, names_or_groups: list[str] | str) -> list[ModelSpec]:
        """`ModelSpec`s for model and group names (groups expand in order; a model listed twice appears once)."""
        return [self.spec(e) for e in self.entries(names_or_groups)]

    def judge(self) -> ModelSpec:
        return self.spec(self.by_name[self.default_judge])

    # ------------------------------------------------------------------ conversion
    def spec(self, e: ModelEntry) -> ModelSpec:
        """One registry entry as a `ModelSpec`: backend options hold everything that changes outputs."""
        options: dict[str, Any]
        extra: dict[str, Any] = {}
        if e.backend == "vllm":
            options = {
                "model": e.repo,
                "revision": e.revision,
                "tensor_parallel_size": e.gpus_per_replica,
                "limit_mm_per_prompt": {"image": e.max_images},
            }
            if e.max_model_len:
                options["max_model_len"] = e.max_model_len
            if e.trust_remote_code:
                options["trust_remote_code"] = True
            if e.hf_overrides:
                options["hf_overrides"] = e.hf_overrides
            if e.chat_template:
                options["chat_template"] = self.chat_templates[e.chat_template]
            if e.engine_args:  # vllm.LLM arguments the backend has no option of its own for
                options["engine_kwargs"] = dict(e.engine_args)
            # the replica's placement group reserves gpus_per_replica bundles (cluster/replicas.py)
            extra["num_gpus"] = e.gpus_per_replica
        elif e.backend == "transformers":
            options = {"model": e.repo, "revision": e.revision, "max_images": e.max_images}
            if e.max_model_len:
                options["max_model_len"] = e.max_model_len
            if e.chat_template:
                options["chat_template"] = self.chat_templates[e.chat_template]
            # one replica holds all its GPUs in one bundle (transformers spreads the layers: cluster/replicas.py)
            extra["num_gpus"] = e.gpus_per_replica
        elif e.backend == "litellm":
            options = {"model": e.model, "api_key_env": e.api_key_env}
            if not e.text_only:
                options["max_images"] = e.max_images  # the backend refuses a request with more images
            if "drop_params" in e.request_args:  # a client option (litellm's), not a sampling override
                options["drop_params"] = bool(e.request_args["drop_params"])
        else:
            options = {}
            extra["baseline"] = e.name
        sampling_args = {k: v for k, v in e.request_args.items() if k != "drop_params"}
        if sampling_args:
            options["request_args"] = sampling_args
        if e.batch_size:
            extra["batch_size"] = e.batch_size
        if e.num_cpus:
            extra["num_cpus"] = e.num_cpus
        return ModelSpec(name=e.name, backend=e.backend, text_only=e.text_only, options=options, **extra)


def load_registry(path: str | Path | None = None) -> Registry:
    """Read and validate a registry file (default: cluster/models.yaml); errors are one `RegistryError` line."""
    p = Path(path) if path is not None else DEFAULT_PATH
    shown = "cluster/models.yaml" if p.resolve() == DEFAULT_PATH.resolve() else str(p)
    raw = read_yaml_mapping(p, shown, RegistryError, "registry")
    try:
        reg = Registry.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
        if err["loc"][:1] == ("models",) and len(err["loc"]) > 1 and isinstance(err["loc"][1], int):
            name = (raw.get("models") or [{}])[err["loc"][1]]
            if isinstance(name, dict) and name.get("name"):
                loc = f"models[{name['name']}]" + "".join(f".{x}" for x in err["loc"][2:])
        msg = err["msg"].removeprefix("Value error, ")
        raise RegistryError(f"{shown}: field {loc}: {msg}") from None
    reg._source = shown
    return reg


@lru_cache(maxsize=4)
def _cached(path: str) -> Registry:
    return load_registry(path)


def _override(spec: ModelSpec, overrides: dict[str, Any]) -> ModelSpec:
    data = spec.model_dump()
    for k, v in overrides.items():
        if k == "options":
            data["options"] = {**data["options"], **(v or {})}
        else:
            data[k] = v
    return ModelSpec.model_validate(data)


def expand_models(raw: dict[str, Any], registry: Registry | str | Path | None = None,
                  source: str | Path | None = None) -> dict[str, Any]:
    """Return a copy of a raw run config whose `models:` entries that name the registry became ModelSpec dicts.

    Wire it into `cluster.config_file.load_config`, just before its `try: return RunConfig.model_validate(raw)`
    (a function-level import: cluster.registry imports cluster.config):

        from cluster.registry import expand_models; raw = expand_models(raw, source=path

    A `models:` item may be
      * a string: a model or group name of cluster/models.yaml (groups expand in order);
      * a mapping with `use:` (a name, or a list of names), optional `exclude:` (names to leave out) and
        overrides of `replicas`, `num_cpus`, `num_gpus`, `batch_size`, `text_only`, a benchmark's model options or `options` (merged key by
        key) applied to every model the reference expands to;
      * a mapping with `name:` of a registry model, no `backend:` and only the overrides above: the same as
        `use:` (so `{name: oracle}` and `{name: gpt-4o, batch_size: 8}` work);
      * any other mapping: an inline ModelSpec, passed through unchanged (configs whose models all name a
        backend, like configs/demo.yaml, are returned as is and the registry is not even read).
    A model reached twice through references appears once (first place wins); an inline model with the name
    of a referenced one is left for RunConfig's duplicate check. Errors raise `RegistryError` (a ConfigError),
    one line, prefixed with `source` and the item's position when `source` is given.
    """
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, list) or not any(_maybe_reference(m) for m in models):
        return raw
    if isinstance(registry, Registry):
        reg = registry
    else:
        reg = _cached(str(Path(registry).resolve()) if registry is not None else str(DEFAULT_PATH))
    out: list[Any] = []
    seen: set[str] = set()
    for i, item in enumerate(models):
        where = f"{source}: field models.{i}: " if source is not None else ""
        if isinstance(item, dict) and "use" not in item and _maybe_reference(item):
            if item.get("name") in reg.by_name and set(item) - {"name"} <= set(overridable()):
                item = {"use": item["name"], **{k: v for k, v in item.items() if k != "name"}}
        if not (isinstance(item, str) or (isinstance(item, dict) and "use" in item)):
            out.append(item)
            continue
        try:
            specs = _expand_item(reg, item)
        except (RegistryError, ValidationError, ValueError) as e:
            msg = _one_line(e)
            raise RegistryError(f"{where}{msg}") from None
        for s in specs:
            if s.name not in seen:
                seen.add(s.name)
                out.append(s.model_dump(mode="json"))
    return {**raw, "models": out}


def _maybe_reference(item: Any) -> bool:
    """A string, a `{use: ...}` mapping, or a `{name: ...}` mapping without a backend."""
    if isinstance(item, str):
        return True
    return isinstance(item, dict) and ("use" in item or ("backend" not in item and isinstance(item.get("name"), str)))


def _expand_item(reg: Registry, item: str | dict[str, Any]) -> list[ModelSpec]:
    if isinstance(item, str):
        return reg.resolve([item])
    item = dict(item)
    use = item.pop("use")
    exclude = item.pop("exclude", []) or []
    names = [use] if isinstance(use, str) else use
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise RegistryError("`use` takes a model or group name, or a list of them")
    if isinstance(exclude, str):
        exclude = [exclude]
    bad = sorted(set(item) - set(overridable()))
    if bad:
        raise RegistryError(f"`{bad[0]}` cannot be set on a registry reference; allowed: use, exclude, "
                            f"{', '.join(overridable())}")
    chosen = reg.names(names)
    dropped = set(reg.names(exclude)) if exclude else set()
    by_name = reg.by_name
    return [_override(reg.spec(by_name[n]), item) for n in chosen if n not in dropped]


def _one_line(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        return f"{loc}: {err['msg'].removeprefix('Value error, ')}" if loc else err["msg"]
    return str(e).splitlines()[0] if str(e) else type(e).__name__
