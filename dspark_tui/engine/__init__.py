"""The engine: server lifecycle, benchmark drivers, /metrics scraping and the runner.

Plain asyncio + httpx; usable as a library and from the headless CLI. Never imports textual.
"""
