# SPDX-License-Identifier: Apache-2.0
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

from wharfd import WharfServer  # noqa: E402


@pytest.fixture(scope="session")
def wharfd():
    """One wharfd for a whole test session (fresh data dir)."""
    srv = WharfServer()
    srv.start()
    yield srv
    rc = srv.stop()
    srv.cleanup()
    assert rc == 0, f"wharfd exited with {rc} on SIGTERM"


@pytest.fixture()
def fresh_wharfd():
    """A wharfd of the test's own, for tests that kill or restart it."""
    srv = WharfServer()
    srv.start()
    yield srv
    srv.cleanup()
