"""The list of subcommands `fabricsim` offers, one module each."""

from __future__ import annotations

from fabricsim.cli.compare import compare
from fabricsim.cli.nccltests import nccl_tests
from fabricsim.cli.perf import perf
from fabricsim.cli.topo import topo
from fabricsim.cli.trace import trace
from fabricsim.cli.train import train
from fabricsim.cli.validate import validate
from fabricsim.cli.verify import verify

ALL: list = [compare, perf, topo, train, validate, verify]
ALL.append(nccl_tests)
ALL.append(trace)
