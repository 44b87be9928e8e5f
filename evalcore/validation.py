"""The one line a pydantic validation error becomes: where (the field's dotted path) and what is wrong.

Every boundary (config files, registry, model options, dataset manifests, `grade` input, the explorer's
forms) reports the first problem only: one clear line naming the field, not pydantic's multi-line dump."""

from __future__ import annotations

from pydantic import ValidationError


def first_error(e: ValidationError, where: str = "") -> tuple[str, str]:
    """(dotted location, message) of the first problem; `where` stands for an empty location (a problem with
    the whole object)."""
    errors = e.errors()
    if not errors:
        return where, str(e).splitlines()[0] if str(e) else "invalid"
    err = errors[0]
    return ".".join(str(p) for p in err.get("loc", ())) or where, str(err.get("msg", "invalid"))
