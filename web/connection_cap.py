"""A cap on the connections one client address holds without being answered (issue 32).

waitress accepts a fixed number of connections at once (its `connection_limit`), and keeps one
that sends nothing, or never finishes its request, until it has been silent for its
`channel_timeout`. One client opening that many connections and sending part of a request on
each (slow-loris) would hold them all, and the server would accept no one else. So a connection
from an address that already holds `CRONLEDGER_CONNECTIONS_PER_ADDRESS` connections waiting (idle,
or still sending a request) is closed as soon as it is accepted, before anything is read from
it. Connections whose request is being answered (open event streams among them) do not count:
threads and the stream limits bound those.
"""

from __future__ import annotations

import socket
from typing import Any

from prometheus_client import Counter
from prometheus_client.registry import CollectorRegistry

from web.server_errors import ProblemChannel, listening_servers


class AddressCappedChannel(ProblemChannel):
    """waitress's connection (answering its own refusals with problem documents), closed at
    once when its address holds more than `per_address` connections waiting."""

    per_address: int
    refused: Counter

    def __init__(
        self, server: Any, sock: socket.socket, addr: Any, adj: Any, map: Any = None
    ) -> None:
        super().__init__(server, sock, addr, adj, map)
        if waiting_from(server, addr) > self.per_address:  # this one counted
            self.will_close = True  # the server's loop closes it before reading from it
            self.refused.inc()


def waiting_from(server: Any, addr: Any) -> int:
    """The server's connections from `addr`'s host that no request is being answered on."""
    return sum(
        1
        for channel in server.active_channels.copy().values()  # a copy: the loop changes it
        if channel.addr[0] == addr[0] and not channel.requests and not channel.will_close
    )


def cap_connections_per_address(server: Any, per_address: int, registry: CollectorRegistry) -> None:
    """Make each listening server of `server` (as `waitress.create_server` returns it) cap
    its connections per address, count those it closes for it in `registry`, and answer its
    own refusals (413, 400) with problem documents."""
    refused = Counter(
        "cronledger_http_connections_refused",
        "Connections closed as soon as accepted: their address already held "
        "CRONLEDGER_CONNECTIONS_PER_ADDRESS connections not being answered",
        registry=registry,
    )
    channel_class = type(
        "AddressCappedChannel",
        (AddressCappedChannel,),
        {"per_address": per_address, "refused": refused},
    )
    for each in listening_servers(server):
        each.channel_class = channel_class
