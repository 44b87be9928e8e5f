"""GraphVerse graph sources, user-file loaders, labels and the random walk with restart."""

from __future__ import annotations

import random
import re
from pathlib import Path

import networkx as nx
import pytest

from gie import graphs, sample
from gie.catalogue import LEVEL_RANGES
from gie.sources import films, flights, molecules, registry, social
from gie.sources.base import SourceFileError


def test_builtin_sources_load_with_sane_counts_and_licences():
    air = flights.us_airports()
    assert 300 <= air.number_of_nodes() <= 400 and air.number_of_edges() > 2500
    assert "Public domain" in air.licence
    assert air.codes["ATL"] == "ATL"
    # great-circle km: Atlanta - Chicago O'Hare is about 975 km
    assert 940 <= air.weight("ATL", "ORD") <= 1010

    costar = films.wikidata_costar()
    assert costar.number_of_nodes() > 40_000 and "CC0" in costar.licence
    kg = films.wikidata_film_kg()
    assert kg.number_of_nodes() > 30_000 and kg.scenario == "knowledge"
    assert "genre:Drama" in kg.adjacency

    mols = molecules.nci_molecules()
    assert len(mols.molecules) > 2000 and "public domain" in mols.licence
    assert all(2 <= m.size <= molecules.MAX_MOLECULE_ATOMS for m in mols.molecules)
    assert all(nx.is_connected(m.graph()) for m in mols.molecules[:200])

    sizes = {"karate": (34, 78), "davis": (32, 89), "florentine": (15, 20), "les-miserables": (77, 254)}
    for name, (n, m) in sizes.items():
        src = social.social(name)
        assert (src.number_of_nodes(), src.number_of_edges()) == (n, m)
        assert src.licence and src.scenario == "friendships"


def test_smiles_atom_count_matches_rdkit():
    mols = molecules.nci_molecules().molecules
    assert all(molecules.smiles_atom_count(m.smiles) == m.size for m in mols[:300])


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("1 2\n3 4\n5\n", ":3: expected 'u v'"),
        ("# c\n1 2 3 4\n", ":2: expected 'u v'"),
    ],
)
def test_snap_loader_names_file_and_line(tmp_path: Path, content: str, fragment: str):
    p = tmp_path / "edges.txt"
    p.write_text(content)
    with pytest.raises(SourceFileError) as e:
        social.load_snap_edgelist(p)
    msg = str(e.value)
    assert msg.startswith(str(p)) and fragment in msg and "\n" not in msg


def test_snap_loader_reads_good_file(tmp_path: Path):
    p = tmp_path / "edges.txt"
    p.write_text("# SNAP\n% also a comment\n1\t2\n2 3\n3 1 7\n")
    src = social.load_snap_edgelist(p, licence="CC-BY")
    assert src.number_of_edges() == 3 and src.licence == "CC-BY"


AIRPORT = '{id},"Name {id}","City","Country","{iata}","K{iata}",{lat},{lon},100,-5,"A","America/New_York","airport","OurAirports"'
ROUTE = 'AA,24,{a},{ia},{b},{ib},,0,738'


def _openflights(tmp_path: Path, bad_airport: str | None = None, bad_route: str | None = None) -> tuple[Path, Path]:
    ap = [AIRPORT.format(id=i, iata=c, lat=30 + i, lon=-90 - i) for i, c in enumerate(["AAA", "BBB", "CCC"], 1)]
    ap.append(AIRPORT.format(id=4, iata="\\N", lat=1, lon=1))  # no IATA code: skipped, not an error
    if bad_airport:
        ap.append(bad_airport)
    rt = [ROUTE.format(a="AAA", ia=1, b="BBB", ib=2), ROUTE.format(a="BBB", ia=2, b="CCC", ib=3)]
    if bad_route:
        rt.append(bad_route)
    a, r = tmp_path / "airports.dat", tmp_path / "routes.dat"
    a.write_text("\n".join(ap) + "\n")
    r.write_text("\n".join(rt) + "\n")
    return a, r


def test_openflights_loader(tmp_path: Path):
    a, r = _openflights(tmp_path)
    src = flights.load_openflights(a, r)
    assert sorted(src.adjacency) == ["AAA", "BBB", "CCC"]
    g = src.induced(["AAA", "BBB", "CCC"])
    assert g.edges["AAA", "BBB"]["weight"] > 100

    a, r = _openflights(tmp_path, bad_airport='9,"X","Y"')
    with pytest.raises(SourceFileError, match=r"airports\.dat:5: expected 14"):
        flights.load_openflights(a, r)
    a, r = _openflights(tmp_path, bad_airport=AIRPORT.format(id=9, iata="DDD", lat="north", lon=1))
    with pytest.raises(SourceFileError, match=r"airports\.dat:5: latitude/longitude"):
        flights.load_openflights(a, r)
    a, r = _openflights(tmp_path, bad_route="AA,24,AAA")
    with pytest.raises(SourceFileError, match=r"routes\.dat:3: expected 9"):
        flights.load_openflights(a, r)


