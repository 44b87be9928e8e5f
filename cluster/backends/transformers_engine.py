"""A model replica served by Hugging Face transformers inside the model actor: for the papers' open models whose
architecture this vLLM does not serve (Mllama, MPT, BLIP-2 with FLAN-T5, Fuyu, Kosmos-2). The NPHardEval4V
authors ran these models with transformers' `generate`; this backend does the same.

The replica loads the model folder (or Hugging Face id) once, in a thread started by the constructor
(`ready` is set when loaded; `_start_error` says why not): `AutoProcessor` (`AutoTokenizer` for text-only
models) and `AutoModelForImageTextToText` for vision-language models, `AutoModelForCausalLM` for text models
(the folder's `config.json` says which). Each request is rendered with the entry's prompt format: the
`chat_template` option, else the processor's or tokenizer's own chat template, else the prompt text as it is
(BLIP-2 and Fuyu checkpoints have no template; the papers' code passed them the raw prompt). Images go to the
family's processor, which writes the image placeholders. Requests run one at a time (one `generate` each, on
one worker thread), unpadded, as the authors ran them: batched `generate` pads prompts, which not every
family handles exactly, and sampled requests carry their own seeds. A replica's throughput is one request's
(scale with `replicas`).

Decoding follows the run's sampling exactly, not the checkpoint's generation defaults: temperature 0 is greedy;
otherwise plain sampling at that temperature (top_p 1, no top-k, no repetition penalty, as the vLLM backend
sends), seeded per request with the request's seed. `max_model_len` bounds prompt + new tokens as vLLM does:
a longer prompt is a `model_error`, and new tokens stop at the cap.

Text-only requests to BLIP-2 and Kosmos-2 (whose `generate` requires an image) go to their language model
alone (FLAN-T5, the Kosmos-2 decoder), the same weights without the visual prefix. Kosmos-2's answers lose
their grounding markup (`<phrase>`, `<object>`, patch indices) through its processor's own post-processing,
as the authors' runner did. BLIP-2, Fuyu and Kosmos-2 take one image per prompt (more: `model_error`).

Options (ModelSpec.options):
  model            path or HF id (relative paths resolve against the actor's cwd)
  revision         HF revision, as given
  dtype            auto (default: the checkpoint's dtype on GPU, float32 on CPU) or a torch dtype name
  max_model_len    prompt + new tokens cap (default: none)
  max_images       most images one request may carry (default 1); more -> model_error
  chat_template    Jinja text, or a path to a template file; default: the processor's / tokenizer's own
  request_args     sampling overrides (max_tokens, temperature) the planner applies to every request
  num_threads      CPU threads torch may use in this replica (default: torch's own)

Statuses as the vLLM backend's: an image missing or not matching its hash -> `infra_error` for that request;
too many images, a prompt the processor or `generate` refuses (ValueError, TypeError, IndexError) or one
longer than `max_model_len` -> `model_error`; the model failing to load -> `infra_error` for every request;
`generate` failing otherwise (out of memory, a broken install) -> `infra_error` for that request. `generate` never raises. Usage: prompt tokens are the processor's
input ids (image placeholders included, as vLLM counts them), completion tokens the generated ids (up to
and including EOS); latency_s is the request's own generate time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cluster.backends.vllm_engine import _conversation, _first_line, _infra
from evalcore.schema import ModelRequest, ModelResponse, Usage
from evalcore.validation import first_error

# vision-language classes whose `generate` needs pixel values: a text-only request goes to this submodule
LANGUAGE_MODEL_ALONE = {"Blip2ForConditionalGeneration": "language_model",
                        "Kosmos2ForConditionalGeneration": "text_model"}
# families whose answers carry grounding markup (<phrase>, <object>, <patch_index_*>): removed with the family's
# own post-processing, as the NPHardEval4V authors' Kosmos-2 runner did
GROUNDING_MARKUP = {"Kosmos2ForConditionalGeneration"}
# families whose processor and model take one image per prompt (their papers' and checkpoints' usage)
ONE_IMAGE = {"Blip2ForConditionalGeneration", "FuyuForCausalLM", "Kosmos2ForConditionalGeneration"}


class TransformersOptions(BaseModel):
    """`options:` of a model with `backend: transformers`; anything else is refused in one line."""

    model_config = ConfigDict(extra="forbid")

    model: str
    revision: str | None = None
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    max_model_len: int | None = Field(None, ge=1)
    max_images: int = Field(1, ge=0)
    chat_template: str | None = None
    request_args: dict[str, Any] | None = Field(None, description="sampling overrides, applied by the planner")
    num_threads: int | None = Field(None, ge=1)


def parse_options(name: str, options: dict[str, Any]) -> TransformersOptions:
    """A transformers model's options, or one ValueError line naming the field."""
    try:
        return TransformersOptions.model_validate(options)
    except ValidationError as e:
        loc, msg = first_error(e)
        raise ValueError(f"model {name!r}: options{'.' + loc if loc else ''}: {msg}") from None


