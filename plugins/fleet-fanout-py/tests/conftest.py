"""Every test starts with an empty stand-in host."""

import pytest

from herald_sdk import testing


@pytest.fixture(autouse=True)
def fake_host():
    """Resets the stand-in host's config, logs and cache before each test."""
    testing.reset()
