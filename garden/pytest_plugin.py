"""garden's pytest plugin: run ``python -m garden`` as a real subprocess, and install hand-made
plugin distributions, in any test suite (garden's, or a plugin package's own ``tests/``).

pytest loads it through garden's ``pytest11`` entry point, as it loads any installed pytest
plugin, so a plugin's tests use the fixtures without a conftest::

    def test_my_model_trains(cli):
        result = cli("model=mymodel", "task=classify", "preset=smoke", "weights=random")
        assert result.returncode == 0, result.output

Runs fork from a server that has already imported torch and transformers (:data:`PRELOAD`), so a
test's ``python -m garden model=...`` costs the run, not 5-10 s of imports: each run is still its
own process (its own pid, signals, exit status, fresh garden modules, its own stdout and stderr),
given what a fresh interpreter takes from ``PYTHONPATH`` (its folders) and ``OMP_NUM_THREADS``. Commands that
promise not to import torch (``list``, ``show``, ...), and runs given another environment variable
the preloaded libraries may read when they load (:data:`IMPORT_TIME_ENV`), start a fresh
interpreter instead; ``GARDEN_TEST_FRESH_PROCESS=1`` makes every call do so.

Standard library and pytest only: it is imported at every pytest start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["Result", "Started", "cli", "garden_cli", "garden_process", "garden_ranks", "make_distribution", "plugin_site",
           "run_dir"]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


#: Libraries runs import that read no per-run setting while loading, imported once by the server
#: (one that is not installed is skipped), with the modeling modules of the installed models
PRELOAD = ("torch", "transformers", "transformers.modeling_utils", "transformers.processing_utils",
           "transformers.image_processing_utils", "transformers.feature_extraction_utils",
           "transformers.tokenization_utils_base", "transformers.models.auto.modeling_auto", "hydra",
           "omegaconf", "safetensors.torch", "huggingface_hub", "tokenizers", "numpy", "PIL.Image", "rich.console",
           "pluggy", "pytest", "matplotlib.pyplot", "sklearn.metrics", "scipy.signal", "scipy.stats", "soundfile",
           "torch_geometric")
#: A variable that differs from the server's and starts one of these may be read while those
#: libraries load (caches, threads, backends, the interpreter itself): that run starts afresh
IMPORT_TIME_ENV = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "SAFETENSORS_", "TORCH", "PYTORCH_",
                   "CUDA", "NCCL_", "OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "MPL", "MATPLOTLIB", "PYTHON",
                   "LD_", "HYDRA_", "XDG_", "HOME", "USE_", "NUMPY_", "SCIPY_", "SKLEARN_", "LANG", "LC_", "TZ")
#: Commands that import no torch (tests check it), run in a fresh interpreter, but for the
#: subcommands of theirs that build models
FRESH_COMMANDS = frozenset({"list", "show", "search", "registry", "plugin", "notebook", "help", "-h", "--help"})
MODEL_SUBCOMMANDS = frozenset({("registry", "measure"), ("plugin", "check")})
BASE_ENV = {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "COLUMNS": "200", "TRANSFORMERS_VERBOSITY": "error"}


def garden_cli(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 300) -> Result:
    """Run ``python -m garden ARGS`` in a process of its own, as a user would (offline, in ``cwd``)."""
    full_env = {**os.environ, **BASE_ENV, **(env or {})}
    cwd = Path(cwd or os.getcwd())
    if _forks(args, full_env):
        return _forked(args, cwd, full_env, timeout)
    proc = subprocess.run([sys.executable, "-m", "garden", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


_server: dict = {}  # the fork server's multiprocessing context, its environment and imported modules
#: the environment pytest started with, before a test or a library it imported changed it: the server's
_STARTED_WITH = dict(os.environ)


def _forks(args: tuple[str, ...], env: dict) -> bool:
    fresh_command = args and args[0] in FRESH_COMMANDS and tuple(args[:2]) not in MODEL_SUBCOMMANDS
    if not args or fresh_command or os.environ.get("GARDEN_TEST_FRESH_PROCESS") == "1":
        return False
    server = _server.get("env", {**os.environ, **BASE_ENV})
    set_by_preloads = _server.get("set_by_preloads", set())  # scikit-learn's KMP_*: a fresh import sets them too
    changed = {k for k in env.keys() | server.keys()
               if env.get(k) != server.get(k) and not (k in set_by_preloads and k not in env)}
    if "PYTHONPATH" in changed and _only_adds_modules(env.get("PYTHONPATH", ""), server.get("PYTHONPATH", "")):
        changed.remove("PYTHONPATH")  # the child puts the folders it adds on sys.path (:func:`_run_garden`)
    if env.get("OMP_NUM_THREADS", "").isdigit():
        changed.discard("OMP_NUM_THREADS")  # the child sets torch's threads from it, as torch does as it loads
    return not any(key.startswith(IMPORT_TIME_ENV) for key in changed)


def _only_adds_modules(python_path: str, servers: str) -> bool:
    """Whether ``python_path`` keeps the server's folders and adds only folders of modules the
    server has not imported (a plugin, a stand-in poptorch). A stand-in torch, or a
    ``sitecustomize`` (start-up code: an import hook, a hidden library, a patch), needs a fresh
    interpreter to take effect."""
    folders, kept = (set(filter(None, path.split(os.pathsep))) for path in (python_path, servers))
    if not kept <= folders:
        return False
    _fork_server()
    for folder in folders - kept:
        names = {path.name.split(".")[0] for path in Path(folder).glob("*") if path.suffix in ("", ".py", ".so", ".pyd")}
        if names & (_server["modules"] | {"sitecustomize", "usercustomize"}):
            return False
    return True


def _model_modules() -> list[str]:
    """transformers' modeling modules of the installed models, found by their family's config class."""
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

        from garden.compat import resolve_name
        from garden.registry import entries
    except ImportError:
        return []
    model_type = {config: name for name, config in CONFIG_MAPPING_NAMES.items()}
    modules = set()
    for entry in entries().values():
        try:
            family = resolve_name(entry.builder)
        except Exception:  # a plugin that does not import is the test's to report, not the server's
            continue
        kind = getattr(family, "architecture", "") or model_type.get(getattr(family, "config_class", None))
        if kind in CONFIG_MAPPING_NAMES:
            module = kind.replace("-", "_")
            modules.add(f"transformers.models.{module}.modeling_{module}")
    return sorted(modules)


def _fork_server():
    """The multiprocessing context whose server has imported :data:`PRELOAD` (started once)."""
    import multiprocessing

    if not _server:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([*PRELOAD, *_model_modules()])
        saved, started = dict(os.environ), {**_STARTED_WITH, **BASE_ENV}
        os.environ.clear(), os.environ.update(started)  # what the server's preloaded libraries read as they load
        try:
            receive, send = context.Pipe(duplex=False)
            first = context.Process(target=_send_environ, args=(send,))  # starts the server with this environment
            first.start()
            server_env, modules = receive.recv()
            first.join()
        finally:
            os.environ.clear(), os.environ.update(saved)
        _server.update(context=context, env=server_env, set_by_preloads=server_env.keys() - started.keys(),
                       modules=modules)
    return _server["context"]


def _send_environ(connection) -> None:
    """The server's environment after its imports, as its children inherit it, and the top-level
    modules it imported."""
    connection.send((dict(os.environ), {name.split(".")[0] for name in sys.modules}))


def _forked(args: tuple[str, ...], cwd: Path, env: dict, timeout: float) -> Result:
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        process = _fork_server().Process(target=_run_garden, args=(list(args), str(cwd), env, str(out), str(err)))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill(), process.join()
            raise subprocess.TimeoutExpired(["python", "-m", "garden", *args], timeout)
        read = lambda path: path.read_text(errors="replace") if path.exists() else ""  # noqa: E731
        return Result(process.exitcode, read(out), read(err))  # -N when signal N stopped it, as subprocess says


class Started:
    """A run started by :func:`garden_process`, asked as a ``subprocess.Popen`` is: ``pid``,
    ``poll()``, ``wait(timeout)``, ``send_signal(sig)``; ``-N`` when signal N stopped it."""

    def __init__(self, process):
        self._process, self.pid = process, process.pid

    def poll(self) -> int | None:
        if isinstance(self._process, subprocess.Popen):
            return self._process.poll()
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        if isinstance(self._process, subprocess.Popen):
            return self._process.wait(timeout)
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(["python", "-m", "garden"], timeout)
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # as Popen does: never to a pid that ended (and may be reused)
            os.kill(self.pid, sig)


def garden_process(*args: str, cwd: Path, log: Path, env: dict | None = None) -> Started:
    """Start ``python -m garden ARGS`` and return at once, its stdout and stderr both written to
    ``log``, in a session of its own: ``subprocess.Popen(..., stdout=log, stderr=STDOUT,
    start_new_session=True)``, forked from the server where :func:`garden_cli` would fork."""
    full_env = {**os.environ, **BASE_ENV, **(env or {})}
    if _forks(args, full_env):
        process = _fork_server().Process(target=_run_garden, args=(list(args), str(cwd), full_env, str(log), None))
        process.start()
        if not _started:
            import atexit

            atexit.register(_stop_strays)  # after multiprocessing's, so it runs before it joins them
        _started.append(process)
        return Started(process)
    with open(log, "w") as out:
        return Started(subprocess.Popen([sys.executable, "-m", "garden", *args], cwd=cwd, env=full_env, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True))


_started: list = []  # garden_process's forked runs


def _stop_strays() -> None:
    """Kill the runs a test started and left running: multiprocessing would wait for them at exit
    (a Popen'd run would outlive pytest instead)."""
    for process in _started:
        if process.exitcode is None:
            process.kill()


def garden_ranks(nproc: int, *args: str, cwd: Path, env: dict | None = None, timeout: float = 300) -> Result:
    """``torchrun --standalone --nproc-per-node=NPROC -m garden ARGS`` without the launcher: NPROC
    ranks forked from the server with torchrun's variables (``RANK``, ``WORLD_SIZE``, a free
    ``MASTER_PORT``, ...), joined in a real gloo process group. Exit status 0 when every rank
    exits 0, else the failing rank's; stdout is rank 0's, stderr every rank's."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = {**os.environ, **BASE_ENV, **(env or {})}
    if not _forks(args, env):  # torchrun itself, as it would start them
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                               "-m", "garden", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return Result(proc.returncode, proc.stdout, proc.stderr)
    cluster = {"WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port), "GROUP_RANK": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        ranks = []
        for rank in range(nproc):
            out, err = Path(tmp, f"{rank}.out"), Path(tmp, f"{rank}.err")
            rank_env = {**env, **cluster, "RANK": str(rank), "LOCAL_RANK": str(rank)}
            process = _fork_server().Process(target=_run_garden, args=(list(args), str(cwd), rank_env, str(out),
                                                                             str(err)))
            process.start()
            ranks.append((process, out, err))
        _join_all([process for process, _, _ in ranks], timeout, args)
        failed = [process.exitcode for process, _, _ in ranks if process.exitcode]
        code = next((code for code in failed if code > 0), failed[0] if failed else 0)  # not the ranks stopped after it
        read = lambda path: path.read_text(errors="replace") if path.exists() else ""  # noqa: E731
        return Result(code, read(ranks[0][1]),
                      "".join(f"[rank {rank}]\n{read(err)}" for rank, (_, _, err) in enumerate(ranks)))


def _join_all(processes: list, timeout: float, args: tuple[str, ...]) -> None:
    """Wait for every rank; once one fails, the others (waiting on it in a collective) are stopped."""
    import time

    deadline = time.monotonic() + timeout
    while any(process.exitcode is None for process in processes):
        if time.monotonic() > deadline or any(process.exitcode for process in processes):
            for process in processes:
                if process.exitcode is None:
                    process.kill()
            for process in processes:
                process.join()
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["torchrun", "-m", "garden", *args], timeout)
            return
        processes[0].join(0.2)


def _run_garden(args: list[str], cwd: str, env: dict, out: str, err: str | None) -> None:
    """In the forked child: become ``python -m garden ARGS`` run in ``cwd`` with ``env`` (with
    ``err`` None: stderr into ``out``, in a session of its own, as :func:`garden_process` says)."""
    import atexit
    import runpy

    os.environ.clear(), os.environ.update(env)
    os.chdir(cwd)
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
    if err is None:
        os.setsid()
        os.dup2(1, 2)
    else:
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)
    for name in [m for m in sys.modules if m == "garden" or m.startswith(("garden.", "garden_"))]:
        del sys.modules[name]  # imported fresh, as a new interpreter would, under this environment
    if env.get("OMP_NUM_THREADS", "").isdigit() and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(env["OMP_NUM_THREADS"]))  # what torch reads as it loads
    sys.path[0] = cwd  # python -m puts the working directory first, then PYTHONPATH's folders
    sys.path[1:1] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
    sys.argv = ["-m", *args]
    try:
        runpy.run_module("garden", run_name="__main__", alter_sys=True)
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush(), sys.stderr.flush()


def run_dir(where: Path) -> Path:
    """The folder of the one run started in ``where`` (Hydra's ``outputs/DATE/TIME``)."""
    [metrics] = list((Path(where) / "outputs").glob("*/*/metrics.json"))
    return metrics.parent


@pytest.fixture
def cli(tmp_path):
    """``cli(*args)`` runs garden in a temporary working directory (outputs land there)."""

    def run(*args: str, env: dict | None = None, timeout: float = 300) -> Result:
        return garden_cli(*args, cwd=tmp_path, env=env, timeout=timeout)

    return run


def make_distribution(site: Path, dist: str, module: str, source: str, *, entry: str | None = None,
                      version: str = "1.0") -> None:
    """Install a plugin distribution by hand: the module and a ``.dist-info`` with its entry point."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[garden.plugins]\n{entry or module} = {module}\n")


@pytest.fixture
def plugin_site(tmp_path):
    """A directory for hand-made plugin distributions, and the env that puts it on sys.path."""
    site = tmp_path / "site"
    site.mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return site, env
