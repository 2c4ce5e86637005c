"""``python -m garden registry serve``: the registry page on http://127.0.0.1, with the current data.

The page (``docs/registry/``) is static and fetches ``./registry.json``; this server hands it the
file at ``registry_path``, read afresh on every request, so a rebuilt registry shows on reload.
Where there is no such file (garden pip-installed, run outside a checkout) it hands the page the
registry of the installed plugins, built when the server starts (what ``registry build`` writes).
Bound to 127.0.0.1 only: it is a local preview, not a public site. Standard library only.
"""

from __future__ import annotations

import functools
import sys
import webbrowser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

from garden.errors import ConfigError

PAGE_DIR = Path(__file__).resolve().parents[1] / "docs" / "registry"


class RegistryPageHandler(SimpleHTTPRequestHandler):
    """Static files from the page folder, except ``/registry.json``, which is ``registry_path``
    (or ``built``, the installed plugins' registry, when there is no file)."""

    def __init__(self, *args, registry_path: Path, built: bytes | None = None, **kwargs):
        self.registry_path, self.built = registry_path, built
        super().__init__(*args, **kwargs)

    def send_head(self):
        if self.path.split("?", 1)[0] != "/registry.json":
            return super().send_head()
        try:
            body = self.built if self.built is not None else self.registry_path.read_bytes()
        except OSError as err:
            self.send_error(404, f"{self.registry_path}: {err.strerror}; run: python -m garden registry build")
            return None
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        return BytesIO(body)

    def log_message(self, format: str, *args) -> None:
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def make_server(registry_path: Path, port: int = 0, page_dir: Path = PAGE_DIR) -> ThreadingHTTPServer:
    """A server for the page and ``registry_path`` on 127.0.0.1:``port`` (0 picks a free port)."""
    registry_path, page_dir = Path(registry_path).resolve(), Path(page_dir)
    if not (page_dir / "index.html").is_file():
        raise ConfigError(f"the registry page is not at {page_dir}; serve from a garden source checkout")
    built = None
    if not registry_path.is_file():
        from garden import registry

        built = registry.render(registry.registry_document()).encode()
    handler = functools.partial(RegistryPageHandler, registry_path=registry_path, built=built,
                                directory=str(page_dir))
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as err:
        raise ConfigError(f"cannot listen on 127.0.0.1:{port} ({err.strerror}); choose another --port") from None


def serve(registry_path: Path, port: int = 8000, open_browser: bool = False) -> None:
    """Serve the registry page until interrupted, printing its address."""
    with make_server(registry_path, port) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        what = registry_path if registry_path.is_file() else "the installed plugins (no registry.json here)"
        print(f"serving the registry page for {what} at {url} (Ctrl-C stops)", flush=True)
        if open_browser:
            webbrowser.open(url)
        server.serve_forever()
