"""The explorer's HTTP hardening: security headers on every response, state-changing requests only from the
explorer's own pages, capped request bodies, and raster-only image files recognised by their bytes.

Threat model (docs/explorer.md): the server runs on a person's machine, bound to loopback, while the same
browser visits other sites, and it shows untrusted text and files (model responses, dataset folders that may
hold anything). A page of another site must not read the runs, frame the explorer (clickjacking), or write
annotations in the person's name; a file in a data folder must never run as a script in the explorer's origin.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 1 << 20  # 1 MiB: one annotation (at most 64 steps) is a few KiB
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Scripts only from the explorer's own files ('self', no inline script), no plugins, no framing by anyone.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS: tuple[tuple[bytes, bytes], ...] = tuple((k.encode(), v.encode()) for k, v in (
    ("content-security-policy", CSP),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
))

# Raster formats a browser shows as pictures and never runs: (media type, test on the first bytes).
RASTER: dict[str, tuple[str, Callable[[bytes], bool]]] = {
    ".png": ("image/png", lambda b: b.startswith(b"\x89PNG\r\n\x1a\n")),
    ".jpg": ("image/jpeg", lambda b: b.startswith(b"\xff\xd8\xff")),
    ".jpeg": ("image/jpeg", lambda b: b.startswith(b"\xff\xd8\xff")),
    ".webp": ("image/webp", lambda b: len(b) >= 12 and b[:4] == b"RIFF" and b[8:12] == b"WEBP"),
}


MAX_JSON_DEPTH = 32  # an annotation is 4 levels deep; deeper input only serves to exhaust the stack


def json_depth_ok(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether parsed JSON nests at most `limit` containers deep (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def raster_type(suffix: str, head: bytes) -> str | None:
    """The media type of a raster image whose name ends in `suffix` and whose file starts with `head`;
    None unless both the name and the bytes say PNG, JPEG or WebP (an SVG or HTML file renamed `.png` is
    refused, whatever the browser would sniff)."""
    hit = RASTER.get(suffix.lower())
    return hit[0] if hit is not None and hit[1](head) else None


class SecurityMiddleware:
    """Pure ASGI (it must see the body as it streams in, which Starlette's BaseHTTPMiddleware cannot):

    - adds `HEADERS` to every response, the errors of inner middleware and a crash included;
    - refuses a state-changing method unless its `Origin` is the explorer's own (browsers send Origin with
      every POST; a request without one is refused too: the only writer is the annotation page's fetch);
    - refuses a body over `max_body` bytes with 413, from Content-Length before reading anything, or as soon
      as the streamed bytes pass the cap (chunked uploads), never holding more than the cap in memory."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                own = {k for k, _ in HEADERS}
                message["headers"] = [*(h for h in message.get("headers", []) if h[0].lower() not in own),
                                      *HEADERS]
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if scope["method"] not in SAFE_METHODS:
            refusal = _foreign(scope, headers)
            if refusal:
                await _reply(send_with_headers, 403, refusal)
                return
            length = headers.get("content-length", "")
            if length and (not length.isdigit() or int(length) > self.max_body):
                await _reply(send_with_headers, 413 if length.isdigit() else 400,
                             f"request body over {self.max_body} bytes" if length.isdigit()
                             else "Content-Length: not a number")
                return
            body = bytearray()
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body += message.get("body", b"")
                more = message.get("more_body", False)
                if len(body) > self.max_body:
                    await _reply(send_with_headers, 413, f"request body over {self.max_body} bytes")
                    return
            receive = _replay(bytes(body), receive)
        try:
            await self.app(scope, receive, send_with_headers)
        except Exception:
            # Starlette's error middleware sits outside this one: answer the crash here so that it carries
            # the headers too, then let it be logged
            if not started:
                await _reply(send_with_headers, 500, "internal error")
            raise


def _foreign(scope: Scope, headers: dict[str, str]) -> str:
    """Why a state-changing request is not from the explorer's own pages ("" when it is)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return f"cross-site request refused (Sec-Fetch-Site: {site})"
    origin = headers.get("origin")
    if origin is None:
        return "request without an Origin header refused (post from the explorer's own page)"
    own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()
    if origin.lower() != own:
        return "request from another origin refused"
    return ""


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect as the server reports it

    return replay


async def _reply(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"error": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
