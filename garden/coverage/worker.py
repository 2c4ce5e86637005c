"""One of the two processes that check architectures: ``python -m garden.coverage.worker RESULTS
TASK:TYPE ...`` with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set.

Both build each architecture from the same seed; rank 0 runs the local checks, both run the
2-stage pipeline, rank 0 the poptorch stand-in and writes one JSON line per case to RESULTS.
Before each check rank 0 names it in ``RESULTS.current`` (``task:type check time``), so the
driver can say where a case hung or crashed.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from datetime import timedelta
from pathlib import Path


def main(argv: list[str]) -> int:
    import torch
    import torch.distributed as dist
    import transformers

    from garden.coverage.checks import LOCAL, check_ipu, check_pipeline, prepare_case, reason, run_check
    from garden.files import write_atomic

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    results, cases = Path(argv[0]), [case.split(":", 1) for case in argv[1:]]
    rank = int(os.environ["RANK"])
    timeout = float(os.environ.get("GARDEN_COVERAGE_TIMEOUT", "300"))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    group = dist.group.WORLD
    current = results.with_name(results.name + ".current")

    def mark(task: str, model_type: str, check: str, so_far: dict | None = None) -> None:
        """The case and check now running, since when, and the checks done (for a killed case's record)."""
        if rank == 0:
            write_atomic(current, f"{task}:{model_type} {check} {time.time():.0f}\n{json.dumps(so_far or {})}\n")

    for task, model_type in cases:
        start = time.perf_counter()
        mark(task, model_type, "build")
        try:
            case = prepare_case(model_type, task)
        except Exception as err:  # the architecture's failure, not the run's
            case = None
            failed = {"build": (False, reason(err))}
        if case is not None:
            for name, check in LOCAL.items():
                if rank == 0 or name in ("build", "plan"):  # rank 1 needs the blocks, not the rest
                    mark(task, model_type, name, case.results)
                    run_check(case, name, check)
            failed = {}
        ready = case is not None and case.results.get("plan", (False,))[0] is True
        both: list = [None, None]
        dist.all_gather_object(both, ready, group=group)
        if all(both):
            mark(task, model_type, "pipeline", case.results)
            run_check(case, "pipeline", lambda c: check_pipeline(c, rank, group))
            agreed: list = [None, None]
            dist.all_gather_object(agreed, case.results["pipeline"], group=group)
            case.results["pipeline"] = next((r for r in agreed if r[0] is not True), agreed[0])
        elif case is not None:
            case.results["pipeline"] = (None, "skipped: the model was not cut into blocks")
        if rank == 0:
            if case is not None and case.results.get("plan", (False,))[0] is True:
                mark(task, model_type, "ipu", case.results)
                run_check(case, "ipu", check_ipu)
            elif case is not None:
                case.results["ipu"] = (None, "skipped: the model was not cut into blocks")
            record = {"type": model_type, "task": task, "checks": case.results if case is not None else failed,
                      "seconds": round(time.perf_counter() - start, 1)}
            with open(results, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        if case is not None and case.results.get("pipeline", (True,))[0] is False:
            break  # a failed schedule may leave messages in flight: the driver starts a fresh pair
        del case
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
