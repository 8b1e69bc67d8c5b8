"""Connection limits for ``prh serve`` (issue 36): a client that opens a connection and never
finishes its request headers is closed after :data:`HEADER_TIMEOUT_S`, and the headers of one
request are bounded in bytes (h11's incomplete-event limit) and connections in number.

uvicorn's own keep-alive timer starts only after a first response, so a connection that sends
nothing (or a byte a minute) held a file descriptor for ever; :class:`HeaderTimeoutH11` arms a
timer when the connection is made and disarms it once h11 has parsed a request line and its
headers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_S = 10.0  # seconds from connect to a complete request head
MAX_HEADER_BYTES = 16 * 1024  # request line and headers together
MAX_CONNECTIONS = 512  # beyond: uvicorn answers 503 (far below a default 1,024 descriptors)


class HeaderTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not complete within
    ``header_timeout`` seconds of its opening."""

    header_timeout = HEADER_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = self.loop.call_later(
            self.header_timeout, self._head_expired
        )

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.cycle is None and not self.transport.is_closing():  # no request head yet
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self._head_timer is not None:  # a head was parsed
            self._head_timer.cancel()
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)


def uvicorn_limits(header_timeout: float = HEADER_TIMEOUT_S) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` that apply these limits."""
    protocol = type("HeaderTimeoutH11", (HeaderTimeoutH11,), {"header_timeout": header_timeout})
    return {
        "http": protocol,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        "limit_concurrency": MAX_CONNECTIONS,
        "timeout_keep_alive": 5,
    }
