"""dspark-tui: compare speculative-decoding settings of a vLLM server from one terminal."""

__version__ = "0.1.0"
