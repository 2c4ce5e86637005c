"""Where a run's starting weights come from: the Hub, a local folder, or nowhere (random init).

``resolve_weights`` turns the ``weights`` setting into a folder that ``from_pretrained`` can
load, or ``None`` for random init:

- ``auto``: the variant's Hub checkpoint at its pinned revision, when cached or downloadable;
  random init for a variant without one (``tiny``). A pretrained variant whose checkpoint is out
  of reach stops with one line naming the fixes rather than training from random init.
- ``hub``: the variant's Hub checkpoint, or an error.
- ``hub:org/name[@revision]``: any Hub model repo (``main`` when no revision is given).
- a directory: a ``save_pretrained`` folder or a Hub snapshot.
- ``random``: no weights.

Downloads go through ``huggingface_hub.snapshot_download``, so they share its cache, progress
bars and settings (``HF_HOME``, ``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, ``HF_TOKEN``). It is
imported inside functions because it reads those variables once, when first imported. A
cached checkpoint pinned to a commit never touches the network; a branch (``main``) is looked
up again while the Hub answers. When nothing is cached, a two-second probe tells an unreachable
Hub apart before the client's own ~20 s of retries. Only safetensors are fetched unless
``weights.allow_pickle`` is set, and every safetensors file is checked before use, so a
truncated one fails here, with its path, not deep inside a load.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Iterable

from garden.compat import strip_prefix
from garden.entries import COMMIT_HASH, ModelEntry, Variant
from garden.errors import WeightsError

SAFETENSORS_FILES = ("*.safetensors", "model.safetensors.index.json")
# Only what transformers loads: "*.bin" would also fetch training_args.bin or optimizer.bin.
PICKLE_FILES = ("pytorch_model*.bin", "pytorch_model.bin.index.json")
# Config, tokenizer and processor files; preprocessor_config.json is also the feature extractor's.
SIDE_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer*",
    "vocab*",
    "merges.txt",
    "special_tokens_map.json",
    "added_tokens.json",
    "spiece.model",
    "sentencepiece*",
    "preprocessor_config.json",
    "processor_config.json",
    "video_preprocessor_config.json",
    "chat_template*",
)
# Weights in subfolders (onnx/, original/, ...) are not what from_pretrained loads.
TOP_LEVEL_ONLY = ["*/*"]
REACHABILITY_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class WeightsResolution:
    """What a run starts from: ``folder`` to load (``None``: random init) and ``origin`` for the
    run record (``hub org/name@3f49326``, ``local /path``, ``random``)."""

    folder: Path | None
    origin: str


class _Unobtainable(Exception):
    """A checkpoint that is not cached and cannot be downloaded now (offline or unreachable),
    turned into a WeightsError that says how to get it or what to run instead."""


def resolve_weights(
    source: str,
    variant: Variant | None,
    *,
    allow_pickle: bool = False,
    for_training: bool = True,
    entry: ModelEntry | None = None,
) -> WeightsResolution:
    """Turn a ``weights`` setting into a loadable folder (or random init); see the module doc.
    ``entry``, the model ``variant`` belongs to, lets an error name the model and its plugin."""
    source = source.strip()
    if source == "random":
        return WeightsResolution(None, "random")
    if source == "auto":
        return _auto(variant, allow_pickle=allow_pickle, for_training=for_training, entry=entry)
    if source == "hub" or source.startswith("hub:"):
        repo_id, revision = pinned_checkpoint(variant, entry) if source == "hub" else parse_hub_source(source)
        try:
            return _from_hub(repo_id, revision, allow_pickle=allow_pickle)
        except _Unobtainable as why:
            raise WeightsError(f"{why}; connect to the Hub and retry, or use weights=random") from None
    return _from_local(source, allow_pickle=allow_pickle)


def parse_hub_source(source: str) -> tuple[str, str]:
    """``hub:org/name[@revision]`` -> ``(repo_id, revision)``; no revision means ``main``."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo_id, _, revision = strip_prefix(source, "hub:").partition("@")
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise WeightsError(
            f"weights={source!r} does not name a Hub repo; write hub:org/name or hub:org/name@revision"
        ) from None
    return repo_id, revision or "main"


def config_snapshot(repo_id: str, revision: str) -> Path:
    """The config, tokenizer and processor files of ``repo_id`` at ``revision`` (cached, or
    downloaded), in the snapshot folder named by the full commit they are at: what
    ``model=hf:org/name@revision`` is built from before any weights are fetched."""
    try:
        return _snapshot(repo_id, revision, SIDE_FILES)
    except _Unobtainable as why:
        raise WeightsError(f"{why}; connect to the Hub once to cache it (or pin a cached commit)") from None


