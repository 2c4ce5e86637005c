"""A contract test kit for plugin authors: one call checks everything garden relies on.

In a plugin's own test suite::

    from garden.testing import assert_plugin_contract

    def test_my_plugin_keeps_the_garden_contract():
        assert_plugin_contract("garden-convnext")   # distribution, entry-point or model name

or, to look at each point (what ``python -m garden plugin check`` prints)::

    from garden.testing import check_plugin

    for result in check_plugin("convnext"):
        print(result.line())        # ✓ convnext/classify: configs compose (preset=smoke weights=random) ...

The checks are listed in :mod:`garden.contract`. They run on the *installed* plugin, exactly as
garden discovers it, so install the package (``pip install -e .``) before running its tests.
"""

from __future__ import annotations

from garden.contract import CheckResult, check_plugin, failures

__all__ = ["CheckResult", "assert_plugin_contract", "check_plugin"]


def assert_plugin_contract(name: str, *, tasks: list[str] | None = None) -> list[CheckResult]:
    """Run :func:`check_plugin` and fail with one line per broken point; returns the results.

    ``tasks`` limits the per-task checks to those tasks (default: every task of every model).
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    results = check_plugin(name, tasks=tasks)
    failed = failures(results)
    if failed:
        raise AssertionError(
            f"plugin '{name}' breaks the garden plugin contract:\n"
            + "\n".join(r.line() for r in failed)
            + "\n(all checks:)\n"
            + "\n".join(r.line() for r in results)
        )
    return results
