"""The built-in sources by name: walkable graphs and molecule sets."""

from __future__ import annotations

from collections.abc import Callable

from gie.sources.base import Source
from gie.sources.films import wikidata_costar, wikidata_film_kg
from gie.sources.flights import us_airports
from gie.sources.molecules import MoleculeSource, nci_molecules
from gie.sources.social import social

WALK_SOURCES: dict[str, Callable[[], Source]] = {
    "us-airports": us_airports,
    "wikidata-costar": wikidata_costar,
    "wikidata-film-kg": wikidata_film_kg,
    "karate": lambda: social("karate"),
    "davis": lambda: social("davis"),
    "florentine": lambda: social("florentine"),
    "les-miserables": lambda: social("les-miserables"),
}
MOLECULE_SOURCES: dict[str, Callable[[], MoleculeSource]] = {"nci-molecules": nci_molecules}
