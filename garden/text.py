"""Text data shared by every text task: the user's files, the shipped defaults, tokenizers, lengths.

A text task reads records (dicts) from one of three places: the user's own file
(``data.path=FILE`` in CSV, JSON or JSONL), a Hub dataset (``data.hub=name[:config]``) or a
small dataset shipped in ``garden/tasks/data`` (so runs work offline). A model without a
checkpoint (``weights=random``) gets a real tokenizer trained once on that shipped text and
shipped beside its family as ``tokenizer.json`` (a :class:`TokenizerRecipe` says how)::

    >>> records = load_records("reviews.csv", ("sentence", "label"), "classify")   # doctest: +SKIP
    >>> tok = shipped_tokenizer(Path("garden_mymodel/tokenizer.json"), {"unk_token": "[UNK]"})  # doctest: +SKIP
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from garden.errors import ConfigError, DataError, unreadable

FORMATS = {".csv": "csv", ".json": "json", ".jsonl": "jsonl"}

TOKENIZER_KINDS = ("wordpiece", "bpe", "unigram")
#: characters every trained tokenizer knows, so punctuation absent from the corpus is never unknown
ALPHABET = [chr(c) for c in range(33, 127)]


def default_data(name: str) -> Path:
    """The path of a dataset shipped with garden (``garden/tasks/data/<name>``)."""
    from garden.compat import package_files as files

    path = Path(str(files("garden.tasks") / "data" / name))
    if not path.exists():
        raise DataError(f"garden's default dataset {name} is missing from {path.parent}; reinstall garden")
    return path


def load_records(path: str | Path, required_fields: Sequence[str], task_name: str) -> list[dict[str, Any]]:
    """Rows of the user's CSV, JSON (a list of objects) or JSONL file, each with ``required_fields``.

    Row numbers in errors count data rows from 1 (a CSV header is not a row). A SQuAD v1.1
    file (``{"data": [articles]}``) is flattened to the Hub's rows (``squad_rows``).
    """
    file = Path(path).expanduser()
    kind = FORMATS.get(file.suffix.lower())
    needs = ", ".join(required_fields)
    if kind is None:
        raise DataError(f"data.path={path}: task '{task_name}' reads .csv, .json or .jsonl files with fields "
                        f"{needs}, not '{file.suffix or file.name}'")
    if not file.is_file():
        raise DataError(f"data.path={path} does not exist; point it at a .csv/.json/.jsonl file with fields {needs}")
    return check_fields(_read_rows(file, kind), required_fields, task_name, f"data.path={path}")


def check_fields(rows: list[Any], required_fields: Sequence[str], task_name: str, where: str) -> list[dict[str, Any]]:
    """``rows`` unchanged if each is an object holding every one of ``required_fields``, else a DataError.

    ``where`` says where the rows came from (``data.path=reviews.csv``), for the message.
    """
    needs = ", ".join(required_fields)
    if not rows:
        raise DataError(f"{where} holds no rows; task '{task_name}' needs rows with fields {needs}")
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise DataError(f"{where}: row {number} is {type(row).__name__}, not an object with fields {needs}")
        for name in required_fields:
            if row.get(name) is None:
                raise DataError(f"{where}: row {number} has no field '{name}' (task '{task_name}' needs {needs})")
    return rows


EXPECTED = {
    "jsonl": "JSONL (one JSON object per line)",
    "json": "JSON (a list of objects, or SQuAD's {\"data\": [articles]})",
    "csv": "CSV (a header row naming the fields)",
}


def text_lines(file: Path) -> Iterator[tuple[int, str]]:
    """``(number, line)`` for each UTF-8 line of ``file``; a line that is not UTF-8 is refused or
    skipped as :class:`garden.errors.Unreadable` says, naming the file and the line."""
    for number, raw in enumerate(file.read_bytes().splitlines(), start=1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as err:
            unreadable().found(f"{file}: line {number} is not UTF-8 text ({err.reason} at byte {err.start})", "line")


def _read_rows(file: Path, kind: str) -> list[Any]:
    """Parse ``file``: JSON and JSONL with ``json`` (to name the bad line), CSV with ``datasets``."""
    expected = EXPECTED[kind]
    if kind == "jsonl":
        rows = []
        for number, line in text_lines(file):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    unreadable().found(f"data.path={file}: line {number} is not JSON ({err.msg}); expected {expected}",
                                       "line")
        return rows
    if kind == "json":
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise DataError(f"data.path={file} is not JSON (line {err.lineno}: {err.msg}); "
                            f"expected {expected}") from None
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = squad_rows(data["data"]) if data["data"] and "paragraphs" in data["data"][0] else data["data"]
        if not isinstance(data, list):
            raise DataError(f"data.path={file} holds a JSON {type(data).__name__}; expected {expected}")
        return data
    from datasets import load_dataset

    try:
        return load_dataset("csv", data_files=str(file), split="train").to_list()
    except Exception as err:  # datasets raises several types for a malformed CSV
        raise DataError(f"data.path={file} does not parse as CSV ({type(err).__name__}); expected {expected}") from None


def squad_rows(articles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SQuAD v1.1 articles flattened to the Hub's rows: id, title, context, question, answers."""
    return [
        {"id": qa.get("id", ""), "title": article.get("title", ""), "context": paragraph["context"],
         "question": qa["question"],
         "answers": {"text": [a["text"] for a in qa.get("answers", [])],
                     "answer_start": [a["answer_start"] for a in qa.get("answers", [])]}}
        for article in articles for paragraph in article.get("paragraphs", []) for qa in paragraph.get("qas", [])
    ]


