"""TSP / TSP-D pictures per level: layout and render time, and legibility measured on the drawn geometry.

    PYTHONPATH=. python bench/bench_tsp_pictures.py [instances_per_level]   (default 100)

"touched" is the share of distance labels whose box (text plus padding) is met by an edge it does not belong
to, widened by the stroke's half width, or overlaps another label; computed from `layout_cities`, the geometry
`render_cities` draws. Target (issue 19 item 3): <= 5 % at level 10. "table" is the share of pictures that
write the distances in a table under the map instead of on the edges.
"""

from __future__ import annotations

import random
import sys
import time

from evalcore.draw import segment_hits_box
from nphe4v.tasks import get_task
from nphe4v.tasks.tsp_common import LINE_HALF_WIDTH, CityDrawing, layout_cities


def touched_labels(d: CityDrawing) -> int:
    count = 0
    for k, (i, j, _, box) in enumerate(d.labels):
        grown = (box[0] - LINE_HALF_WIDTH, box[1] - LINE_HALF_WIDTH, box[2] + LINE_HALF_WIDTH, box[3] + LINE_HALF_WIDTH)
        hit = any(
            segment_hits_box(p, q, grown)
            for a, b, poly in d.edges
            if (a, b) != (i, j)
            for p, q in zip(poly, poly[1:], strict=False)
        )
        hit = hit or any(
            o[0] < box[2] and box[0] < o[2] and o[1] < box[3] and box[1] < o[3]
            for m, (_, _, _, o) in enumerate(d.labels)
            if m != k
        )
        count += hit
    return count


def main(per_level: int = 100) -> None:
    for name in ("TSP", "TSP-D"):
        spec = get_task(name)
        for level in range(1, 11):
            data = [spec.generate(level, random.Random(f"bench-{name}-{level}-{i}")) for i in range(per_level)]
            t0 = time.perf_counter()
            drawings = [layout_cities(d.distances, d.coords) for d in data]
            t1 = time.perf_counter()
            for d in data[:10]:
                spec.render(d)
            t2 = time.perf_counter()
            labels = sum(len(d.labels) for d in drawings)
            touched = sum(touched_labels(d) for d in drawings)
            table = sum(d.labels_on == "table" for d in drawings)
            sizes = [d.font_size for d in drawings]
            print(
                f"{name:5} L{level:02d} n={data[0].num_cities:2d}  layout {1000 * (t1 - t0) / per_level:6.1f} ms"
                f"  render {1000 * (t2 - t1) / min(per_level, 10):6.1f} ms  label px {min(sizes)}-{max(sizes)}"
                f"  touched {touched}/{labels} = {100 * touched / labels:.1f} %  table {table}/{per_level}",
                flush=True,
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
