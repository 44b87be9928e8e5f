"""The improvement tables (GraphVerse Tables 3 / 8, 11, 13): titles and notes for the HTML page's template and the
Markdown summary."""

from __future__ import annotations

from gie.improvement_tables import CATEGORIES

# (name in Tables.improvement, title, note) in the paper's order
TITLES: tuple[tuple[str, str, str], ...] = (
    ("table3", "Table 3: Acc (%) by task category, improvement over direct inference",
     "Each cell: Acc [95% Wilson interval] and, for a method, ↑ (↓) its absolute improvement over the direct "
     "inference of the same base model [95% paired bootstrap interval over instances]."),
    ("table8", "Table 8: VGR-S by task category, improvement over direct inference",
     "Each cell: VGR-S (default judge) [95% bootstrap interval] and ↑ (↓) the absolute improvement over direct "
     "inference [95% paired bootstrap interval]; — where the judge has not scored the samples."),
    ("table11", "Table 11: one GIE type at a time",
     "A model trained with one edit type's data against the same training without GIE, over all tasks: value "
     "[95% interval], ↑ absolute improvement [95% paired bootstrap interval] (relative gain in %)."),
    ("table13", "Table 13: visual access vs MLLM description → LLM",
     "The description baseline answers from an MLLM's description of the images (a caption-chain model); the "
     "visual model's cells show in parentheses its improvement over that baseline [95% paired bootstrap "
     "interval], over all tasks."),
)
LONG = {"table3": "improvement", "table8": "improvement", "table11": "gie_ablation", "table13": "description"}
HOW = ("Tables 3 / 8 compare each model's other prompt modes (PoT) with its direct inference by default; "
       "fine-tuned checkpoints, Table 11 and Table 13 need a spec: <code>nphe4v report RUN... --comparisons "
       "comparisons.yaml</code> (docs/report.md).")


def categories_note() -> str:
    return "Categories: " + "; ".join(f"{k} = {', '.join(v)}" for k, v in CATEGORIES.items()) + "; All = every task."
