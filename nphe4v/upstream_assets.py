"""The NPHardEval4V authors' prompt files, fetched like a dataset: pinned commit, pinned SHA-256, cached.

`prompts: paper` sends the original repository's prompt text. That text is the authors' data, so it is never
part of this project: it is read at run time from the files below, taken from one pinned commit of the public
repository (`lizhouf/NPHardEval4V`), either

* from a local checkout named in the config (`prompt_assets: PATH`, or NPHE4V_PROMPT_ASSETS) -- offline
  clusters; or
* downloaded once from the pinned URL into a cache folder (under the run's data root, or the XDG cache),
  each file checked against its SHA-256 before it is kept.

A file whose bytes differ from the pin is refused in one line naming it; nothing here executes the files
(`nphe4v.paper_prompts` reads them with `ast`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

# raised when the prompt files cannot be had (one line saying how to get them): the shared core's, so the
# cluster catches it without importing this package
from evalcore.benchmark import AssetsMissing

UPSTREAM_REPO = "lizhouf/NPHardEval4V"
UPSTREAM_COMMIT = "61e8020ac4c1351e487005055c8c960bfb6f71b6"
DEFAULT_BASE_URL = f"https://raw.githubusercontent.com/{UPSTREAM_REPO}/{UPSTREAM_COMMIT}"
ENV_ASSETS = "NPHE4V_PROMPT_ASSETS"

# path in the repository -> SHA-256 of its bytes at UPSTREAM_COMMIT. The two prompt files are the dicts of
# prompt pieces (Open: the open-weights runs, Prompts = Close: the API runs); the Open runners hold how each
# task's instance data is written into the prompt (the papers' data rendering).
PINNED_FILES: dict[str, str] = {
    "Open/prompts.py": "e59bb5dc4e036d3cddb680a5c8d753a52aa7bf2e49b551c0abac2ca1fb316a92",
    "Prompts/prompts.py": "eb5013e9eb005415ebee04320dfc305bc4a630a69315649358a8e0679e304fad",
    "Open/run/run_p_BSP.py": "8b7acc588f86895f2c34b96748f355bc8117024c47007e4cadc41ac86cc236b1",
    "Open/run/run_p_EDP.py": "0286d06304f450d551b58628a146a5a3f6faa6841ec4ac8e8fbe00587e958a9e",
    "Open/run/run_p_SPP.py": "cd7f07acd59c0c95983102f0fbea27c81a54c1b45fe9e6a32ae0f53992475b15",
    "Open/run/run_cmp_KSP.py": "a9df3da67098b16c0fb13e1893c87d134e1c735c5422370671e67254e5eb858e",
    "Open/run/run_cmp_TSP_D.py": "c8614298e6e7f4d402b8ceb4663771812a401216e7ed886027b19170e7755c30",
    "Open/run/run_cmp_GCP_D.py": "8f2ba8a9ed24b798c8426aa131eeecf8b1d22a325b9f10301121b7cacf2481cf",
    "Open/run/run_hard_TSP.py": "1e97cb0f592afcb084166c9188124b27fbabc2e9dec1fb9b7a4ea5bf1c0b0a71",
    "Open/run/run_hard_GCP.py": "641920e414874576e6d9825c55e5a4ac6595bfbf9b0580a198dd09a6c402916d",
    "Open/run/run_hard_MSP.py": "84d700f07ea4eb3e36bc7f3cab73a21fe77bd01159e0f533267fdbbc3c49df16",
}
# Larger than any pinned file by far; a server sending more is refused instead of filling the disk.
MAX_FILE_BYTES = 1 << 20


def how_to_get(cache: Path | None = None) -> str:
    where = f" (cache: {cache})" if cache is not None else ""
    return (f"the NPHardEval4V prompt files for `prompts: paper` are missing{where}: allow HTTPS to "
            f"raw.githubusercontent.com for a one-time download, or `git clone https://github.com/{UPSTREAM_REPO}` "
            f"at commit {UPSTREAM_COMMIT[:7]} and set `prompt_assets: PATH` in the config (or {ENV_ASSETS}); "
            "or use `prompts: rewritten`")


def default_cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nphe4v"


def cache_dir(root: Path) -> Path:
    return root / "upstream" / f"nphardeval4v-{UPSTREAM_COMMIT[:12]}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check(path: Path, rel: str, pins: dict[str, str]) -> str | None:
    """None when `path` holds the pinned bytes of `rel`, else why not (one phrase)."""
    if not path.is_file():
        return "missing"
    try:
        data = path.read_bytes()
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    got = _sha256(data)
    return None if got == pins[rel] else f"SHA-256 {got[:12]}..., pinned {pins[rel][:12]}..."


@dataclass(frozen=True)
class AssetSource:
    """Where the files come from: a local checkout, else the cache (filled from `base_url` when allowed)."""

    local: Path | None = None
    cache_root: Path | None = None
    base_url: str = DEFAULT_BASE_URL
    download: bool = True
    # (path, SHA-256) pairs; None: PINNED_FILES
    pins: tuple[tuple[str, str], ...] | None = None

    @classmethod
    def from_config(cls, prompt_assets: str | None, cache_root: Path | None = None) -> AssetSource:
        local = prompt_assets or os.environ.get(ENV_ASSETS) or None
        return cls(local=Path(local).expanduser() if local else None, cache_root=cache_root)


def resolve_assets(source: AssetSource, timeout_s: float = 30.0) -> Path:
    """A folder holding every pinned file with its pinned bytes (downloading what the cache lacks), or
    AssetsMissing in one line."""
    pins = dict(source.pins) if source.pins is not None else dict(PINNED_FILES)
    if source.local is not None:
        for rel in pins:
            why = _check(source.local / rel, rel, pins)
            if why is not None:
                raise AssetsMissing(f"{source.local / rel}: {why} (prompt_assets must be a checkout of "
                                    f"{UPSTREAM_REPO} at commit {UPSTREAM_COMMIT[:7]})")
        return source.local
    root = cache_dir(source.cache_root or default_cache_root())
    for rel in pins:
        target = root / rel
        why = _check(target, rel, pins)
        if why is None:
            continue
        if why != "missing":
            # a corrupted or foreign cached file is replaced, never used (a write below says why if it cannot be)
            with contextlib.suppress(OSError):
                target.unlink()
        if not source.download:
            raise AssetsMissing(how_to_get(root))
        _download(source.base_url.rstrip("/") + "/" + rel, target, rel, pins, timeout_s, root)
    return root


def _download(url: str, target: Path, rel: str, pins: dict[str, str], timeout_s: float, root: Path) -> None:
    try:
        # the URL is the pinned raw-file address (or a test's local server), never user input
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # noqa: S310
            data = resp.read(MAX_FILE_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise AssetsMissing(f"{how_to_get(root)} [download of {rel} failed: {exc}]") from None
    if len(data) > MAX_FILE_BYTES:
        raise AssetsMissing(f"{url}: more than {MAX_FILE_BYTES} bytes; not the pinned {rel}")
    got = _sha256(data)
    if got != pins[rel]:
        raise AssetsMissing(f"{url}: SHA-256 {got[:12]}... is not the pinned {pins[rel][:12]}... of {rel}; "
                            "refused")
    tmp = target.with_name(target.name + f".part-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: a reader sees the whole file or none
    except OSError as e:
        raise AssetsMissing(f"{target}: cannot write the downloaded {rel} into the cache: {e.strerror or e} "
                            f"(set XDG_CACHE_HOME, or prompt_assets: PATH to a checkout)") from None