class Loaded:
    """What a replica holds once loaded: the model, its processor (or tokenizer), its prompt template."""

    def __init__(self, opts: TransformersOptions) -> None:
        import torch
        import transformers

        if opts.num_threads:
            torch.set_num_threads(opts.num_threads)
        source = str(Path(opts.model).resolve()) if Path(opts.model).exists() else opts.model
        kw: dict[str, Any] = {"revision": opts.revision} if opts.revision else {}
        config = transformers.AutoConfig.from_pretrained(source, **kw)
        self.architecture = (getattr(config, "architectures", None) or [""])[0]
        self.vision = hasattr(config, "vision_config") or self.architecture.startswith("Fuyu")
        on_gpu = torch.cuda.is_available()
        if opts.dtype == "auto":
            dtype: Any = "auto" if on_gpu else torch.float32
        else:
            dtype = getattr(torch, opts.dtype)
        load: dict[str, Any] = {**kw, "dtype": dtype}
        if on_gpu:  # all GPUs of the replica's bundle; one card's model goes on it whole
            load["device_map"] = "auto" if torch.cuda.device_count() > 1 else "cuda:0"
        cls = transformers.AutoModelForImageTextToText if self.vision else transformers.AutoModelForCausalLM
        self.model = cls.from_pretrained(source, **load).eval()
        if self.vision:
            self.processor = transformers.AutoProcessor.from_pretrained(source, **kw)
            self.tokenizer = self.processor.tokenizer
        else:
            self.processor = self.tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kw)
        template = opts.chat_template
        if template and "{" not in template and Path(template).is_file():
            template = Path(template).read_text()
        self.template = (template or getattr(self.processor, "chat_template", None)
                         or getattr(self.tokenizer, "chat_template", None))
        text_cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.encoder_decoder = bool(getattr(text_cfg, "is_encoder_decoder", False))
        self.device = next(self.model.parameters()).device

    def render(self, text: str, n_images: int) -> str:
        """The prompt string: the template over one user turn (image parts first), or the text itself."""
        if not self.template:
            return text
        content: Any = ([{"type": "image"}] * n_images + [{"type": "text", "text": text}]) if n_images else text
        return self.tokenizer.apply_chat_template([{"role": "user", "content": content}], chat_template=self.template,
                                                  tokenize=False, add_generation_prompt=True)

    def inputs(self, prompt: str, images: list[Any]) -> Any:
        # a template that writes BOS itself must not get a second one from the tokenizer (as vLLM renders)
        bos = self.tokenizer.bos_token
        special = not (bos and prompt.startswith(bos))
        if not self.vision:
            return self.tokenizer(prompt, return_tensors="pt", add_special_tokens=special)
        if not images:
            return self.processor(text=prompt, return_tensors="pt", add_special_tokens=special)
        # one sample per call: a single figure as itself, several as the sample's list
        return self.processor(text=prompt if len(images) == 1 else [prompt],
                              images=images if len(images) == 1 else [images],
                              return_tensors="pt", add_special_tokens=special)


