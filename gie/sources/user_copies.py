"""User copies of the paper's sources.

The GraphVerse paper's sources (section 4.1) cannot be installed offline, so the bundled substitutes
are the default. A user may point a paper source (or a substitute, by its own name) at a local copy
in the usual format; the copy then replaces the substitute(s) wherever a task draws from them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gie.sources.base import Scenario, Source, SourceFileError
from gie.sources.builtin import MOLECULE_SOURCES, WALK_SOURCES
from gie.sources.films import load_triples
from gie.sources.flights import load_openflights
from gie.sources.molecules import MoleculeSource, load_smiles_csv
from gie.sources.social import load_node_link, load_snap_edgelist


@dataclass(frozen=True)
class PaperSource:
    replaces: tuple[str, ...]  # built-in substitutes it stands in for
    scenario: Scenario
    formats: str  # what PATH may be, for help and errors


_SOCIAL_SLOTS = ("karate", "davis", "florentine", "les-miserables")
PAPER_SOURCES: dict[str, PaperSource] = {
    "dblp": PaperSource(("wikidata-costar",), "collaborations", "SNAP edge list or node-link JSON"),
    **{
        name: PaperSource(_SOCIAL_SLOTS, "friendships", "SNAP edge list or node-link JSON")
        for name in ("digg", "flixster", "lastfm", "pokec")
    },
    "dbpedia": PaperSource(("wikidata-film-kg",), "knowledge",
                           "N-Triples / tab-separated triples, SNAP edge list or node-link JSON"),
    "openflights": PaperSource(("us-airports",), "flights",
                               "a folder holding airports.dat and routes.dat, or 'AIRPORTS.dat,ROUTES.dat'"),
    **{name: PaperSource(("nci-molecules",), "molecules", "SMILES CSV") for name in ("pubchemqc", "pcqm4mv2")},
}
USER_SOURCES_ENV = "GIE_USER_SOURCES"
_user: dict[str, Source | MoleculeSource] = {}  # substitute name -> loaded user source
_user_spec: dict[str, str] = {}  # NAME -> PATH as given, the identity of what _user holds
_user_files: dict[str, dict[str, str]] = {}  # NAME -> {file name: sha256}


def file_sha256(path: str | Path) -> str:
    try:
        st = Path(path).stat()
    except OSError as e:
        raise SourceFileError(f"{path}:0: cannot read ({e.strerror})") from None
    return _sha256_of(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _sha256_of(path: str, mtime_ns: int, size: int) -> str:
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise SourceFileError(f"{path}:0: cannot read ({e.strerror})") from None
    return h.hexdigest()


def _openflights_files(path: str) -> tuple[Path, Path]:
    if "," in path:
        a, r = (Path(x.strip()) for x in path.split(",", 1))
        return a, r
    folder = Path(path)
    return folder / "airports.dat", folder / "routes.dat"


def user_source_files(name: str, path: str) -> list[Path]:
    """The file(s) behind `--source NAME=PATH`."""
    if name == "openflights" or (name == "us-airports" and ("," in path or Path(path).is_dir())):
        return list(_openflights_files(path))
    return [Path(path)]


def _scenario_of(name: str) -> Scenario:
    if name in PAPER_SOURCES:
        return PAPER_SOURCES[name].scenario
    src_fn = WALK_SOURCES.get(name)
    if src_fn is None:
        return "molecules"
    return {"us-airports": "flights", "wikidata-costar": "collaborations", "wikidata-film-kg": "knowledge"}.get(
        name, "friendships")


def load_user_source(name: str, path: str) -> Source | MoleculeSource:
    """Load `--source NAME=PATH`: a paper source name (PAPER_SOURCES) or a substitute's own name."""
    if name not in PAPER_SOURCES and name not in WALK_SOURCES and name not in MOLECULE_SOURCES:
        known = ", ".join([*PAPER_SOURCES, *WALK_SOURCES, *MOLECULE_SOURCES])
        raise SourceFileError(f"{path}:0: unknown source name {name!r}; known: {known}")
    files = user_source_files(name, path)
    hashes = ", ".join(f"{f.name} sha256 {file_sha256(f)}" for f in files)
    licence = f"user copy for {name} ({hashes}); licence as given by its provider"
    scenario = _scenario_of(name)
    suffix = Path(path).suffix.lower() if len(files) == 1 else ""
    src: Source | MoleculeSource
    if len(files) == 2:
        src = load_openflights(*files, licence=licence)
    elif scenario == "molecules":
        src = load_smiles_csv(path, licence=licence)
    elif suffix == ".json":
        src = load_node_link(path, scenario=scenario, licence=licence)
    elif scenario == "knowledge" and suffix in (".nt", ".tsv", ".ttl"):
        src = load_triples(path, licence=licence)
    elif scenario == "flights":
        raise SourceFileError(f"{path}:0: {name} needs OpenFlights airports.dat and routes.dat "
                              f"({PAPER_SOURCES['openflights'].formats})")
    else:
        src = load_snap_edgelist(path, scenario=scenario, licence=licence)
    src.name = name
    if isinstance(src, Source) and src.scenario != scenario:
        src.scenario = scenario
    return src


