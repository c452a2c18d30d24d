import pytest

import fabricsim.routing
from engine_helpers import bfs_route_pairs


@pytest.fixture
def bfs_routing(monkeypatch):
    """Route hand-built topologies by shortest path (they lack the host devices real routing expects)."""
    monkeypatch.setattr(fabricsim.routing, "route_pairs", bfs_route_pairs)
