"""The one GraphVerse drawing style's measures: canvas widths, node radius, type sizes, strips, the TSP
distance table's cells. `gie.layout` places nodes by them, `gie.render` draws by them, `gie.legibility`
checks by them."""

from __future__ import annotations

import math

import networkx as nx

# 800 px keeps 20 px labels crisp while PNG encoding (the main cost of generating 11,000 instances)
# stays affordable; a 1024 px canvas costs 60% more pixels for no gain in legibility.
WIDTH = 800
MAX_DRAWING_HEIGHT = 800
MIN_HEIGHT = 360
MARGIN = 52
NODE_RADIUS = 25.0
LABEL_SIZE = 18
WEIGHT_SIZE = 17
CAPTION_H = 48
LEGEND_H = 44
EDGE_WIDTH = 3
Position = tuple[float, float]
RULE = (210, 210, 210)
PNG_COMPRESS_LEVEL = 1  # indexed drawings compress well even at 1; 6 costs 2.5x the time

MAX_WIDTH = 1400
# Hard levels (up to 50 nodes): the canvas grows like sqrt(n) so the area per node stays roughly that
# of a 16-node drawing on 800 px.
WIDTH_PER_SQRT_NODE = 200


def canvas_width(n: int) -> int:
    return int(min(MAX_WIDTH, max(WIDTH, round(WIDTH_PER_SQRT_NODE * math.sqrt(max(n, 1))))))


# Distance-table drawings (TSP).
TABLE_FONT = 15
TABLE_CELL_W = 50
TABLE_CELL_H = 24
TABLE_GAP = 24
CHORD_CLEARANCE = 10.0  # layout_defects flags a segment nearer than NODE_RADIUS + 8


def circle_radius(n: int) -> float:
    """Smallest circle on which no chord passes within NODE_RADIUS + CHORD_CLEARANCE of a foreign centre
    (the nearest chord to a city joins its two neighbours on the circle) and neighbours keep apart."""
    if n <= 3:
        return 3 * NODE_RADIUS
    sagitta = 1 - math.cos(2 * math.pi / n)
    spacing = 2 * math.sin(math.pi / n)
    return max((NODE_RADIUS + CHORD_CLEARANCE) / sagitta, (2 * NODE_RADIUS + 16) / spacing, 3 * NODE_RADIUS)


def table_size(n: int) -> tuple[int, int]:
    return (n + 1) * TABLE_CELL_W, (n + 1) * TABLE_CELL_H


def image_width(g: nx.Graph, *, distance_table: bool = False) -> int:
    n = g.number_of_nodes()
    if distance_table:
        need = max(2 * circle_radius(n) + 2 * NODE_RADIUS, table_size(n)[0]) + 2 * MARGIN
        return int(max(WIDTH, math.ceil(need)))
    return canvas_width(n)


# Where along its edge a weight box may sit, most preferred first (0.5 = the midpoint).
LABEL_TS = (0.5, 0.4, 0.6, 0.32, 0.68, 0.25, 0.75)