def pinned_checkpoint(variant: Variant | None, entry: ModelEntry | None = None) -> tuple[str, str]:
    """The variant's Hub repo and the full commit it is pinned to, so that a rerun loads the same
    bytes (``hub:org/name`` is how a user asks for ``main``). ``registry build`` refuses an
    installed plugin whose variant pins less, so this error reaches only users of such a plugin."""
    if variant is None or variant.hub_id is None:
        name = f"variant '{variant.name}'" if variant else "this model"
        raise WeightsError(
            f"{name} has no Hub checkpoint (weights=hub); use weights=random, a folder, or hub:org/name"
        )
    problem = variant.pin_problem()
    if problem:
        who = f"model '{entry.name}' variant '{variant.name}'" if entry else f"variant '{variant.name}'"
        author = f"the author of plugin {entry.plugin}" if entry and entry.plugin else "its plugin's author"
        raise WeightsError(
            f"{who} {problem}; choose a commit yourself with weights=hub:{variant.hub_id}@COMMIT "
            f"(or hub:{variant.hub_id} for its main branch), and ask {author} to pin one"
        )
    return variant.hub_id, variant.revision


def push(folder: Path, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Upload every file of ``folder`` (dot-files aside) to ``repo_id`` as one commit, creating
    the repo if needed; returns the commit URL."""
    from huggingface_hub import CommitOperationAdd, HfApi, constants
    from huggingface_hub.utils import HfHubHTTPError

    folder = Path(folder)
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and not _hidden(p.relative_to(folder))]
    if not files:
        raise WeightsError(f"nothing to push: {folder} has no files")
    api = HfApi(token=token)
    operations = [CommitOperationAdd(path_in_repo=p.relative_to(folder).as_posix(), path_or_fileobj=p) for p in files]
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        commit = api.create_commit(repo_id, operations=operations, commit_message=f"Upload {folder.name} with garden")
    except HfHubHTTPError as error:
        status = getattr(error.response, "status_code", "?")
        raise WeightsError(
            f"the Hub at {constants.ENDPOINT} refused to push to {repo_id} (HTTP {status}); check the repo "
            "name and that your token (HF_TOKEN or `hf auth login`) may write to it"
        ) from None
    except _transport_errors():  # includes the client's OfflineModeIsEnabled, a ConnectionError
        raise WeightsError(
            f"cannot push to {repo_id}: the Hub at {constants.ENDPOINT} is unreachable or HF_HUB_OFFLINE=1 is set"
        ) from None
    return commit.commit_url


def _auto(
    variant: Variant | None, *, allow_pickle: bool, for_training: bool, entry: ModelEntry | None
) -> WeightsResolution:
    if variant is None or variant.hub_id is None:
        return WeightsResolution(None, "random")
    repo_id, revision = pinned_checkpoint(variant, entry)
    try:
        return _from_hub(repo_id, revision, allow_pickle=allow_pickle)
    except _Unobtainable as why:
        raise WeightsError(f"weights=auto: {why}; {_without_weights(variant, repo_id, revision, for_training)}") from None


def _without_weights(variant: Variant, repo_id: str, revision: str, for_training: bool) -> str:
    """What to do when a pretrained variant's checkpoint is out of reach: a pretrained variant
    trained from random init is hours of compute for a model that learns little, and evaluating
    one measures nothing, so neither happens unless asked for with ``weights=random``."""
    from huggingface_hub import constants

    get = "unset HF_HUB_OFFLINE" if constants.HF_HUB_OFFLINE else "connect to the Hub (HF_ENDPOINT)"
    if for_training:
        return (f"variant '{variant.name}' is meant to start from these weights: {get} and run again "
                f"(or fetch them first: hf download {repo_id} --revision {revision}), try garden offline "
                "with model.variant=tiny or preset=smoke, or train from scratch on purpose with weights=random")
    return (f"evaluating untrained weights measures nothing: {get} and run again (or fetch them first: "
            f"hf download {repo_id} --revision {revision}), or pass weights=random to evaluate random init on purpose")


def _from_hub(repo_id: str, revision: str, *, allow_pickle: bool) -> WeightsResolution:
    folder = _snapshot(repo_id, revision, SAFETENSORS_FILES + SIDE_FILES)
    if allow_pickle and not any(folder.glob("*.safetensors")):
        folder = _snapshot(repo_id, revision, SAFETENSORS_FILES + PICKLE_FILES + SIDE_FILES)
    repo_files = _cached_listing(repo_id, commit=folder.name)
    _check_checkpoint(
        folder, _label(repo_id, revision), allow_pickle=allow_pickle, repo_files=repo_files, cached=True
    )
    return WeightsResolution(folder, f"hub {repo_id}@{folder.name[:7]}")


def _from_local(source: str, *, allow_pickle: bool) -> WeightsResolution:
    folder = Path(source).expanduser()
    if not folder.is_dir():
        hint = f" (for a Hub repo write weights=hub:{source})" if re.fullmatch(r"[\w.-]+/[\w.-]+", source) else ""
        raise WeightsError(
            f"weights={source!r} is not auto, hub, hub:org/name[@revision], random or an existing directory{hint}"
        )
    folder = folder.resolve()
    files = [p.name for p in folder.iterdir()]
    _check_checkpoint(folder, f"weights folder {folder}", allow_pickle=allow_pickle, repo_files=files, cached=False)
    return WeightsResolution(folder, f"local {folder}")


def _snapshot(repo_id: str, revision: str, patterns: tuple[str, ...]) -> Path:
    """The snapshot folder of ``repo_id@revision`` holding the files that match ``patterns``.

    A commit hash never changes, so a complete cached snapshot of one is used without asking
    the Hub; a branch or tag is looked up again when the Hub answers (``main`` means the latest),
    and its cached commit is used when it does not.
    """
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.utils import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    label = _label(repo_id, revision)
    options = dict(revision=revision, allow_patterns=list(patterns), ignore_patterns=TOP_LEVEL_ONLY)
    try:
        cached = _cached_snapshot(repo_id, options, patterns)
        if cached is not None and (COMMIT_HASH.fullmatch(revision) or constants.HF_HUB_OFFLINE):
            return cached
        if constants.HF_HUB_OFFLINE:
            raise _Unobtainable(f"{label} is not cached and HF_HUB_OFFLINE=1 forbids downloading it")
        if not _reachable(constants.ENDPOINT):
            if cached is not None:
                return cached
            raise _Unobtainable(f"{label} is not cached and the Hub at {constants.ENDPOINT} is unreachable")
        return Path(snapshot_download(repo_id, **options))
    except HFValidationError as error:
        raise WeightsError(f"{label} is not a valid Hub repo and revision: {_one_line(error)}") from None
    except RevisionNotFoundError:
        raise WeightsError(
            f"{repo_id} has no revision '{revision}'; check the branch, tag or commit hash "
            "(the variant's pinned revision, or weights=hub:org/name@revision)"
        ) from None
    except GatedRepoError:
        raise WeightsError(
            f"{repo_id} is gated; accept its terms on the Hub, then log in (`hf auth login` or HF_TOKEN)"
        ) from None
    except RepositoryNotFoundError:
        raise WeightsError(
            f"no model repo {repo_id} on the Hub at {constants.ENDPOINT}; check the name, or log in "
            "(`hf auth login` or HF_TOKEN) if it is private"
        ) from None
    except LocalEntryNotFoundError:  # the client's word for "not cached, and the Hub stopped answering"
        raise _Unobtainable(f"{label} is not cached and the Hub at {constants.ENDPOINT} stopped answering") from None
    except EntryNotFoundError as error:  # listed in the repo, yet 404 on download
        url = str(getattr(getattr(error, "response", None), "url", ""))
        missing = url.split("/resolve/", 1)[-1].partition("/")[2] or "a file"
        raise WeightsError(
            f"{label} lists {missing} but the Hub cannot serve it; retry later, or pin another revision"
        ) from None
    except HfHubHTTPError as error:
        status = getattr(error.response, "status_code", "?")
        raise WeightsError(f"the Hub at {constants.ENDPOINT} failed on {label} (HTTP {status}); retry later") from None
    except _transport_errors() as error:  # a dropped connection (after the client's retries), a full disk...
        raise WeightsError(
            f"downloading {label} failed ({_one_line(error)}); run again once that is fixed (downloads resume)"
        ) from None


def _cached_snapshot(repo_id: str, options: dict, patterns: tuple[str, ...]) -> Path | None:
    """The cached snapshot, if complete: the client checks it against the cached file listing
    when it has one; a cache filled by older tools has none, so then we look for the files."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(repo_id, local_files_only=True, **options))
    except LocalEntryNotFoundError:  # also the client's IncompleteSnapshotError
        return None
    if _cached_listing(repo_id, commit=folder.name) is not None:
        return folder
    wanted = ("config.json", "*.safetensors") + (("pytorch_model*.bin",) if PICKLE_FILES[0] in patterns else ())
    files = [p for pattern in wanted for p in folder.glob(pattern)]  # a deleted blob leaves a dangling link
    complete = (folder / "config.json") in files and len(files) > 1 and all(p.is_file() for p in files)
    return folder if complete else None


def _cached_listing(repo_id: str, *, commit: str) -> set[str] | None:
    """Every file the repo has at ``commit``, as huggingface_hub >= 2 caches it on download."""
    try:
        from huggingface_hub import get_cached_repo_tree
        from huggingface_hub.errors import CachedRepoTreeNotFoundError
    except ImportError:
        return None
    if not COMMIT_HASH.fullmatch(commit):
        return None
    try:
        return {f.path for f in get_cached_repo_tree(repo_id, revision=commit)}
    except CachedRepoTreeNotFoundError:
        return None


def _reachable(endpoint: str) -> bool:
    """Whether anything answers at the Hub's address within a couple of seconds: the client
    itself retries a dead endpoint for ~20 s, too long to wait before falling back. Any reply
    counts, even an HTTP or TLS error; only no connection at all (refused, timed out, unknown
    host) does not. urllib honours the usual proxy variables (HTTPS_PROXY, NO_PROXY) too."""
    import ssl
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=REACHABILITY_TIMEOUT_S)
    except urllib.error.HTTPError:
        return True
    except urllib.error.URLError as error:
        return isinstance(error.reason, ssl.SSLError)
    except OSError:  # a timeout while reading the reply
        return False
    return True


