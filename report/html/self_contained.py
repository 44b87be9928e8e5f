"""Checks that a written page loads nothing from the network."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _LoadScanner(HTMLParser):
    """Collects everything in a page that would make a browser fetch a resource."""

    URL_ATTRS = {"src", "href", "xlink:href", "action", "poster", "srcset", "data", "formaction", "background"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def _css(self, text: str) -> None:
        self.found += re.findall(r"""url\(\s*["']?(?!data:|#)([^)"']+)""", text, flags=re.I)
        self.found += ["@import"] * len(re.findall(r"@import", text, flags=re.I))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("iframe", "object", "embed", "base"):
            self.found.append(f"<{tag}>")
        if tag == "style":
            self._in_style = True
        for name, value in attrs:
            value = (value or "").strip()
            if name in self.URL_ATTRS and value and not value.startswith(("data:", "#")):
                self.found.append(f"{tag}[{name}]={value}")
            if name == "style":
                self._css(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._css(data)


def self_contained_violations(text: str) -> list[str]:
    """Tags and attributes that would make the page load something (a src/href/url() to anything but a data:
    URI or a fragment, <iframe>/<object>/<embed>/<base>, CSS @import); the report must have none. Text
    content, however hostile, is not markup and is not reported."""
    scanner = _LoadScanner()
    scanner.feed(text)
    scanner.close()
    return scanner.found
