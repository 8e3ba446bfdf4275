"""A local, Hub-compatible HTTP server for tests (the Hub is not reachable from test machines).

``HubServer().start()`` serves the Hub API and its object storage on two local ports;
``point_clients_at(server.url, home)`` makes ``huggingface_hub`` and ``datasets`` use it.
"""

from tests.hub_server.clients import point_clients_at, verify
from tests.hub_server.server import Fault, HubServer, Request, rate_limit
from tests.hub_server.state import User

__all__ = ["Fault", "HubServer", "Request", "User", "point_clients_at", "rate_limit", "verify"]
