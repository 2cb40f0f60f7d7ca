"""The run directory's live protocol: events.jsonl, control.jsonl, what a refused save says."""