def use_user_sources(spec: dict[str, str] | None) -> dict[str, dict[str, str]]:
    """Load and install user copies (NAME -> PATH); {} or None restores the bundled substitutes.

    Every file is read now, so a malformed line fails before any generation, with one line naming file
    and line. The spec also goes to the environment (GIE_USER_SOURCES) so worker processes install the
    same copies. Returns {NAME: {file name: sha256}} for the dataset manifest.
    """
    import json
    import os

    spec = dict(sorted((spec or {}).items()))
    loaded: dict[str, Source | MoleculeSource] = {}
    files: dict[str, dict[str, str]] = {}
    social: list[Source | MoleculeSource] = []
    for name, path in spec.items():
        src = load_user_source(name, path)
        files[name] = {f.name: file_sha256(f) for f in user_source_files(name, path)}
        if name in PAPER_SOURCES and PAPER_SOURCES[name].replaces == _SOCIAL_SLOTS:
            social.append(src)
        else:
            for slot in PAPER_SOURCES[name].replaces if name in PAPER_SOURCES else (name,):
                loaded[slot] = src
    # The paper's four social networks share the four bundled social graphs' slots, in turn.
    for i, slot in enumerate(_SOCIAL_SLOTS if social else ()):
        loaded.setdefault(slot, social[i % len(social)])
    _user.clear()
    _user.update(loaded)
    _user_files.clear()
    _user_files.update(files)
    _user_spec.clear()
    _user_spec.update(spec)
    if spec:
        os.environ[USER_SOURCES_ENV] = json.dumps(spec, sort_keys=True)
    else:
        os.environ.pop(USER_SOURCES_ENV, None)
    return files


def user_sources() -> dict[str, str]:
    """The NAME -> PATH spec currently installed (after syncing with the environment)."""
    _sync_env()
    return dict(_user_spec)


def user_sources_identity() -> dict[str, object]:
    """What the installed copies are: the NAME -> PATH spec and each file's sha256 at load time (a copy
    edited in place keeps its path but not its hash)."""
    _sync_env()
    return {"spec": dict(_user_spec), "files": {k: dict(v) for k, v in _user_files.items()}}


def replacements(names: Iterable[str]) -> dict[str, dict[str, object]]:
    """For the built-in names among `names` that a user copy replaces: {name: {"source": NAME,
    "files": {file name: sha256}}}; recorded in the dataset manifest so a user copy changes its identity."""
    _sync_env()
    out: dict[str, dict[str, object]] = {}
    for n in names:
        src = _user.get(n)
        if src is not None:
            out[n] = {"source": src.name, "files": dict(_user_files.get(src.name, {}))}
    return out


def _sync_env() -> None:
    import json
    import os

    raw = os.environ.get(USER_SOURCES_ENV)
    want = json.loads(raw) if raw else {}
    if want != _user_spec:
        use_user_sources(want)


def user_replacement(name: str) -> Source | MoleculeSource | None:
    _sync_env()
    return _user.get(name)
