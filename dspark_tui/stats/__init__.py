"""Statistics shared by every layer: descriptive statistics of a sample (numpy's definitions)
and paired comparisons of arms with intervals and verdicts. Depends on numpy/scipy only."""