def hub_records(name: str, split: str = "train") -> list[dict[str, Any]]:
    """Rows of a Hub dataset named ``name[:config]`` (``glue:sst2``, ``squad``, ``conll2003``).

    Class-label columns come back as their names (conll2003's ``ner_tags`` as ``B-PER``...), as
    a user's own file would hold them.
    """
    from datasets import load_dataset

    repo, _, config = name.partition(":")
    try:
        ds = load_dataset(repo, config or None, split=split)
    except Exception as err:  # offline, unknown name, missing config: all one kind of problem here
        reason = str(err).splitlines()[0] if str(err) else ""
        raise DataError(f"data.hub={name}: cannot load split '{split}' ({type(err).__name__}: {reason}); "
                        f"check the name or use data.path=FILE") from None
    return [_label_names(row, ds.features) for row in ds.to_list()]


def _label_names(row: dict[str, Any], features: Any) -> dict[str, Any]:
    from datasets import ClassLabel, Sequence as Seq

    out = dict(row)
    for key, feature in features.items():
        inner = feature.feature if isinstance(feature, Seq) else feature[0] if isinstance(feature, list) else None
        if isinstance(feature, ClassLabel) and isinstance(row.get(key), int) and row[key] >= 0:
            out[key] = feature.int2str(row[key])
        elif isinstance(inner, ClassLabel) and isinstance(row.get(key), list):
            out[key] = [inner.int2str(v) for v in row[key]]
    return out


def read_inputs(spec: str, field: str) -> list[tuple[str, str]]:
    """``infer.inputs`` as ``(name, text)`` pairs: a .txt (one per line), .jsonl/.json/.csv (``field``), or a literal.

    >>> read_inputs("The movie was great.", "sentence")
    [('The movie was great.', 'The movie was great.')]
    """
    path = Path(spec).expanduser()
    suffix = path.suffix.lower()
    is_file = suffix in (".txt", *FORMATS) and len(spec) < 4096 and path.is_file()
    if suffix in (".txt", *FORMATS) and not is_file and " " not in spec:
        raise DataError(f"infer.inputs={spec} does not exist; give a .txt/.jsonl/.csv file or the text itself")
    if not is_file:
        return [(spec, spec)]
    if suffix == ".txt":
        texts = [line.strip() for _, line in text_lines(path) if line.strip()]
        if not texts:
            raise DataError(f"infer.inputs={spec} holds no text lines")
        return [(f"{path.name}:{i}", t) for i, t in enumerate(texts, start=1)]
    rows = load_records(path, (field,), "infer")
    return [(f"{path.name}:{i}", str(r[field])) for i, r in enumerate(rows, start=1)]


def corpus_text(files: Iterable[str | Path]) -> Iterable[str]:
    """Every string in ``files``: lines of .txt, string values (and token lists) of .json/.jsonl."""

    def strings(value: Any) -> Iterable[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            yield " ".join(value)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)

    for file in map(Path, files):
        text = file.read_text(encoding="utf-8")
        if file.suffix == ".jsonl":
            for line in text.splitlines():
                if line.strip():
                    yield from strings(json.loads(line))
        elif file.suffix == ".json":
            yield from strings(json.loads(text))
        else:
            yield from (ln for ln in text.splitlines() if ln.strip())


