"""docs/benchmarks.md's tables are generated from the committed raw results, never pasted."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import report  # noqa: E402  (bench/report.py)
from common import RESULTS  # noqa: E402

MACHINE_KEYS = {"cpu", "flags", "cores", "python", "date", "commit", "load_start", "load_end"}


def test_the_docs_tables_are_what_the_raw_results_render():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "report.py"), "--check"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("script", [s for s in report.SCRIPTS if (RESULTS / f"{s}.json").exists()])
def test_each_committed_result_names_its_machine_and_commit(script):
    record = json.loads((RESULTS / f"{script}.json").read_text())
    assert record["script"] == script
    # the scripts that run models name the torch and transformers they ran and how many threads
    wanted = MACHINE_KEYS | ({"torch", "transformers", "threads"} if script != "startup" else set())
    assert wanted <= set(record["machine"]), wanted - set(record["machine"])
    assert len(record["machine"]["commit"].split("+")[0]) == 40


def test_a_hand_edited_figure_is_caught(tmp_path):
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    assert report.stale(text) == []
    record = json.loads((RESULTS / "startup.json").read_text())
    slower = copy.deepcopy(record)
    for t in slower["times"]:
        t["seconds"] = [s * 2 for s in t["seconds"]]
    for path in RESULTS.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "startup.json").write_text(json.dumps(slower))
    assert report.stale(text, tmp_path) == ["startup"]
    assert report.stale(report.render(text, tmp_path), tmp_path) == []