def _transport_errors() -> tuple[type[BaseException], ...]:
    """The HTTP stack's connection errors: httpx2 (huggingface_hub 2), httpx (1) or requests
    (0.x, whose errors are OSErrors)."""
    errors: list[type[BaseException]] = [OSError]
    for module in ("httpx2", "httpx"):
        try:
            errors.append(__import__(module).TransportError)
        except ImportError:
            pass
    return tuple(errors)


def _check_checkpoint(
    folder: Path, label: str, *, allow_pickle: bool, repo_files: Iterable[str] | None, cached: bool
) -> None:
    """Refuse a folder ``from_pretrained`` would fail on, or that holds pickles not allowed.

    ``repo_files`` lists everything the checkpoint has, downloaded or not, which tells a
    pickle-only repo from an empty one; ``None`` when unknown (huggingface_hub < 2 keeps no
    listing in its cache). ``cached``: the folder is a Hub cache snapshot, re-downloadable.
    """
    if not (folder / "config.json").is_file():
        raise WeightsError(f"{label} has no config.json; weights must be a save_pretrained folder or a Hub model repo")
    safetensors = sorted(folder.glob("*.safetensors"))
    if safetensors:
        for file in safetensors:
            _check_safetensors(file, cached=cached)
        _check_shards(folder, label)
        return
    pickles = sorted(p for p in repo_files or () if "/" not in p and fnmatch(p, "pytorch_model*.bin"))
    if pickles and not allow_pickle:
        raise WeightsError(
            f"{label} has only pickle weights ({', '.join(pickles)}), which can run code when loaded; "
            "set weights.allow_pickle=true if you trust its author"
        )
    if any(folder.glob("pytorch_model*.bin")):
        return
    if repo_files is None:
        raise WeightsError(
            f"{label} has no safetensors weights; if it has only pytorch_model.bin, set "
            "weights.allow_pickle=true if you trust its author, else use another checkpoint"
        )
    raise WeightsError(f"{label} has no weights (model.safetensors or its shards); use another checkpoint")


def _check_safetensors(file: Path, *, cached: bool) -> None:
    """Parse the header, which also checks that the file is as long as the header says."""
    from safetensors import safe_open

    try:
        with safe_open(str(file), framework="numpy"):
            pass
    except Exception as error:  # safetensors raises its own SafetensorError (and OSError)
        blob = file.resolve()  # the Hub cache's blob behind the snapshot's symlink
        fix = f"delete {blob} and run again to re-download it" if cached else "re-save the checkpoint"
        raise WeightsError(f"{file} is not a valid safetensors file ({_one_line(error)}); {fix}") from None


def _check_shards(folder: Path, label: str) -> None:
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        return
    shards = set(json.loads(index.read_text()).get("weight_map", {}).values())
    missing = sorted(s for s in shards if not (folder / s).is_file())
    if missing:
        raise WeightsError(f"{label}: model.safetensors.index.json names shards it lacks ({', '.join(missing)})")


def _label(repo_id: str, revision: str) -> str:
    """``org/name@main``, or ``org/name@3f49326`` for a commit hash (as the Hub shows them)."""
    return f"{repo_id}@{revision[:7] if COMMIT_HASH.fullmatch(revision) else revision}"


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
