"""Servers: launching, readiness, process trees and their records, logs, /metrics scraping,
cluster launchers, GPUs, and the bearer token a request carries."""
