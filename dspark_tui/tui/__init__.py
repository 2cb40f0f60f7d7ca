"""The Textual app: the only layer that imports textual. It watches runs; it never runs one."""
