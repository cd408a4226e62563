"""How `firstfault serve` runs uvicorn: bounded connections, and no slow client holding one.

uvicorn times out idle keep-alive connections but not a client that connects and then sends its
request head slowly, or never: `TimelyH11Protocol` closes a connection whose next request head
has not arrived `head_timeout` seconds after it opened (or after the previous answer). Request
bodies that stall are timed out by the app itself (web/app.py), where a 408 can still be sent.
"""
from __future__ import annotations

from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_CONNECTIONS = 256  # beyond this uvicorn answers 503 at once instead of queueing


def protocol_with_head_timeout(head_timeout: float) -> type:
    class TimelyH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._head_timer = None
            self._arm_head_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm_head_timer()

        def connection_lost(self, exc) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
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


def run(app, host: str, port: int, head_timeout: float) -> None:
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="critical", server_header=False,
                http=protocol_with_head_timeout(head_timeout), timeout_keep_alive=5,
                limit_concurrency=MAX_CONNECTIONS)
