"""NPHardEval4V and GraphVerse evaluation on Ray."""

__version__ = "0.1.0"
