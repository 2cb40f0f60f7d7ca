"""Widgets render the state they are given; they never read files or talk to the runner."""