class TransformersBackend:
    """One model loaded with transformers per replica; requests run one after another on a worker thread."""

    needs_reference = False

    def __init__(self, options: dict[str, Any], name: str = "transformers") -> None:
        self.name = name
        self.opts = parse_options(name, options)
        self.max_images = self.opts.max_images
        self._loaded: Loaded | None = None
        self._start_error: str | None = None
        self._lock = threading.Lock()  # one generate at a time on the model
        self.ready = threading.Event()
        # loading starts now, so the actor's first batch finds the model (nearly) loaded
        threading.Thread(target=self._load, name=f"transformers-load-{name}", daemon=True).start()

    def _load(self) -> None:
        try:
            self._loaded = Loaded(self.opts)
        except Exception as e:  # reported per request as infra_error, and by the actor's ready()
            self._start_error = f"model failed to load: {type(e).__name__}: {_first_line(e)}"
        finally:
            self.ready.set()

    async def generate(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        if not requests:
            return []
        try:
            return await asyncio.to_thread(self._serve, requests)
        except Exception as e:  # never raise out of generate
            return [_infra(f"{type(e).__name__}: {_first_line(e)}") for _ in requests]

    def _serve(self, requests: list[ModelRequest]) -> list[ModelResponse]:
        self.ready.wait()
        if self._loaded is None:
            return [_infra(self._start_error or "model not loaded") for _ in requests]
        out = []
        for req in requests:
            conv, err = _conversation(req, self.max_images)
            if conv is None:
                out.append(err or _infra("bad request"))
                continue
            images = [p["image_pil"] for p in conv[0]["content"] if p["type"] == "image_pil"]
            with self._lock:
                out.append(self._one(self._loaded, req, images))
        return out

    def _one(self, m: Loaded, req: ModelRequest, images: list[Any]) -> ModelResponse:
        import torch

        if len(images) > (1 if m.architecture in ONE_IMAGE else len(images)) or (images and not m.vision):
            allowed = "no images (a text model)" if not m.vision else "one image per prompt"
            return ModelResponse(text=None, status="model_error",
                                 error=f"{m.architecture} takes {allowed}; the request has {len(images)}")
        try:
            inputs = m.inputs(m.render(req.prompt.text, len(images)), images)
        except Exception as e:  # the family's processor refused this request's input
            return ModelResponse(text=None, status="model_error", error=f"{type(e).__name__}: {_first_line(e)}")
        prompt_tokens = int(inputs["input_ids"].shape[-1])
        max_new = req.sampling.max_tokens
        cap = self.opts.max_model_len
        if cap is not None:
            if prompt_tokens >= cap:
                return ModelResponse(text=None, status="model_error",
                                     error=f"prompt of {prompt_tokens} tokens does not fit max_model_len={cap}")
            max_new = min(max_new, cap - prompt_tokens)
        gen = sampling_kwargs(req.sampling.temperature, max_new, m.model.generation_config)
        t0 = time.perf_counter()
        try:
            model = m.model
            if not images and m.architecture in LANGUAGE_MODEL_ALONE:
                model = _language_model(m.model, LANGUAGE_MODEL_ALONE[m.architecture])
                inputs = {k: inputs[k] for k in ("input_ids", "attention_mask") if k in inputs}
            # to the model's first device; image tensors (pixel values, Fuyu's patches) in the model's dtype
            inputs = {k: _to(v, m.device, m.model.dtype) for k, v in dict(inputs).items()}
            if gen.get("do_sample"):
                torch.manual_seed(req.sampling.seed)
            with torch.inference_mode():
                seq = model.generate(**inputs, **gen)
        except (ValueError, TypeError, IndexError) as e:  # an input the model cannot take (as vLLM's rejections)
            return ModelResponse(text=None, status="model_error",
                                 error=f"generate refused the input: {type(e).__name__}: {_first_line(e)}")
        except Exception as e:  # out of memory, a broken install: not the model's answer
            return _infra(f"generate failed: {type(e).__name__}: {_first_line(e)}")
        # decoder-only models return the prompt too; an encoder-decoder's output starts with its start token
        new = seq[0, 1:] if m.encoder_decoder else seq[0, prompt_tokens:]
        ids = _until_eos(new.tolist(), gen.get("eos_token_id"))
        text = m.tokenizer.decode(ids, skip_special_tokens=True)
        if m.architecture in GROUNDING_MARKUP:
            text = _without_grounding(m.processor, text)
        return ModelResponse(text=text, status="ok",
                             usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(ids)),
                             latency_s=time.perf_counter() - t0)

    def close(self) -> None:
        """Drop the model (the replica's memory goes with the actor)."""
        self._loaded = None


def sampling_kwargs(temperature: float, max_new_tokens: int, defaults: Any) -> dict[str, Any]:
    """`generate` arguments for the run's sampling: greedy at temperature 0, else plain sampling at that
    temperature; the checkpoint's own sampling defaults (top_p, top_k, repetition penalty) are overridden."""
    eos = getattr(defaults, "eos_token_id", None)
    pad = getattr(defaults, "pad_token_id", None)
    if pad is None:
        pad = eos[0] if isinstance(eos, list) else eos
    kw: dict[str, Any] = {"max_new_tokens": max(1, int(max_new_tokens)), "num_beams": 1, "repetition_penalty": 1.0,
                          "eos_token_id": eos, "pad_token_id": pad}
    if temperature > 0:
        kw.update(do_sample=True, temperature=float(temperature), top_p=1.0, top_k=0)
    else:
        kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    return kw


def _until_eos(ids: list[int], eos: int | list[int] | None) -> list[int]:
    """Generated ids up to and including the first EOS (what vLLM counts). One sequence per call, so nothing
    after it is padding."""
    stops = set(eos if isinstance(eos, list) else [eos]) - {None}
    for i, t in enumerate(ids):
        if t in stops:
            return ids[: i + 1]
    return ids


def _to(value: Any, device: Any, dtype: Any) -> Any:
    if not hasattr(value, "to"):
        return value
    if getattr(value, "is_floating_point", None) is not None and value.is_floating_point():
        return value.to(device=device, dtype=dtype)
    return value.to(device)


def _without_grounding(processor: Any, text: str) -> str:
    post = getattr(processor, "post_process_generation", None)
    if post is None:
        return text
    cleaned = post(text)  # (text, entities) with cleanup, the default the authors used
    return cleaned[0] if isinstance(cleaned, tuple) else str(cleaned)


def _language_model(model: Any, attr: str) -> Any:
    inner = getattr(model, attr, None)
    if inner is None and hasattr(model, "model"):
        inner = getattr(model.model, attr, None)
    if inner is None:
        raise RuntimeError(f"{type(model).__name__} has no {attr}")
    return inner
