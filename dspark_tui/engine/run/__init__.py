"""The runner's loop: rounds of server sessions, the measurement of each cell, steering, the end of a run."""
