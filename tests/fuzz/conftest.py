"""Fuzzing every parser: the only outcomes allowed are a result with sane figures or a FabricsimError.

Each fuzz test runs twice: `quick` in the default run (FUZZ_QUICK examples), `slow` (2,000 examples, marker
`slow`, run by .ci/run). Both are derandomized (the same examples every run) and keep no example database,
so a run is deterministic; the deadline catches a parser that hangs or blows up on one input.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings

FUZZ_QUICK = 40
FUZZ_SLOW = 2000
_COMMON = dict(derandomize=True, database=None, deadline=timedelta(seconds=5), print_blob=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.register_profile("fuzz-quick", max_examples=FUZZ_QUICK, **_COMMON)
settings.register_profile("fuzz-slow", max_examples=FUZZ_SLOW, **_COMMON)

RUNS = [pytest.param("fuzz-quick", id="quick"), pytest.param("fuzz-slow", id="slow", marks=pytest.mark.slow)]


def run_fuzz(profile: str, test) -> None:
    """Run the @given-decorated `test` under the named hypothesis profile."""
    settings(settings.get_profile(profile))(test)()
