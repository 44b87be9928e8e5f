"""User copies of the paper's sources: `--source NAME=PATH` / `generate: {sources: {NAME: PATH}}`.

Small fixture files in each usual format are written here (SNAP edge list, OpenFlights airports.dat +
routes.dat, a SMILES CSV, node-link JSON); each replaces its bundled substitute, instances are drawn from
it, a malformed line fails with one error naming file and line, and the dataset's identity changes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest
from typer.testing import CliRunner

from gie.sources import user_copies
from gie.sources.base import SourceFileError
from gie.sources.registry import get_source
from gie.sources.user_copies import use_user_sources

runner = CliRunner()


@pytest.fixture(autouse=True)
def _restore_builtin_sources() -> Iterator[None]:
    yield
    use_user_sources({})


def _graph(n: int, seed: int) -> nx.Graph:
    # connected, sparse, a few triangles: walkable like a real social or co-authorship graph
    g = nx.connected_watts_strogatz_graph(n, 4, 0.3, seed=seed)
    return g


def write_snap(path: Path, n: int = 120, seed: int = 1) -> Path:
    lines = ["# SNAP-style fixture: undirected co-authorship", "# FromNodeId\tToNodeId"]
    lines += [f"{u + 1000}\t{v + 1000}" for u, v in sorted(_graph(n, seed).edges)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_node_link(path: Path, n: int = 120, seed: int = 2) -> Path:
    g = nx.relabel_nodes(_graph(n, seed), {i: f"user{i}" for i in range(n)})
    for v in g:
        g.nodes[v]["name"] = f"User Number {v[4:]}"
    path.write_text(json.dumps(nx.node_link_data(g, edges="links"), indent=1, sort_keys=True))
    return path


def _iata(i: int) -> str:
    return "".join(chr(ord("A") + (i // 26**k) % 26) for k in (2, 1, 0))


def write_openflights(folder: Path, n: int = 90, seed: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        lat, lon = rng.uniform(-50, 60), rng.uniform(-120, 140)
        rows.append(f'{i + 1},"Airport {i}","City {i}","Country","{_iata(i + 30)}","K{_iata(i + 30)}",'
                    f'{lat:.4f},{lon:.4f},100,0,"U","Etc/UTC","airport","OurAirports"')
    rows.append('9999,"No Code","Nowhere","Country",\\N,"ZZZZ",1.0,2.0,0,0,"U","Etc/UTC","airport","OurAirports"')
    (folder / "airports.dat").write_text("\n".join(rows) + "\n")
    g = _graph(n, seed)
    routes = [f'XX,1,{_iata(u + 30)},{u + 1},{_iata(v + 30)},{v + 1},,0,738' for u, v in sorted(g.edges)]
    (folder / "routes.dat").write_text("\n".join(routes) + "\n")
    return folder


def write_smiles(path: Path) -> Path:
    rows = ["id,smiles"]
    k = 0
    for n in range(4, 21):
        for smi in ("C" * n, "C" * (n - 1) + "O", "N" + "C" * (n - 1), "C1" + "C" * (n - 2) + "C1",
                    "OC1" + "C" * (n - 3) + "C1"):
            rows.append(f"mol{k},{smi}")
            k += 1
    path.write_text("\n".join(rows) + "\n")
    return path


# --------------------------------------------------------------------------------------------- loading


def test_each_paper_source_replaces_its_substitute(tmp_path: Path) -> None:
    spec = {
        "dblp": str(write_snap(tmp_path / "dblp.txt")),
        "pokec": str(write_node_link(tmp_path / "pokec.json")),
        "lastfm": str(write_snap(tmp_path / "lastfm.tsv", seed=9)),
        "openflights": str(write_openflights(tmp_path / "of")),
        "pcqm4mv2": str(write_smiles(tmp_path / "pcqm.csv")),
    }
    files = use_user_sources(spec)
    assert set(files) == set(spec)
    assert set(files["openflights"]) == {"airports.dat", "routes.dat"}
    assert get_source("wikidata-costar").name == "dblp"
    assert get_source("us-airports").name == "openflights"
    assert get_source("nci-molecules").name == "pcqm4mv2"
    # the two social copies share the four social slots in turn
    assert [get_source(s).name for s in ("karate", "davis", "florentine", "les-miserables")] == [
        "lastfm", "pokec", "lastfm", "pokec"]
    assert get_source("wikidata-film-kg").name == "wikidata-film-kg"  # not replaced
    flights = get_source("us-airports")
    assert flights.number_of_nodes() == 90 and flights.weight is not None  # the code-less airport is dropped
    assert "sha256 " + user_copies.file_sha256(spec["dblp"]) in get_source("wikidata-costar").licence
    # restoring gives the bundled substitutes back
    use_user_sources({})
    assert get_source("wikidata-costar").name == "wikidata-costar"


def test_worker_processes_pick_the_copies_up_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    path = str(write_snap(tmp_path / "dblp.txt"))
    use_user_sources({"dblp": path})
    env = json.loads(__import__("os").environ[user_copies.USER_SOURCES_ENV])
    assert env == {"dblp": path}
    # a fresh process starts with empty module state but the inherited environment
    user_copies._user.clear()
    user_copies._user_spec.clear()
    assert get_source("wikidata-costar").name == "dblp"


@pytest.mark.parametrize(
    ("name", "filename", "content", "where"),
    [
        ("dblp", "d.txt", "1 2\n2 3\n3 4 5 6\n", "d.txt:3:"),
        ("digg", "g.json", '{"nodes": [{"id": 1},\n {"id": 2}],\n "links": [{"source": 1}]}', "g.json:3:"),
        ("digg", "h.json", '{"nodes": [{"id": 1},\n {"id": 2}\n "links": []}', "h.json:3:"),
        ("pubchemqc", "m.csv", "id,smiles\na,CCO\nb,C1CC\n", "m.csv:3:"),
        ("dbpedia", "k.nt", "<a> <p> <b> .\n<a> <p>\n", "k.nt:2:"),
    ],
)
def test_a_malformed_line_names_file_and_line(tmp_path: Path, name: str, filename: str, content: str,
                                              where: str) -> None:
    p = tmp_path / filename
    p.write_text(content)
    with pytest.raises(SourceFileError) as e:
        use_user_sources({name: str(p)})
    msg = str(e.value)
    assert where in msg and "\n" not in msg, msg


def test_openflights_malformed_route_line(tmp_path: Path) -> None:
    folder = write_openflights(tmp_path / "of")
    with open(folder / "routes.dat", "a") as f:
        f.write("XX,1,AAA,1\n")
    lines = (folder / "routes.dat").read_text().count("\n")
    with pytest.raises(SourceFileError, match=rf"routes\.dat:{lines}: expected 9"):
        use_user_sources({"openflights": str(folder)})
    with pytest.raises(SourceFileError, match="unknown source name 'twitter'"):
        use_user_sources({"twitter": str(folder)})


# --------------------------------------------------------------------------------------------- instances


def test_instances_come_from_the_user_copies(tmp_path: Path) -> None:
    from gie.tasks import get_config, get_task
    from gie.tasks.construction import build_data

    folder = write_openflights(tmp_path / "of")
    use_user_sources({"openflights": str(folder), "pubchemqc": str(write_smiles(tmp_path / "m.csv"))})
    airports = {_iata(i + 30) for i in range(90)}
    data = build_data(get_config("SD"), "none", random.Random(1))
    assert data.source.name == "openflights" and "sha256" in data.source.licence
    assert set(data.source.node_ids) <= airports and set(data.source.labels) <= airports
    text = get_task("SD").text(data)
    assert "OpenFlights" in text.intro
    gold = get_task("SD").solve(data)
    g = data.asked_graphs()[0]
    assert gold.value == nx.shortest_path_length(g, data.query["source"], data.query["target"], weight="weight")
    pair = build_data(get_config("GED"), "none", random.Random(2), paired_mode="one")
    assert pair.source.name == "pubchemqc" and all(i.startswith("mol") for i in pair.source.node_ids)
    assert "PubChemQC" in get_task("GED").text(pair).intro


def test_a_user_source_changes_the_dataset_identity(tmp_path: Path) -> None:
    from evalcore.dataset import load_dataset
    from gie.dataset import generate_split

    base = generate_split(tmp_path / "base", "testmini", 0, limit=1, workers=0)
    folder = write_openflights(tmp_path / "of")
    use_user_sources({"openflights": str(folder)})
    mine = generate_split(tmp_path / "mine", "testmini", 0, limit=1, workers=0)
    assert base.dataset_sha256 != mine.dataset_sha256
    recorded = load_dataset(tmp_path / "mine").manifest.extra["sources"]
    for f in ("airports.dat", "routes.dat"):
        assert f"{f} sha256 {user_copies.file_sha256(folder / f)}" in recorded["openflights"]
    # the same copies give the same bytes again
    again = generate_split(tmp_path / "again", "testmini", 0, limit=1, workers=0)
    assert again.dataset_sha256 == mine.dataset_sha256
    # another copy (one route fewer) gives another dataset
    routes = (folder / "routes.dat").read_text().splitlines()
    (folder / "routes.dat").write_text("\n".join(routes[:-1]) + "\n")
    use_user_sources({"openflights": str(folder)})
    other = generate_split(tmp_path / "other", "testmini", 0, limit=1, workers=0)
    assert other.dataset_sha256 != mine.dataset_sha256


# --------------------------------------------------------------------------------------------- cli, config


@pytest.mark.slow(reason="nphe4v generate in subprocesses, four generations with and without user sources")
def test_cli_source_flag(tmp_path: Path) -> None:
    from evalcore.dataset import load_dataset
    from nphe4v_cli.app import app

    folder = write_openflights(tmp_path / "of")
    r = runner.invoke(app, ["generate", "--benchmark", "graphverse", "--split", "testmini", "--limit", "1",
                            "--workers", "1", "--source", f"openflights={folder}", "--out", str(tmp_path / "d")])
    assert r.exit_code == 0, r.output
    ds = load_dataset(tmp_path / "d")
    assert set(ds.manifest.extra["sources"]) == {"openflights"}
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\nnot-a-pair\n")
    r = runner.invoke(app, ["generate", "--benchmark", "graphverse", "--limit", "1", "--source", f"dblp={bad}",
                            "--out", str(tmp_path / "e")])
    assert r.exit_code == 2 and "bad.txt:2:" in r.output
    r = runner.invoke(app, ["generate", "--benchmark", "graphverse", "--source", "dblp", "--out", str(tmp_path / "f")])
    assert r.exit_code == 2 and "NAME=PATH" in r.output
    r = runner.invoke(app, ["generate", "--source", f"dblp={bad}", "--out", str(tmp_path / "g")])
    assert r.exit_code == 2 and "--source is not used by --benchmark nphardeval4v" in r.output


def test_config_sources_field(tmp_path: Path) -> None:
    from cluster.config import ConfigError, DatasetSpec
    from cluster.run import resolve_dataset

    folder = write_openflights(tmp_path / "of")
    spec = DatasetSpec.model_validate({"benchmark": "graphverse", "generate": {
        "version": "graphverse-testmini", "limit": 1, "sources": {"openflights": str(folder)}}})
    assert spec.generate is not None and spec.generate.sources == {"openflights": str(folder)}
    ds = resolve_dataset(spec, tmp_path / "data")
    assert "-sources" in ds.root.name and set(ds.manifest.extra["sources"]) == {"openflights"}
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2 3 4\n")
    spec = DatasetSpec.model_validate({"benchmark": "graphverse", "generate": {
        "version": "graphverse-testmini", "limit": 1, "sources": {"dblp": str(bad)}}})
    with pytest.raises(ConfigError, match=r"generate\.sources: .*bad\.txt:1:"):
        resolve_dataset(spec, tmp_path / "data")
