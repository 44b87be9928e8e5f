"""Shared core: schema, task contract, prompting, extraction, drawing, I/O. Imports no runtime."""
