"""make test-fast leaves out what the last recorded full run found slow (conftest.py, tests/durations.json)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

DURATIONS = ROOT / "tests" / "durations.json"


def collected(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}  # its own output format, whatever ours
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return result.stdout


@pytest.mark.skipif(not DURATIONS.is_file(), reason="no tests/durations.json yet: make durations")
def test_a_test_the_last_full_run_found_slow_is_left_out_of_the_fast_tier():
    record = json.loads(DURATIONS.read_text())
    seconds = record["seconds"]
    slowest = max((n for n in seconds if "[" not in n), key=seconds.get)  # no parameters: one node id
    quickest = min((n for n in seconds if "[" not in n), key=seconds.get)
    assert seconds[slowest] > record["slow_s"] > seconds[quickest]
    assert "1 deselected" in collected("-m", "not slow", slowest)
    assert quickest in collected("-m", "not slow", quickest)
