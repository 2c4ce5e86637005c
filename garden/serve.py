"""``python -m garden registry serve``: the registry page on http://127.0.0.1, with the current data.

The page (``docs/registry/``) is static and fetches ``./registry.json``; this server hands it the
file at ``registry_path``, read afresh on every request, so a rebuilt registry shows on reload.
Where there is no such file (garden pip-installed, run outside a checkout) it hands the page the
registry of the installed plugins, built when the server starts (what ``registry build`` writes).
It also hands the page ``./notebooks.json`` (each entry's tutorial notebook and, with
``GARDEN_NOTEBOOK_URL`` set, its "Open in ..." link) and the notebooks themselves.
Bound to 127.0.0.1 only: it is a local preview, not a public site. Standard library only.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from urllib.parse import urlparse
import webbrowser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path

from garden.compat import strip_prefix
from garden.errors import ConfigError

PAGE_DIR = Path(__file__).resolve().parents[1] / "docs" / "registry"
NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
#: e.g. https://colab.research.google.com/github/ORG/REPO/blob/main/{path}; {path} is the
#: notebook's path in the repository (notebooks/vit-classify.ipynb)
URL_VARIABLE = "GARDEN_NOTEBOOK_URL"
#: what the "Open in ..." button says for the usual hosts
HOSTS = {"colab.research.google.com": "Colab", "mybinder.org": "Binder", "console.paperspace.com": "Gradient",
         "studiolab.sagemaker.aws": "SageMaker Studio Lab", "kaggle.com": "Kaggle"}


def notebook_path(model: str, task: str) -> str:
    """Where the built-in ``model`` × ``task`` notebook lives, relative to the repository root."""
    return f"notebooks/{model}-{task}.ipynb"


def launch_url(path: str, template: str | None = None) -> str | None:
    """The "Open in ..." link for a notebook at ``path``, from ``GARDEN_NOTEBOOK_URL`` (its
    ``{path}`` replaced); ``None`` when no template is set.

    >>> launch_url("notebooks/vit-classify.ipynb", "https://mybinder.org/v2/gh/org/garden/main?labpath={path}")
    'https://mybinder.org/v2/gh/org/garden/main?labpath=notebooks/vit-classify.ipynb'
    """
    template = os.environ.get(URL_VARIABLE) if template is None else template
    if not template:
        return None
    if "{path}" not in template:
        raise ConfigError(f"{URL_VARIABLE}={template} has no {{path}}; e.g. "
                          "https://colab.research.google.com/github/ORG/REPO/blob/main/{path}")
    return template.replace("{path}", path)


def launch_label(template: str) -> str:
    """``Colab``, ``Binder``, ... for the template's host, else the host itself."""
    host = strip_prefix(urlparse(template).hostname or template, "www.")
    return HOSTS.get(host, host)


def notebooks_listing(registry_text: bytes | str, notebook_dir: Path = NOTEBOOK_DIR) -> dict:
    """``notebooks.json`` for the page: per model and task of the registry document
    ``registry_text``, the notebook's path and launch link."""
    template = os.environ.get(URL_VARIABLE) or None
    found: dict[str, dict[str, dict]] = {}
    for model in json.loads(registry_text).get("models", []):
        for task in model.get("tasks", []):
            path = notebook_path(model["name"], task)
            if (notebook_dir / Path(path).name).is_file():
                found.setdefault(model["name"], {})[task] = {"path": path, "open": launch_url(path, template)}
    return {"open_label": launch_label(template) if template else None, "notebooks": found}


class RegistryPageHandler(SimpleHTTPRequestHandler):
    """Static files from the page folder, except ``/registry.json``, which is ``registry_path``
    (or ``built``, the installed plugins' registry, when there is no file)."""

    def __init__(self, *args, registry_path: Path, built: bytes | None = None, notebook_dir: Path = NOTEBOOK_DIR,
                 **kwargs):
        self.registry_path, self.built, self.notebook_dir = registry_path, built, notebook_dir
        super().__init__(*args, **kwargs)

    def registry_text(self) -> bytes:
        """The registry document the page gets: the file, read afresh, or the one built at start."""
        return self.built if self.built is not None else self.registry_path.read_bytes()

    def send_head(self):
        path = self.path.split("?", 1)[0]
        if path == "/notebooks.json":
            try:
                return self.send_body(json.dumps(notebooks_listing(self.registry_text(), self.notebook_dir)).encode(),
                                      "application/json; charset=utf-8")
            except (OSError, ValueError) as err:
                self.send_error(500, f"notebooks.json: {err}")
                return None
        if path.startswith("/notebooks/") and path.endswith(".ipynb"):
            file = self.notebook_dir / Path(path).name
            if not file.is_file():
                self.send_error(404, f"no notebook {Path(path).name}; write it with: python -m garden notebook")
                return None
            return self.send_body(file.read_bytes(), "application/x-ipynb+json")
        if path != "/registry.json":
            return super().send_head()
        try:
            body = self.registry_text()
        except OSError as err:
            self.send_error(404, f"{self.registry_path}: {err.strerror}; run: python -m garden registry build")
            return None
        return self.send_body(body, "application/json; charset=utf-8")

    def send_body(self, body: bytes, content_type: str):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        return BytesIO(body)

    def log_message(self, format: str, *args) -> None:
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def make_server(registry_path: Path, port: int = 0, page_dir: Path = PAGE_DIR,
                notebook_dir: Path = NOTEBOOK_DIR) -> ThreadingHTTPServer:
    """A server for the page and ``registry_path`` on 127.0.0.1:``port`` (0 picks a free port)."""
    registry_path, page_dir = Path(registry_path).resolve(), Path(page_dir)
    if not (page_dir / "index.html").is_file():
        raise ConfigError(f"the registry page is not at {page_dir}; serve from a garden source checkout")
    built = None
    if not registry_path.is_file():
        from garden import registry

        built = registry.render(registry.registry_document()).encode()
    handler = functools.partial(RegistryPageHandler, registry_path=registry_path, built=built,
                                notebook_dir=Path(notebook_dir),
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
