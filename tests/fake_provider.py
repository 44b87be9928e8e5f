"""A local model provider for backend tests (loopback only), speaking the wire formats litellm uses:

* OpenAI-compatible `POST .../chat/completions` (openai, xai, moonshot, deepseek, dashscope, together, mistral,
  hosted_vllm, ...: any path that is none of the two below);
* Anthropic `POST .../messages` (images as `{"type": "image", "source": {"type": "base64", ...}}`);
* Gemini `POST .../models/<model>:generateContent` (images as `inline_data` parts).

Each hit records its `wire` ("openai", "anthropic" or "gemini"), and its images as data: URIs whatever the
format, so a test can check that an image reached the server intact.

Behaviour is scripted per request, deterministically even under concurrency:

* a prompt whose text contains `[[script:A,B,C]]` gets action A on its 1st request, B on its 2nd, ...
  (the last action repeats once the list is exhausted);
* otherwise the server-wide `script` list is consumed in arrival order, then `default` is used.

Actions: `ok`, `429` or `429:<retry_after_s>`, `500`, `503`, `slow:<seconds>`, `trunc` (a 200 whose JSON body
is cut in half), `400ctx` (a context-length 400), `400key` (a 400 whose message echoes the bearer token, the
way some providers do), `401` (a refused key), `filter` (finish_reason content_filter), `null` (a 200 with `content: null`),
`big:<bytes>` (an answer of that many UTF-8 bytes), `gate:<seconds>` (an ok
answer held until the test calls `open_gate()`, or at most that long).

An ok answer is `"ok " + <the prompt's text>`, so a test can check that every response belongs to its request,
unless `reply(prompt, images)` is given and returns a text: then that text is the answer (a scripted model, e.g.
one that writes programs; `images` are the request's data: URIs, which tell apart prompts of equal text).
With `echo_secrets=True` it also repeats what a careless provider might echo: the request's path and query
string (a key in `api_base`) and every header (Authorization, custom auth headers). The server answers a POST
on any path: a client joining `chat/completions` to a base URL that holds a query string sends
`/v1/?api_key=K/chat/completions`. It records every request (arrival time, prompt, action, auth header, path and query, headers) and the
peak number of requests in flight. It is bounded: `slow` sleeps at most `max_sleep_s`, the server refuses work beyond `max_requests`,
and it stops itself after `lifetime_s` or when the `with` block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

_SCRIPT = re.compile(r"\[\[script:([^\]]*)\]\]")


@dataclass
class Hit:
    t: float  # monotonic arrival time
    prompt: str
    action: str
    auth: str
    images: list[str] = field(default_factory=list)
    t_end: float = 0.0
    path_qs: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    wire: str = "openai"
    model: str = ""


@dataclass
class FakeProvider:
    script: list[str] = field(default_factory=list)
    default: str = "ok"
    max_requests: int = 2000
    max_sleep_s: float = 30.0
    lifetime_s: float = 180.0
    model: str = "fake-model"
    echo_secrets: bool = False
    reply: Callable[[str, list[str]], str | None] | None = None

    def __post_init__(self) -> None:
        self._gate = threading.Event()
        self.hits: list[Hit] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.port = 0
        self._lock = threading.Lock()
        self._per_prompt: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None

    # ---------------------------------------------------------------- lifecycle

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeProvider:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._thread = threading.Thread(target=self._run, name="fake-provider", daemon=True)
        self._thread.start()
        if not self._ready.wait(15):
            raise RuntimeError("fake provider did not start within 15 s")

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(15)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
            # handlers still sleeping (`slow`) or idle keep-alive connections: cancel, then close the loop
            pending = asyncio.all_tasks(self._loop)
            for t in pending:
                t.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        # a client joining `/chat/completions` to a base URL that holds a query string sends odd paths
        app.router.add_post("/{tail:.*}", self._handle)
        # handler_cancellation: a request the client gave up on (timeout) stops counting as in flight
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0, handler_cancellation=True)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        self._ready.set()
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=self.lifetime_s)
        except TimeoutError:
            pass
        finally:
            await runner.cleanup()

    # ---------------------------------------------------------------- stats

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.hits)

    def actions(self) -> list[str]:
        with self._lock:
            return [h.action for h in self.hits]

    def hits_for(self, marker: str) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if marker in h.prompt]

    # ---------------------------------------------------------------- serving

    def _pick(self, prompt: str) -> str:
        with self._lock:
            m = _SCRIPT.search(prompt)
            if m:
                steps = [s.strip() for s in m.group(1).split(",") if s.strip()] or ["ok"]
                n = self._per_prompt.get(prompt, 0)
                self._per_prompt[prompt] = n + 1
                return steps[min(n, len(steps) - 1)]
            return self.script.pop(0) if self.script else self.default

    def open_gate(self) -> None:
        """Release every `gate` request, now and later."""
        self._gate.set()

    @contextlib.contextmanager
    def gate_opens_when(self, ready: Callable[[], bool], every_s: float = 0.2) -> Iterator[None]:
        """Open the gate once `ready()` holds (a test's event: the judge was called, the engines wrote their
        samples), checked every `every_s` in a thread; an exception from `ready` counts as not yet (no shard
        written yet). Leaving the block opens it whatever happened, so nothing stays held."""
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(every_s):
                try:
                    if ready():
                        self.open_gate()
                        return
                except Exception:  # noqa: BLE001 -- not ready yet
                    continue

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            self.open_gate()
            watcher.join(10)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body: dict[str, Any] = json.loads(raw)
        wire = wire_of(request.path)
        prompt = _prompt_text(body, wire)
        action = self._pick(prompt)
        auth = (request.headers.get("Authorization") or request.headers.get("x-api-key")
                or request.headers.get("x-goog-api-key") or "")
        model = str(body.get("model") or request.path.rpartition("/models/")[2].partition(":")[0] or self.model)
        hit = Hit(
            time.monotonic(), prompt, action, auth, image_parts(body, wire),
            path_qs=request.path_qs, headers=dict(request.headers), wire=wire, model=model,
        )
        with self._lock:
            over = len(self.hits) >= self.max_requests
            self.hits.append(hit)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if over:
                return _error(503, "fake provider: request budget exhausted")
            return await self._respond(action, body, prompt, hit)
        finally:
            with self._lock:
                self.in_flight -= 1
            hit.t_end = time.monotonic()

    async def _respond(self, action: str, body: dict[str, Any], prompt: str, hit: Hit) -> web.StreamResponse:
        kind, _, arg = action.partition(":")
        if kind == "slow":
            await asyncio.sleep(min(float(arg or 5), self.max_sleep_s))
            return self._reply(hit, self._completion(body, prompt))
        if kind == "gate":
            deadline = time.monotonic() + float(arg or 60)
            while not self._gate.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return self._reply(hit, self._completion(body, prompt))
        if kind == "ok":
            text = self.reply(prompt, hit.images) if self.reply is not None else None
            if self.echo_secrets:
                text = f"ok {prompt}\n[echo] url={hit.path_qs} headers={json.dumps(hit.headers)}"
            return self._reply(hit, self._completion(body, prompt, text=text))
        if kind == "filter":
            return self._reply(hit, self._completion(body, prompt, text="", finish="content_filter"))
        if kind == "null":  # an HTTP 200 whose answer is missing
            c = self._completion(body, prompt)
            c["choices"][0]["message"]["content"] = None
            return self._reply(hit, c)
        if kind == "big":  # an answer of `arg` bytes (UTF-8: "é" is two), ending in a marker
            n = int(arg)
            text = "é" * ((n - 4) // 2) + "x" * ((n - 4) % 2) + " END"
            return self._reply(hit, self._completion(body, prompt, text=text))
        if kind == "429":
            headers = {"Retry-After": arg} if arg else {}
            return _error(429, "Rate limit reached for requests", "rate_limit_exceeded", headers)
        if kind in ("500", "503"):
            return _error(int(kind), "The server had an error while processing your request")
        if kind == "trunc":
            text = json.dumps(self._shape(hit, self._completion(body, prompt)))
            return web.Response(body=text[: len(text) // 2].encode(), content_type="application/json")
        if kind == "400ctx":
            return _error(
                400,
                "This model's maximum context length is 4096 tokens. However, your messages resulted in "
                "9000 tokens. Please reduce the length of the messages.",
                "context_length_exceeded",
            )
        if kind == "401":
            return _error(401, "Invalid authentication", "invalid_api_key")
        if kind == "400key":
            key = hit.auth.removeprefix("Bearer ")
            msg = f"Incorrect API key provided: {key}. Check your key."
            if self.echo_secrets:
                msg += f" Request: {hit.path_qs} {json.dumps(hit.headers)}"
            return _error(400, msg, "invalid_request_error")
        raise ValueError(f"fake provider: unknown action {action!r}")

    def _reply(self, hit: Hit, completion: dict[str, Any]) -> web.Response:
        return web.json_response(self._shape(hit, completion))

    @staticmethod
    def _shape(hit: Hit, c: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI-shaped completion in the wire format of the hit's provider."""
        text = c["choices"][0]["message"]["content"]
        finish = c["choices"][0]["finish_reason"]
        n_in, n_out = c["usage"]["prompt_tokens"], c["usage"]["completion_tokens"]
        if hit.wire == "anthropic":
            stop = {"stop": "end_turn", "content_filter": "refusal"}.get(finish, finish)
            return {"id": f"msg_{c['id']}", "type": "message", "role": "assistant", "model": hit.model,
                    "content": [{"type": "text", "text": text}], "stop_reason": stop, "stop_sequence": None,
                    "usage": {"input_tokens": n_in, "output_tokens": n_out}}
        if hit.wire == "gemini":
            reason = {"stop": "STOP", "content_filter": "SAFETY"}.get(finish, "STOP")
            return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                    "finishReason": reason, "index": 0}],
                    "usageMetadata": {"promptTokenCount": n_in, "candidatesTokenCount": n_out,
                                      "totalTokenCount": n_in + n_out},
                    "modelVersion": hit.model}
        return c

    def _completion(
        self, body: dict[str, Any], prompt: str, text: str | None = None, finish: str = "stop"
    ) -> dict[str, Any]:
        text = f"ok {prompt}" if text is None else text
        n_in, n_out = 10 + len(prompt) // 4, 3 + len(text) // 4
        return {
            "id": f"chatcmpl-{len(self.hits)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            ],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }


def wire_of(path: str) -> str:
    """Which provider's wire format a request path speaks."""
    if path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
        return "gemini"
    if path.endswith("/messages"):
        return "anthropic"
    return "openai"


def _parts(body: dict[str, Any], wire: str) -> list[dict[str, Any]]:
    if wire == "gemini":
        return [p for c in body.get("contents", []) for p in c.get("parts", [])]
    out: list[dict[str, Any]] = []
    for msg in body.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            out.append({"type": "text", "text": content})
        elif isinstance(content, list):
            out.extend(c for c in content if isinstance(c, dict))
    return out


def _prompt_text(body: dict[str, Any], wire: str = "openai") -> str:
    parts = _parts(body, wire)
    if wire == "gemini":
        return "\n".join(p["text"] for p in parts if "text" in p)
    return "\n".join(c.get("text", "") for c in parts if c.get("type") == "text")


def _error(status: int, message: str, code: str = "server_error", headers: dict[str, str] | None = None):
    payload = {"error": {"message": message, "type": code, "param": None, "code": code}}
    return web.json_response(payload, status=status, headers=headers)


def image_parts(body: dict[str, Any], wire: str = "openai") -> list[str]:
    """The images of a recorded request body as data: URIs (or the URLs sent), in any wire format."""
    out = []
    for c in _parts(body, wire):
        if wire == "gemini" and "inline_data" in c:
            d = c["inline_data"]
            out.append(f"data:{d.get('mime_type')};base64,{d.get('data')}")
        elif wire == "anthropic" and c.get("type") == "image":
            src = c.get("source", {})
            out.append(f"data:{src.get('media_type')};base64,{src.get('data')}" if src.get("type") == "base64"
                       else str(src.get("url")))
        elif c.get("type") == "image_url":
            out.append(c["image_url"]["url"])
    return out