def test_triples_loader(tmp_path: Path):
    p = tmp_path / "t.nt"
    p.write_text(
        "<http://dbpedia.org/resource/Alan_Turing> <http://dbpedia.org/ontology/field> "
        "<http://dbpedia.org/resource/Logic> .\n"
        '<http://dbpedia.org/resource/Alan_Turing> <http://xmlns.com/foaf/0.1/name> "Alan"@en .\n'
        "Logic\tpartOf\tMathematics\n"
    )
    src = films.load_triples(p)
    assert src.names["http://dbpedia.org/resource/Alan_Turing"] == "Alan Turing"
    assert src.number_of_edges() == 2  # the literal object is no link
    p.write_text("<a> <b> <c> .\n<a> <b>\n")
    with pytest.raises(SourceFileError, match=r"t\.nt:2: not an N-Triples line"):
        films.load_triples(p)
    p.write_text("a\tb\tc\na\tb\n")
    with pytest.raises(SourceFileError, match=r"t\.nt:2: expected 3 tab-separated"):
        films.load_triples(p)


def test_smiles_csv_loader(tmp_path: Path):
    p = tmp_path / "m.csv"
    p.write_text("id,smiles\nethanol,CCO\nbenzene,c1ccccc1\n")
    src = molecules.load_smiles_csv(p)
    assert [m.mol_id for m in src.molecules] == ["ethanol", "benzene"]
    assert src.molecules[1].elements == ("C",) * 6
    p.write_text("id,smiles\nok,CCO\nbad,C1CC(\n")
    with pytest.raises(SourceFileError, match=r"m\.csv:3: RDKit cannot parse"):
        molecules.load_smiles_csv(p)
    p.write_text("id,smiles\nok,CCO,extra\n")
    with pytest.raises(SourceFileError, match=r"m\.csv:2: expected 2 fields"):
        molecules.load_smiles_csv(p)
    p.write_text("name,formula\nx,CCO\n")
    with pytest.raises(SourceFileError, match=r"m\.csv:1: header has no 'smiles'"):
        molecules.load_smiles_csv(p)


def test_labels_are_unique_codes_and_deterministic():
    names = {f"id{i}": n for i, n in enumerate(
        ["Tom Hanks", "Tom Hardy", "Tim Hanks", "Tom Hanks", "Chloë Grace Moretz", "MlleBaptistine", "E1", "X"]
    )}
    a = graphs.make_labels(names, {"id6": "E01"})
    assert a == graphs.make_labels(dict(reversed(list(names.items()))), {"id6": "E01"})
    assert len(set(a.values())) == len(a)
    assert a["id6"] == "E01" and a["id4"] == "CGM" and a["id5"] == "MBA"
    assert all(re.fullmatch(r"[A-Z0-9]{3}", c) for c in a.values())
    mol = graphs.molecule_labels({"m:0": "C", "m:1": "O", "m:2": "C", "m:10": "Cl"})
    assert mol == {"m:0": "C1", "m:1": "O1", "m:2": "C2", "m:10": "Cl1"}


def test_node_link_round_trip_is_sorted_and_stable():
    g = nx.Graph()
    g.add_edge("ZZZ", "AAA", weight=5)
    g.add_node("MMM", color="rose")
    g.add_edge("MMM", "AAA", weight=2)
    nl = graphs.to_node_link(g)
    assert [n["id"] for n in nl["nodes"]] == ["AAA", "MMM", "ZZZ"]
    assert [(e["source"], e["target"]) for e in nl["edges"]] == [("AAA", "MMM"), ("AAA", "ZZZ")]
    h = graphs.from_node_link(nl)
    assert nx.utils.graphs_equal(g, h)
    assert nx.utils.graphs_equal(h, nx.node_link_graph(nl, edges="edges"))


@pytest.mark.parametrize("name", ["us-airports", "wikidata-costar", "wikidata-film-kg", "les-miserables"])
def test_rwr_is_deterministic_connected_and_in_range(name: str):
    src = registry.get_source(name)
    rng_range = LEVEL_RANGES["DIAM"]["easy"]
    a = [sorted(sample.sample_subgraph(src, rng_range, random.Random(s)).edges()) for s in range(5)]
    b = [sorted(sample.sample_subgraph(src, rng_range, random.Random(s)).edges()) for s in range(5)]
    assert a == b
    for s in range(5):
        g = sample.sample_subgraph(src, rng_range, random.Random(s))
        assert nx.is_connected(g) and min(d for _, d in g.degree()) >= 1
        assert rng_range.lo <= g.number_of_nodes() <= rng_range.hi
        assert g.number_of_edges() <= rng_range.max_edges(g.number_of_nodes())


def test_rwr_visits_start_most_and_keeps_top_k():
    src = social.social("karate")
    visits = sample.random_walk_with_restart(src, "member 1", random.Random(3))
    assert visits[0][0] == "member 1"  # restarts make the start the most visited node
    counts = [c for _, c in visits]
    assert counts == sorted(counts, reverse=True) and sum(counts) == sample.WALK_STEPS + 1
    assert sample.rwr_nodes(src, 5, random.Random(3), start="member 1") == [n for n, _ in visits[:5]]


def test_molecules_sampled_whole_within_range():
    src = molecules.nci_molecules()
    r = LEVEL_RANGES["GED"]["easy"]
    for s in range(10):
        m = sample.sample_molecule(src, r, random.Random(s))
        assert r.lo <= m.size <= r.hi
