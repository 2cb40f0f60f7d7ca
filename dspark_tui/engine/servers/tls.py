"""The one TLS context every httpx client of a process shares.

httpx builds a new verifying SSL context for each client it makes, loading the whole CA bundle
again: ~70 ms of CPU a client. A runner makes a client per readiness probe of each server start
(four a second while a server starts) and per scrape session, so that was most of a short run's
CPU. The context is httpx's own default (certifi's bundle, SSL_CERT_FILE/SSL_CERT_DIR honoured),
built once, when first needed.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl


@functools.cache
def verifying_context() -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()
