from __future__ import annotations

import pytest
from log_helpers import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
