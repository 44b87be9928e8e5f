"""The report of both benchmarks: tables with intervals, the HTML / Markdown report, figures, run summaries,
the §5.3 failure analysis, and the local explorer.

Layer: above the benchmarks (``nphe4v``, ``gie``, ``judge``) and their core, below ``cluster`` and the entry
points. It reads run folders and imports nothing from ``cluster``; what only the cluster knows (the model
registry's access and family of each model) the caller passes in (``report.model_groups.ModelCatalogue``).
"""
