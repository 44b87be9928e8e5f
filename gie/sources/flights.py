"""Flights: the bundled US airports and routes (great-circle km on the edges), and the OpenFlights
file loader for the paper's own source."""

from __future__ import annotations

import csv
import gzip
import math
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from gie.sources.base import (
    Source,
    SourceFileError,
    adjacency_from_edges,
    bokeh_data,
    csv_rows,
    largest_component,
    user_licence,
)

LICENCE_AIRPORTS = (
    "Public domain: airport records from OurAirports, routes from US DOT BTS On-Time Performance "
    "(July 2026), as packaged by bokeh-sampledata (loader BSD-3-Clause)"
)


EARTH_RADIUS_KM = 6371.0088


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> int:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return max(1, round(2 * EARTH_RADIUS_KM * math.asin(math.sqrt(a))))


def _flight_source(
    name: str,
    licence: str,
    airports: dict[str, tuple[str, float, float]],
    routes: Iterable[tuple[str, str]],
) -> Source:
    """airports: IATA -> (name, lat, lon); routes between IATA codes (direction dropped)."""
    adj = largest_component(
        adjacency_from_edges([], ((u, v) for u, v in routes if u in airports and v in airports))
    )

    def weight(u: str, v: str) -> int:
        _, la, lo = airports[u]
        _, lb, lob = airports[v]
        return haversine_km(la, lo, lb, lob)

    return Source(
        name=name,
        scenario="flights",
        licence=licence,
        description="airports joined by a direct scheduled route; edge labels are great-circle distances in km",
        adjacency=adj,
        names={k: airports[k][0] for k in adj},
        codes={k: k for k in adj},
        weight=weight,
    )


@lru_cache(maxsize=1)
def us_airports() -> Source:
    airports: dict[str, tuple[str, float, float]] = {}
    with open(bokeh_data("airports.csv"), newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            code = row["IATA"].strip()
            if re.fullmatch(r"[A-Z0-9]{3}", code):
                airports[code] = (row["Name"], float(row["Latitude"]), float(row["Longitude"]))
    with gzip.open(bokeh_data("routes.csv.gz"), "rt", encoding="utf-8", newline="") as f:
        routes = [(r["Source"], r["Destination"]) for r in csv.DictReader(f)]
    return _flight_source("us-airports", LICENCE_AIRPORTS, airports, routes)


def load_openflights(airports_path: str | Path, routes_path: str | Path, *, licence: str = "") -> Source:
    """OpenFlights `airports.dat` (14 comma-separated quoted fields, `\\N` for null) and `routes.dat`
    (9 fields). Airports without an IATA code and routes touching them are skipped, as OpenFlights
    itself leaves many unresolved; malformed lines are errors."""
    airports: dict[str, tuple[str, float, float]] = {}
    for lineno, row in csv_rows(airports_path):
        if len(row) != 14:
            raise SourceFileError(f"{airports_path}:{lineno}: expected 14 comma-separated fields "
                                  f"(OpenFlights airports.dat), found {len(row)}")
        code = row[4].strip()
        try:
            lat, lon = float(row[6]), float(row[7])
        except ValueError:
            raise SourceFileError(f"{airports_path}:{lineno}: latitude/longitude {row[6]!r}, {row[7]!r} "
                                  "are not numbers") from None
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise SourceFileError(f"{airports_path}:{lineno}: latitude/longitude {lat}, {lon} out of range")
        if re.fullmatch(r"[A-Z0-9]{3}", code):
            airports[code] = (row[1], lat, lon)
    routes = []
    for lineno, row in csv_rows(routes_path):
        if len(row) != 9:
            raise SourceFileError(f"{routes_path}:{lineno}: expected 9 comma-separated fields "
                                  f"(OpenFlights routes.dat), found {len(row)}")
        routes.append((row[2].strip(), row[4].strip()))
    src = _flight_source(f"openflights:{Path(airports_path).name}", licence or user_licence(airports_path),
                         airports, routes)
    if not src.adjacency:
        raise SourceFileError(f"{routes_path}:1: no route joins two airports of {airports_path}")
    return src
