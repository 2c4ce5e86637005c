"""Screenshots of the registry page at desktop and phone widths, for the README and for review.

    python docs/registry/screenshots.py [--registry registry.json] [--out docs/registry]

Serves the page with ``garden.serve`` and drives Debian's chromium through playwright (no browser
download): ``apt-get install chromium`` and ``pip install playwright``.
"""

from __future__ import annotations

import argparse
import shutil
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}


def chromium_path() -> str:
    """Debian's chromium, which playwright drives in place of its own download."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise SystemExit("chromium is not installed; run: apt-get install chromium")
    return found


def take_screenshots(registry: Path, out: Path, browser=None) -> list[Path]:
    """Write ``screenshot-desktop.png`` and ``screenshot-phone.png`` of the page into ``out``.

    ``browser`` is a playwright Browser to reuse (the tests pass theirs); by default one is launched.
    """
    from garden.serve import make_server

    server = make_server(registry, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        if browser is not None:
            return [shoot(browser, url, out, name, size) for name, size in SIZES.items()]
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            launched = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            try:
                return [shoot(launched, url, out, name, size) for name, size in SIZES.items()]
            finally:
                launched.close()
    finally:
        server.shutdown()
        server.server_close()


def shoot(browser, url: str, out: Path, name: str, size: tuple[int, int]) -> Path:
    """One screenshot of the page's first screen at ``size`` (width, height), light theme."""
    width, height = size
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme="light")
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector(".card")
        path = out / f"screenshot-{name}.png"
        page.screenshot(path=str(path))
        return path
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registry", type=Path, default=HERE.parents[1] / "registry.json")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    for path in take_screenshots(args.registry, args.out):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
