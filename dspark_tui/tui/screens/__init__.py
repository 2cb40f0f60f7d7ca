"""Screens compose widgets and own the timers; the app only routes between them."""