@dataclass(frozen=True)
class TokenizerRecipe:
    """How a family's shipped tokenizer is trained, for models that have no checkpoint.

    ``kind`` is ``wordpiece``, ``bpe`` (byte-level) or ``unigram`` (SentencePiece-like);
    ``special_tokens`` are by role (``PreTrainedTokenizerFast`` keyword arguments), their order
    giving their ids; ``corpus`` names shipped datasets (:func:`default_data`); ``template`` is the
    single and pair post-processing templates (tokenizers' ``TemplateProcessing`` syntax, e.g.
    ``("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")``), ``None`` for no special tokens.
    Training is not reproducible (the trainers break ties in hash order), so
    ``tools/train_tokenizers.py`` follows the recipe once and commits the result beside the family
    as ``tokenizer.json``; runs only read that file.
    """

    kind: str
    special_tokens: Mapping[str, str]
    corpus: tuple[str, ...]
    vocab_size: int = 1000
    template: tuple[str, str] | None = None
    lowercase: bool = False

    def train(self) -> Any:
        """A ``tokenizers.Tokenizer`` trained on the corpus (``tools/train_tokenizers.py`` saves it)."""
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

        if self.kind not in TOKENIZER_KINDS:
            raise ConfigError(f"tokenizer kind '{self.kind}' is not one of: {', '.join(TOKENIZER_KINDS)}")
        specials = list(dict.fromkeys(self.special_tokens.values()))
        unk = self.special_tokens.get("unk_token")
        norm = [normalizers.NFKC()] + ([normalizers.Lowercase()] if self.lowercase else [])
        if self.kind == "wordpiece":
            tokenizer = Tokenizer(models.WordPiece(unk_token=unk))
            # whitespace, then each punctuation mark alone: the classic WordPiece split
            tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                               pre_tokenizers.Punctuation("isolated")])
            tokenizer.decoder = decoders.WordPiece()
            trainer = trainers.WordPieceTrainer(vocab_size=self.vocab_size, special_tokens=specials,
                                                show_progress=False, initial_alphabet=ALPHABET)
        elif self.kind == "bpe":
            tokenizer = Tokenizer(models.BPE())
            tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tokenizer.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(vocab_size=self.vocab_size, special_tokens=specials, show_progress=False,
                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        else:
            tokenizer = Tokenizer(models.Unigram())
            tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
            tokenizer.decoder = decoders.Metaspace()
            trainer = trainers.UnigramTrainer(vocab_size=self.vocab_size, special_tokens=specials, unk_token=unk,
                                              show_progress=False, initial_alphabet=ALPHABET)
        tokenizer.normalizer = normalizers.Sequence(norm)
        tokenizer.train_from_iterator(corpus_text(default_data(name) for name in self.corpus), trainer=trainer)
        steps = [processors.ByteLevel(trim_offsets=True)] if self.kind == "bpe" else []
        if self.template:
            used = {t.split(":")[0] for t in " ".join(self.template).split() if not t.startswith("$")}
            steps.append(processors.TemplateProcessing(
                single=self.template[0], pair=self.template[1],
                special_tokens=[(t, tokenizer.token_to_id(t)) for t in sorted(used)],
            ))
        if steps:
            tokenizer.post_processor = steps[0] if len(steps) == 1 else processors.Sequence(steps)
        return tokenizer


def shipped_tokenizer(file: Path, special_tokens: Mapping[str, str], *, model_max_length: int = 512) -> Any:
    """The tokenizer a plugin ships in ``file`` (a ``tokenizer.json``), for a model without a checkpoint.

    ``garden_trained`` is set on it, so a task sizes the model's vocabulary to it.
    """
    if not Path(file).is_file():
        raise DataError(f"the shipped tokenizer {file} is missing; reinstall the plugin, or write it with "
                        f"python tools/train_tokenizers.py")
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(file), model_max_length=model_max_length,
                                        **special_tokens)
    tokenizer.garden_trained = True
    return tokenizer


def max_length(data: Any, tokenizer: Any) -> int:
    """``data.max_length``, else the model's limit (the tokenizer's ``model_max_length``), else 512."""
    if data.max_length:
        return int(data.max_length)
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if limit and limit < 1_000_000 else 512


def fit_lengths(lengths: Sequence[int], limit: int, *, truncation: bool, what: str,
                names: Sequence[str] | None = None) -> str | None:
    """Check tokenized lengths against ``limit``: a note to show when truncating, a DataError when not.

    Returns ``None`` when everything fits, else a one-line note (also printed once) counting
    the truncated examples.
    """
    long = [i for i, n in enumerate(lengths) if n > limit]
    if not long:
        return None
    first = long[0]
    name = names[first] if names else f"example {first + 1}"
    if not truncation:
        raise DataError(f"{what} {name} is {lengths[first]} tokens, longer than {limit} (data.max_length); "
                        f"set data.truncation=true or shorten it")
    note = (f"{len(long)} of {len(lengths)} {what} examples were longer than {limit} tokens and were truncated "
            f"(data.max_length={limit}; data.truncation=false makes this an error)")
    from rich.console import Console

    Console(stderr=True).print(f"[yellow]note:[/] {note}", highlight=False)
    return note


#: the config keys :func:`vocabulary_info` sets
VOCABULARY_KEYS = ("vocab_size", "pad_token_id", "bos_token_id", "eos_token_id")


def vocabulary_info(tokenizer: Any) -> dict[str, Any]:
    """``TaskData.info`` that sizes a randomly initialised model to garden's trained tokenizer.

    A checkpoint's own tokenizer already matches its model, so it adds nothing (resizing would
    throw the pretrained embeddings away).
    """
    if not getattr(tokenizer, "garden_trained", False):
        return {}
    values = {"vocab_size": len(tokenizer), **{k: getattr(tokenizer, k, None) for k in VOCABULARY_KEYS[1:]}}
    return {"config": {k: v for k, v in values.items() if v is not None}}
