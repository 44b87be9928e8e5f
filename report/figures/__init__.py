"""Report figures as SVG and PNG from one tiny drawing model, no plotting library.

Each figure is a ``Canvas`` (``report.figures.canvas``) (rectangles, lines, polygons, circles, text) built from an ``report.analysis``
frame; ``Canvas.svg()`` writes it as SVG text and ``Canvas.png()`` rasterises the same items with Pillow and
its bundled font (the one text metrics are measured with), so both outputs are deterministic: the same frame
gives the same bytes. Figures follow the paper's shapes:

* ``radar`` — Figure 4: RA, ER and AA per complexity class, one radar per model group;
* ``heatmap`` — Figures 7 and 9: model x (task, level) cells of accuracy or recognition;
* ``ablation_bars`` — Figure 8: AA per prompt mode per model, with interval whiskers;
* ``lvlm_llm_bars`` — Figure 6: AA and ER per class, LVLMs on figure+limited_text vs text-only LLMs;
* ``failure_mode_bars`` — Figure 3: shares of failure modes among incorrect GraphVerse responses, stacked.
"""

from report.figures.bars import (
    FAILURE_MODE_COLORS,
    BarRow,
    ablation_bars,
    failure_mode_bars,
    hbars,
    lvlm_llm_bars,
)
from report.figures.canvas import (
    CLASS_COLORS,
    CLASS_NAMES,
    MODE_COLORS,
    PALETTE,
    Canvas,
    empty_figure,
    series_label,
    text_width,
)
from report.figures.heatmap import heatmap
from report.figures.radar import RADAR_AXES, default_groups, radar

__all__ = [
    "CLASS_COLORS", "CLASS_NAMES", "FAILURE_MODE_COLORS", "MODE_COLORS", "PALETTE", "RADAR_AXES", "BarRow",
    "Canvas", "ablation_bars", "default_groups", "empty_figure", "failure_mode_bars", "hbars",
    "heatmap", "lvlm_llm_bars", "radar", "series_label", "text_width",
]
