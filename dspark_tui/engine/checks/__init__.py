"""Checks before a run spends GPU hours: preflight, the disk budget, the run directory's setup."""
