"""Model backends: one async `generate(requests) -> responses` each (see base.ModelBackend)."""
