"""The improvement tables' comparison spec (``gie.comparisons``), where the command line and notebooks import it
from: which arm (model, prompt mode) is the baseline of which."""

from gie.comparisons import (
    DIRECT_MODE,
    Arm,
    ComparisonError,
    Comparisons,
    auto_comparisons,
    missing_arms,
    parse_comparisons,
)

__all__ = ["DIRECT_MODE", "Arm", "ComparisonError", "Comparisons", "auto_comparisons", "missing_arms",
           "parse_comparisons"]
