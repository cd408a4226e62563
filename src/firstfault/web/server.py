"""How `firstfault serve` runs uvicorn: bounded connections (in all, and per client address), and
no slow client holding one.

uvicorn times out idle keep-alive connections but not a client that connects and then sends its
request head slowly, or never: `TimelyH11Protocol` closes a connection whose next request head
has not arrived `head_timeout` seconds after it opened (or after the previous answer). Request
bodies that stall are timed out by the app itself (web/app.py), where a 408 can still be sent.
"""
from __future__ import annotations

from collections import Counter

from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_CONNECTIONS = 256  # beyond this uvicorn answers 503 at once instead of queueing
# one address may hold this many connections at once; more are closed as they open, so that one
# client cannot take the MAX_CONNECTIONS from everyone. Loopback is not counted: on this machine
# it is the user, or a reverse proxy that speaks for every client (and limits them itself).
MAX_CONNECTIONS_PER_CLIENT = 32


def protocol_with_head_timeout(head_timeout: float) -> type:
    open_per_client: Counter = Counter()

    class TimelyH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._head_timer = None
            self._client = _counted_address(transport)
            if self._client is not None:
                open_per_client[self._client] += 1
                if open_per_client[self._client] > MAX_CONNECTIONS_PER_CLIENT:
                    transport.close()
                    return
            self._arm_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_head_timer()

        def connection_lost(self, exc) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            if self._client is not None:
                open_per_client[self._client] -= 1
                if open_per_client[self._client] <= 0:
                    del open_per_client[self._client]
                self._client = None
            super().connection_lost(exc)

        def _arm_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(head_timeout, self._head_timed_out, self.cycle)

        def _head_timed_out(self, cycle_before) -> None:
            if self.cycle is cycle_before and not self.transport.is_closing():
                self.transport.close()  # no request head came: there is nothing to answer

    TimelyH11Protocol.__name__ = "TimelyH11Protocol"
    return TimelyH11Protocol


def _counted_address(transport) -> str | None:
    """The peer's address, None for loopback (not counted) or when it cannot be told."""
    import ipaddress

    peer = transport.get_extra_info("peername")
    if not peer:
        return None
    try:
        return None if ipaddress.ip_address(peer[0]).is_loopback else peer[0]
    except ValueError:
        return None


def run(app, host: str, port: int, head_timeout: float) -> None:
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="critical", server_header=False,
                http=protocol_with_head_timeout(head_timeout), timeout_keep_alive=5,
                limit_concurrency=MAX_CONNECTIONS)
