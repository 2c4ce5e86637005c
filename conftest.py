"""The test tiers of this repository, for tests/ and every plugin's tests/ alike.

``slow`` is measured, not guessed: a test that took more than ``SLOW_S`` seconds (setup, call
and teardown) in the last full run recorded in ``tests/durations.json`` is marked ``slow``, so
``make test-fast`` (``-m "not slow and not distributed and not browser"``) stays fast as tests
are added. A test not in the file yet runs in both tiers until the file is rewritten:

    make durations        # the whole suite, recording each test's seconds in tests/durations.json

Tests may also say ``@pytest.mark.slow`` themselves (the load tests do).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent / "tests" / "durations.json"
#: a test slower than this on the recording machine (2 cores) is ``slow``
SLOW_S = 1.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", metavar="FILE", default=None,
                     help="write each test's seconds (setup + call + teardown) to FILE, e.g. tests/durations.json")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--record-durations")
    if out and not hasattr(config, "workerinput"):  # the controller sees every worker's reports
        config.pluginmanager.register(Recorder(Path(out)), "garden-durations")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = json.loads(DURATIONS.read_text())["seconds"] if DURATIONS.is_file() else {}
    for item in items:
        if known.get(item.nodeid, 0.0) > SLOW_S:
            item.add_marker(pytest.mark.slow)


class Recorder:
    """Sums each test's phases and writes them, sorted, when the session ends."""

    def __init__(self, out: Path):
        self.out = out
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        record = {"slow_s": SLOW_S, "total_s": round(sum(self.seconds.values()), 1),
                  "seconds": {k: round(v, 2) for k, v in sorted(self.seconds.items())}}
        partial = self.out.with_name(self.out.name + ".partial")
        partial.write_text(json.dumps(record, indent=1) + "\n")
        partial.replace(self.out)  # a run cut short leaves the previous file whole
