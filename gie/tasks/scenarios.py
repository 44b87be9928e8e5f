"""What the question says the picture shows, per graph source: the scenario sentence and the nouns task
sentences use (airports and routes, actors and collaborations, atoms and bonds, ...)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Nouns:
    node: str
    nodes: str
    edge: str
    edges: str
    network: str


SCENARIO_TEXT: dict[str, tuple[str, Nouns]] = {
    # source name -> (what the picture shows, nouns used by task sentences)
    "us-airports": (
        "The picture shows part of the US domestic flight network: each circle is an airport labelled with "
        "its IATA code, and a line means there is a direct scheduled route between the two airports.",
        Nouns("airport", "airports", "route", "routes", "flight network"),
    ),
    "wikidata-costar": (
        "The picture shows a collaboration network of film actors taken from Wikidata: each circle is an "
        "actor, labelled with a three-letter code, and a line joins two actors who appeared together in at "
        "least two films.",
        Nouns("actor", "actors", "collaboration", "collaborations", "collaboration network"),
    ),
    "wikidata-film-kg": (
        "The picture shows part of a film knowledge graph taken from Wikidata: each circle is an entity (a "
        "film, a director or actor, a genre or a country), labelled with a three-letter code, and a line is "
        "a fact linking a film to its director, a lead actor, a genre or its country of origin.",
        Nouns("entity", "entities", "link", "links", "knowledge graph"),
    ),
    "karate": (
        "The picture shows the friendship network of a university karate club (Zachary's study): each "
        "circle is a member, labelled M01 to M34, and a line joins two members who were friends outside "
        "the club.",
        Nouns("member", "members", "friendship", "friendships", "friendship network"),
    ),
    "davis": (
        "The picture shows a social network from a 1930s study of a Southern town: circles are women "
        "(labelled with their initials) and social events (labelled E01 to E14), and a line joins a woman "
        "to an event she attended.",
        Nouns("node", "nodes", "tie", "ties", "social network"),
    ),
    "florentine": (
        "The picture shows the marriage network of Renaissance Florentine families: each circle is a "
        "family, labelled with a three-letter code, and a line is a marriage tie between two families.",
        Nouns("family", "families", "marriage tie", "marriage ties", "marriage network"),
    ),
    "les-miserables": (
        "The picture shows a social network of characters of Les Miserables: each circle is a character, "
        "labelled with a three-letter code, and a line joins two characters who appear together in a "
        "chapter.",
        Nouns("character", "characters", "tie", "ties", "social network"),
    ),
    "nci-molecules": (
        "The picture shows a molecule from the NCI compound database as a graph: each circle is an atom "
        "labelled with its element symbol and a number (C1, C2, O1, ...), and a line is a chemical bond "
        "(hydrogen atoms and bond orders are not shown).",
        Nouns("atom", "atoms", "bond", "bonds", "molecule"),
    ),
    # The paper's own sources, when the user supplies copies (gie.sources.user_copies.use_user_sources).
    "dblp": (
        "The picture shows part of the DBLP co-authorship network: each circle is an author, labelled with "
        "a three-letter code, and a line joins two authors who wrote a paper together.",
        Nouns("author", "authors", "co-authorship", "co-authorships", "co-authorship network"),
    ),
    **{
        name: (
            f"The picture shows part of the {title} social network: each circle is a user, labelled with a "
            "three-letter code, and a line joins two users who are connected on the platform.",
            Nouns("user", "users", "connection", "connections", "social network"),
        )
        for name, title in (("digg", "Digg"), ("flixster", "Flixster"), ("lastfm", "Last.fm"), ("pokec", "Pokec"))
    },
    "dbpedia": (
        "The picture shows part of the DBpedia knowledge graph: each circle is an entity, labelled with a "
        "three-letter code, and a line is a fact linking two entities.",
        Nouns("entity", "entities", "link", "links", "knowledge graph"),
    ),
    "openflights": (
        "The picture shows part of the world flight network from OpenFlights: each circle is an airport "
        "labelled with its IATA code, and a line means there is a direct scheduled route between the two "
        "airports.",
        Nouns("airport", "airports", "route", "routes", "flight network"),
    ),
    **{
        name: (
            f"The picture shows a molecule from {title} as a graph: each circle is an atom labelled with its "
            "element symbol and a number (C1, C2, O1, ...), and a line is a chemical bond (hydrogen atoms and "
            "bond orders are not shown).",
            Nouns("atom", "atoms", "bond", "bonds", "molecule"),
        )
        for name, title in (("pubchemqc", "PubChemQC"), ("pcqm4mv2", "PCQM4Mv2"))
    },
}
MOLECULE_DATABASES = {"nci-molecules": "the NCI compound database", "pubchemqc": "PubChemQC",
                      "pcqm4mv2": "PCQM4Mv2"}
WEIGHT_SENTENCE = "The red number on a line is the flight distance of that route in kilometres."
PAIRED_SCENARIO = (
    "The pictures show two molecules from the NCI compound database as graphs, Graph 1 and Graph 2 (each "
    "picture is captioned): each circle is an atom labelled with its element symbol and a number (C1, C2, "
    "O1, ...), and a line is a chemical bond (hydrogen atoms and bond orders are not shown). The labels of "
    "the two molecules are independent of each other."
)
GENERIC_SCENARIO = (
    "The picture shows a network: each circle is a node labelled with a short code, and a line is an edge "
    "between two nodes.",
    Nouns("node", "nodes", "edge", "edges", "network"),
)
