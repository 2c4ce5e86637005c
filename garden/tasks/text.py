"""Text understanding tasks any encoder gets for free: classify, token-classify, qa and mlm.

Each reads records from ``data.path`` (CSV/JSON/JSONL), ``data.hub`` or garden's shipped
default data (see :mod:`garden.text`), tokenizes them once with the model's tokenizer, and
batches them padded to the longest example. The family says which tensors its model reads
(``text_inputs``, e.g. BERT adds ``token_type_ids``) and may swap the default data
(``default_data``, e.g. CamemBERT's French sentences); those tensors, in that order, are what
the first pipeline stage receives.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from garden.errors import DataError
from garden.tasks.base import Classification, Task, TaskData, limit, split
from garden.text import (
    check_fields, default_data, fit_lengths, hub_records, load_records, max_length, read_inputs, vocabulary_info,
)

IGNORE = -100
WORD = re.compile(r"\w+|[^\w\s]")


class Padder:
    """Collates tokenized examples: lists of ints become tensors padded to the batch's longest.

    Keys in ``pads`` are padded with their value; other keys are kept as Python lists
    (texts, offsets), which backends pass along but never send to the model.
    """

    def __init__(self, pad_id: int):
        self.pads = {"input_ids": pad_id, "attention_mask": 0, "token_type_ids": 0, "labels": IGNORE}

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        batch: dict[str, Any] = {}
        for key in examples[0]:
            values = [e[key] for e in examples]
            if key in self.pads and isinstance(values[0], list):
                width = max(len(v) for v in values)
                batch[key] = torch.tensor([v + [self.pads[key]] * (width - len(v)) for v in values], dtype=torch.long)
            elif isinstance(values[0], int):
                batch[key] = torch.tensor(values, dtype=torch.long)
            else:
                batch[key] = values
        return batch


class TextTask(Task):
    """What the text tasks share: where records come from, the model inputs, the collate."""

    #: garden's shipped dataset when neither data.path nor data.hub is given
    default_file = ""
    #: fields every record must have (the first text field may be one of several names)
    fields: tuple[str, ...] = ()

    @property
    def model_inputs(self) -> tuple[str, ...]:
        return tuple(getattr(self.family, "text_inputs", ("input_ids", "attention_mask")))

    @property
    def input_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.model_inputs

    def records(self, cfg: Any) -> tuple[list[dict[str, Any]], str]:
        """The raw rows, and where they came from as errors name it (``data.path=reviews.csv``)."""
        data = cfg.data
        if data.path:
            return self.read_path(data.path), f"data.path={data.path}"
        if data.hub:
            where = f"data.hub={data.hub}"
            return check_fields(hub_records(data.hub), self.fields, self.name, where), where
        name = getattr(self.family, "default_data", {}).get(self.name, self.default_file)
        return load_records(default_data(name), self.fields, self.name), f"garden's {name}"

    def read_path(self, path: str) -> list[dict[str, Any]]:
        return load_records(path, self.fields, self.name)

    def encode(self, tokenizer: Any, *texts: str, limit: int) -> dict[str, list]:
        """Token ids, attention mask (and token types if the model reads them) for one example."""
        return self.model_fields(tokenizer(*texts, truncation=True, max_length=limit))

    def model_fields(self, enc: Any) -> dict[str, list]:
        out = {k: list(enc[k]) for k in ("input_ids", "attention_mask")}
        if "token_type_ids" in self.model_inputs:
            out["token_type_ids"] = list(enc.get("token_type_ids") or [0] * len(out["input_ids"]))
        return out

    def untruncated_lengths(self, tokenizer: Any, *columns: Sequence[str], **kwargs: Any) -> list[int]:
        return [len(ids) for ids in tokenizer(*[list(c) for c in columns], **kwargs)["input_ids"]]

    def split_data(self, cfg: Any, examples: list[Any]) -> tuple[list[Any], list[Any]]:
        train, held_out = split(examples, cfg.data.eval_fraction, cfg.seed)
        return limit(train, cfg.data.limit), limit(held_out, cfg.data.eval_limit)

    def model_kwargs(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {k: batch[k] for k in self.model_inputs}

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(**self.model_kwargs(batch)).logits


def first_text_field(row: dict[str, Any], candidates: Sequence[str], where: str, task: str) -> str:
    found = next((c for c in candidates if c in row), None)
    if found is None:
        raise DataError(f"{where}: row 1 has none of the fields {', '.join(candidates)} (task '{task}' needs one)")
    return found


def class_names(values: Sequence[Any]) -> tuple[str, ...]:
    """Sorted class names; integer labels sort numerically (0, 1, ..., 10)."""
    unique = set(values)
    ordered = sorted(unique, key=lambda v: (0, v, "") if isinstance(v, int) else (1, 0, str(v)))
    return tuple(str(v) for v in ordered)


# -- classify -------------------------------------------------------------------------------

PAIRS = (("sentence1", "sentence2"), ("question", "sentence"), ("premise", "hypothesis"),
         ("question1", "question2"))
SINGLES = ("sentence", "text")


class SequenceClassification(Classification, TextTask):
    """Sentence (or sentence-pair) classification; predictions are labels with scores.

    Records need a label and a text field: ``sentence`` or ``text``, or a pair such as
    ``sentence1``/``sentence2`` or ``premise``/``hypothesis`` (GLUE's names).
    """

    input_key = "text"

    name = "classify"
    metric = "accuracy"
    default_file = "sst2_like.jsonl"
    fields = ("label",)

    def text_columns(self, row: dict[str, Any], where: str) -> tuple[str, ...]:
        pair = next((p for p in PAIRS if all(k in row for k in p)), None)
        return pair or (first_text_field(row, SINGLES, where, self.name),)

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        rows, source = self.records(cfg)
        columns = self.text_columns(rows[0], source)
        check_fields(rows, (*columns, "label"), self.name, source)
        names = class_names([r["label"] for r in rows])
        index = {n: i for i, n in enumerate(names)}
        size = max_length(cfg.data, preprocessor)
        lengths = self.untruncated_lengths(preprocessor, *[[str(r[c]) for r in rows] for c in columns])
        fit_lengths(lengths, size, truncation=cfg.data.truncation, what=source,
                    names=[f"row {i + 1}" for i in range(len(rows))])
        examples = [
            {**self.encode(preprocessor, *[str(r[c]) for c in columns], limit=size),
             "labels": index[str(r["label"])], "text": " | ".join(str(r[c]) for c in columns)}
            for r in rows
        ]
        train, held_out = self.split_data(cfg, examples)
        return TaskData(train=train, eval=held_out, collate=Padder(preprocessor.pad_token_id), labels=names,
                        info=vocabulary_info(preprocessor), source=source)

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        size = max_length_of(preprocessor)
        return [{**self.encode(preprocessor, text, limit=size), "text": text}
                for _, text in read_inputs(pattern, "sentence")]


def max_length_of(tokenizer: Any) -> int:
    """The longest input the model takes, for the user's infer inputs (truncated to it)."""
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if limit and limit < 1_000_000 else 512


# -- token-classify -------------------------------------------------------------------------

def words_with_spans(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Words and punctuation of ``text`` with their character spans."""
    matches = list(WORD.finditer(text))
    return [m.group() for m in matches], [m.span() for m in matches]


def joined(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """Words joined by spaces, with each word's character span in the result."""
    spans, at = [], 0
    for w in words:
        spans.append((at, at + len(w)))
        at += len(w) + 1
    return " ".join(words), spans


def align_labels(word_ids: Sequence[int | None], word_labels: Sequence[int]) -> list[int]:
    """Word labels on each word's first subword token; ``-100`` on later subwords and special tokens.

    >>> align_labels([None, 0, 0, 1, None], [3, 5])
    [-100, 3, -100, 5, -100]
    """
    out, previous = [], None
    for w in word_ids:
        out.append(IGNORE if w is None or w == previous else word_labels[w])
        previous = w
    return out


def entities(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """IOB2 tags as ``(type, first word, last word + 1)`` chunks; a stray ``I-`` starts a chunk."""
    found, current = [], None
    for i, tag in enumerate([*tags, "O"]):
        kind = tag[2:] if tag[:2] in ("B-", "I-") else None
        if current and (kind != current[0] or tag.startswith("B-")):
            found.append((current[0], current[1], i))
            current = None
        if kind and current is None:
            current = (kind, i)
    return found


class TokenClassification(TextTask):
    """Named-entity recognition on word-level IOB2 tags (``tokens`` + ``ner_tags``, CoNLL-style).

    Each word's label sits on its first subword; infer prints entities with character spans.
    Metrics: entity-level F1 (a predicted entity counts when type and words match exactly) and
    token accuracy.
    """

    name = "token-classify"
    metric = "f1"
    default_file = "conll_like.jsonl"
    fields = ("tokens", "ner_tags")

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        rows, source = self.records(cfg)
        for number, r in enumerate(rows, start=1):
            if not isinstance(r["tokens"], list) or len(r["tokens"]) != len(r["ner_tags"]):
                raise DataError(f"{source}: row {number} has {len(r['tokens'])} tokens but "
                                f"{len(r['ner_tags'])} ner_tags; give one tag per token")
        tags = {str(t) for r in rows for t in r["ner_tags"]}
        names = tuple(sorted(tags, key=lambda t: (t != "O", t[2:], t)))
        self.names = names
        index = {n: i for i, n in enumerate(names)}
        size = max_length(cfg.data, preprocessor)
        lengths = self.untruncated_lengths(preprocessor, [r["tokens"] for r in rows], is_split_into_words=True)
        fit_lengths(lengths, size, truncation=cfg.data.truncation, what=source,
                    names=[f"row {i + 1}" for i in range(len(rows))])
        examples = [self.example(preprocessor, [str(w) for w in r["tokens"]], size,
                                 [index[str(t)] for t in r["ner_tags"]]) for r in rows]
        train, held_out = self.split_data(cfg, examples)
        return TaskData(train=train, eval=held_out, collate=Padder(preprocessor.pad_token_id), labels=names,
                        info=vocabulary_info(preprocessor), source=source)

    def example(self, tokenizer: Any, words: list[str], size: int, labels: list[int] | None = None,
                text: str | None = None, spans: list[tuple[int, int]] | None = None) -> dict[str, Any]:
        enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=size)
        word_ids = enc.word_ids()
        if text is None:
            text, spans = joined(words)
        out = {**self.model_fields(enc), "word_ids": [-1 if w is None else w for w in word_ids],
               "text": text, "spans": spans}
        out["labels"] = align_labels(word_ids, labels if labels is not None else [IGNORE] * len(words))
        return out

    def loss_units(self, target: Any) -> float:
        return float((target != IGNORE).sum())

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(output.float().flatten(0, 1), target.flatten(), ignore_index=IGNORE)

    def word_predictions(self, output: Any, batch: dict[str, Any]) -> list[list[tuple[int, float]]]:
        """Per example, per word: the predicted label index and its probability (first subword's)."""
        probs = output.float().softmax(-1)
        scores, labels = probs.max(-1)
        result = []
        for i, word_ids in enumerate(batch["word_ids"]):
            words, previous = [], -1
            for t, w in enumerate(word_ids):
                if w >= 0 and w != previous:
                    words.append((int(labels[i, t]), float(scores[i, t])))
                previous = w
            result.append(words)
        return result

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        names = self.names
        correct = total = true_positive = predicted = gold = 0
        losses, tokens = 0.0, 0
        for output, batch in zip(outputs, batches):
            mask = batch["labels"] != IGNORE
            losses += self.loss(output, batch["labels"]).item() * int(mask.sum())
            tokens += int(mask.sum())
            for words, labels in zip(self.word_predictions(output, batch), batch["labels"]):
                truth = labels[labels != IGNORE].tolist()
                guess = [p for p, _ in words][: len(truth)]
                correct += sum(int(a == b) for a, b in zip(guess, truth))
                total += len(truth)
                gold_set = set(entities([names[t] for t in truth]))
                guess_set = set(entities([names[p] for p in guess]))
                true_positive += len(gold_set & guess_set)
                predicted += len(guess_set)
                gold += len(gold_set)
        precision = true_positive / predicted if predicted else 0.0
        recall = true_positive / gold if gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"f1": f1, "precision": precision, "recall": recall,
                "accuracy": correct / total if total else 0.0, "loss": losses / tokens if tokens else 0.0}

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        names = data.labels or ()
        rows = []
        for i, words in enumerate(self.word_predictions(output, batch)):
            text, spans = batch["text"][i], batch["spans"][i]
            tags = [names[p] for p, _ in words]
            found = []
            for kind, first, last in entities(tags):
                start, end = spans[first][0], spans[last - 1][1]
                score = sum(s for _, s in words[first:last]) / (last - first)
                found.append({"label": f"{kind}: {text[start:end]}", "entity": kind, "text": text[start:end],
                              "start": start, "end": end, "score": round(score, 6)})
            rows.append({"input": text, "predictions": found, "tags": tags})
        return rows

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        size = max_length_of(preprocessor)
        examples = []
        for _, text in read_inputs(pattern, "sentence"):
            words, spans = words_with_spans(text)
            if not words:
                raise DataError(f"infer.inputs={pattern}: an input has no words to tag")
            examples.append(self.example(preprocessor, words, size, text=text, spans=spans))
        return examples


# -- qa -------------------------------------------------------------------------------------

def normalize_answer(text: str) -> str:
    """SQuAD's normalization: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def answer_f1(prediction: str, truth: str) -> float:
    guess, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    common = sum((Counter(guess) & Counter(gold)).values())
    if not common:
        return float(guess == gold)
    precision, recall = common / len(guess), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def answer_positions(offsets: Sequence[tuple[int, int]], sequence_ids: Sequence[int | None],
                     start_char: int, end_char: int) -> tuple[int, int]:
    """The first and last context tokens covering characters ``[start_char, end_char)``.

    ``(0, 0)`` (the first token) when truncation cut the answer out of the context, as in
    SQuAD 2.0 training.

    >>> answer_positions([(0, 0), (0, 3), (0, 0), (0, 4), (5, 9), (0, 0)], [None, 0, None, 1, 1, None], 5, 9)
    (4, 4)
    """
    context = [i for i, s in enumerate(sequence_ids) if s == 1]
    if not context or offsets[context[0]][0] > start_char or offsets[context[-1]][1] < end_char:
        return 0, 0
    start = next(i for i in context if offsets[i][1] > start_char)
    end = next(i for i in reversed(context) if offsets[i][0] < end_char)
    return start, end


class QuestionAnswering(TextTask):
    """Extractive question answering, SQuAD-style: predict the answer's start and end tokens.

    Records hold ``question``, ``context`` and ``answers`` (``{"text": [...], "answer_start": [...]}``;
    a SQuAD v1.1 JSON file is flattened to these). Contexts too long for the model are
    truncated (with a note). Metrics: SQuAD exact match and F1.
    """

    name = "qa"
    metric = "f1"
    default_file = "squad_like.json"
    fields = ("question", "context", "answers")
    max_answer_tokens = 30

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        rows, source = self.records(cfg)
        size = max_length(cfg.data, preprocessor)
        lengths = self.untruncated_lengths(preprocessor, [r["question"] for r in rows], [r["context"] for r in rows])
        fit_lengths(lengths, size, truncation=cfg.data.truncation, what=source,
                    names=[f"row {i + 1} (id {r.get('id', '')})" for i, r in enumerate(rows)])
        examples = []
        for number, r in enumerate(rows, start=1):
            answers = r["answers"]
            if not answers.get("text") or len(answers["text"]) != len(answers.get("answer_start", [])):
                raise DataError(f"{source}: row {number} has no answer (answers.text and answers.answer_start)")
            example = self.example(preprocessor, r["question"], r["context"], size)
            start_char = int(answers["answer_start"][0])
            end_char = start_char + len(answers["text"][0])
            if r["context"][start_char:end_char] != answers["text"][0]:
                raise DataError(f"{source}: row {number} answer '{answers['text'][0]}' is not at "
                                f"answer_start={start_char} of its context")
            example["start_positions"], example["end_positions"] = answer_positions(
                example["offsets"], example["sequence_ids"], start_char, end_char)
            example["answers"] = list(answers["text"])
            examples.append(example)
        train, held_out = self.split_data(cfg, examples)
        return TaskData(train=train, eval=held_out, collate=Padder(preprocessor.pad_token_id),
                        info=vocabulary_info(preprocessor), source=source)

    def example(self, tokenizer: Any, question: str, context: str, size: int) -> dict[str, Any]:
        enc = tokenizer(question, context, truncation="only_second", max_length=size, return_offsets_mapping=True)
        sequence_ids = enc.sequence_ids()
        return {**self.model_fields(enc), "offsets": [tuple(o) for o in enc["offset_mapping"]],
                "sequence_ids": [-1 if s is None else s for s in sequence_ids],
                "context": context, "question": question}

    def target(self, batch: dict[str, Any]) -> Any:
        import torch

        return torch.stack([batch["start_positions"], batch["end_positions"]], dim=-1)

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        out = model(**self.model_kwargs(batch))
        return out.start_logits, out.end_logits

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        start, end = output
        return (F.cross_entropy(start.float(), target[:, 0]) + F.cross_entropy(end.float(), target[:, 1])) / 2

    def spans(self, output: Any, batch: dict[str, Any]) -> list[tuple[str, int, int, float]]:
        """The best context span per example: its text, character start and end, and probability."""
        import torch

        start_probs, end_probs = (o.float().softmax(-1) for o in output)
        found = []
        for i, sequence_ids in enumerate(batch["sequence_ids"]):
            context_mask = torch.tensor([s == 1 for s in sequence_ids] +
                                        [False] * (start_probs.shape[1] - len(sequence_ids)))
            scores = start_probs[i][:, None] * end_probs[i][None, :]
            allowed = context_mask[:, None] & context_mask[None, :]
            allowed &= torch.ones_like(allowed).triu() & ~torch.ones_like(allowed).triu(self.max_answer_tokens)
            scores = scores.masked_fill(~allowed, -1.0)
            best = int(scores.argmax())
            s, e = divmod(best, scores.shape[1])
            offsets = batch["offsets"][i]
            if scores[s, e] < 0:
                found.append(("", 0, 0, 0.0))
                continue
            start, end = offsets[s][0], offsets[e][1]
            found.append((batch["context"][i][start:end], start, end, float(scores[s, e])))
        return found

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        exact = f1 = loss = 0.0
        count = 0
        for output, batch in zip(outputs, batches):
            n = len(batch["answers"])
            loss += self.loss(output, self.target(batch)).item() * n
            for (text, *_), answers in zip(self.spans(output, batch), batch["answers"]):
                exact += max(float(normalize_answer(text) == normalize_answer(a)) for a in answers)
                f1 += max(answer_f1(text, a) for a in answers)
            count += n
        return {"exact_match": exact / count, "f1": f1 / count, "loss": loss / count}

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        rows = []
        for i, (text, start, end, score) in enumerate(self.spans(output, batch)):
            row: dict[str, Any] = {"input": batch["question"][i], "context": batch["context"][i]}
            if "answers" in batch:
                row["label"] = batch["answers"][i][0]
            row["predictions"] = [{"label": text, "start": start, "end": end, "score": round(score, 6)}]
            rows.append(row)
        return rows

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        size = max_length_of(preprocessor)
        suffix = Path(pattern).suffix.lower()
        if suffix in (".json", ".jsonl", ".csv") and Path(pattern).expanduser().is_file():
            pairs = [(r["question"], r["context"]) for r in load_records(pattern, ("question", "context"), self.name)]
        elif "|||" in pattern:
            question, _, context = pattern.partition("|||")
            pairs = [(question.strip(), context.strip())]
        else:
            raise DataError(f"infer.inputs={pattern}: qa needs a question and a context; give a .jsonl/.json/.csv "
                            f"file with fields question, context, or 'QUESTION ||| CONTEXT'")
        return [self.example(preprocessor, q, c, size) for q, c in pairs]


# -- mlm ------------------------------------------------------------------------------------

def mask_tokens(ids: Sequence[int], special: Sequence[int], mask_id: int, vocab_size: int, generator: Any,
                probability: float = 0.15) -> tuple[list[int], list[int]]:
    """BERT's masking: pick ``probability`` of the ordinary tokens (at least one) to predict;
    of those, 80% become the mask token, 10% a random token, 10% stay. Returns (inputs, labels).
    """
    import torch

    candidates = torch.tensor([not s for s in special])
    picked = (torch.rand(len(ids), generator=generator) < probability) & candidates
    if not picked.any() and candidates.any():
        choices = candidates.nonzero().flatten()
        picked[choices[torch.randint(len(choices), (1,), generator=generator)]] = True
    roll = torch.rand(len(ids), generator=generator)
    random_ids = torch.randint(vocab_size, (len(ids),), generator=generator)
    inputs, labels = list(ids), [IGNORE] * len(ids)
    for i in picked.nonzero().flatten().tolist():
        labels[i] = ids[i]
        inputs[i] = mask_id if roll[i] < 0.8 else int(random_ids[i]) if roll[i] < 0.9 else ids[i]
    return inputs, labels


class MaskedLM(TextTask):
    """Masked language modelling: 15% of tokens masked (seeded, so runs repeat), predicted back.

    Records are lines of a .txt file or rows with a ``text``/``sentence`` field. Infer fills the
    mask token (``[MASK]`` or ``<mask>``, whichever the model uses) in the user's sentences with
    the top-k tokens and their scores. Metrics: masked-token accuracy, loss and perplexity.
    """

    name = "mlm"
    metric = "accuracy"
    default_file = "lm_corpus.txt"
    fields = ()
    masking = 0.15

    def records(self, cfg: Any) -> tuple[list[dict[str, Any]], str]:
        data = cfg.data
        if data.path or data.hub:
            rows, source = super().records(cfg)
        else:
            name = getattr(self.family, "default_data", {}).get(self.name, self.default_file)
            rows, source = self.read_path(str(default_data(name))), f"garden's {name}"
        column = first_text_field(rows[0], ("text", "sentence", "document"), source, self.name)
        return [{"text": str(r[column])} for r in check_fields(rows, (column,), self.name, source)], source

    def read_path(self, path: str) -> list[dict[str, Any]]:
        if Path(path).suffix.lower() == ".txt":
            file = Path(path).expanduser()
            if not file.is_file():
                raise DataError(f"data.path={path} does not exist; point it at a .txt/.jsonl/.csv file of text")
            return [{"text": ln.strip()} for ln in file.read_text(encoding="utf-8").splitlines() if ln.strip()]
        return load_records(path, (), self.name)

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        import torch

        rows, source = self.records(cfg)
        self.tokenizer = preprocessor
        size = max_length(cfg.data, preprocessor)
        texts = [r["text"] for r in rows]
        fit_lengths(self.untruncated_lengths(preprocessor, texts), size, truncation=cfg.data.truncation,
                    what=source, names=[f"row {i + 1}" for i in range(len(rows))])
        generator = torch.Generator().manual_seed(cfg.seed)
        examples = [self.masked(preprocessor, text, size, generator) for text in texts]
        train, held_out = self.split_data(cfg, examples)
        return TaskData(train=train, eval=held_out, collate=Padder(preprocessor.pad_token_id),
                        info=vocabulary_info(preprocessor), source=source)

    def masked(self, tokenizer: Any, text: str, size: int, generator: Any) -> dict[str, Any]:
        example = self.encode(tokenizer, text, limit=size)
        special = tokenizer.get_special_tokens_mask(example["input_ids"], already_has_special_tokens=True)
        example["input_ids"], example["labels"] = mask_tokens(
            example["input_ids"], special, tokenizer.mask_token_id, len(tokenizer), generator, self.masking)
        example["text"] = text
        return example

    def loss_units(self, target: Any) -> float:
        return float((target != IGNORE).sum())

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(output.float().flatten(0, 1), target.flatten(), ignore_index=IGNORE)

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        correct = total = 0
        loss = 0.0
        for output, batch in zip(outputs, batches):
            labels = batch["labels"]
            mask = labels != IGNORE
            n = int(mask.sum())
            loss += self.loss(output, labels).item() * n
            correct += int((output.argmax(-1)[mask] == labels[mask]).sum())
            total += n
        mean = loss / total if total else 0.0
        return {"accuracy": correct / total if total else 0.0, "loss": mean, "perplexity": math.exp(min(mean, 50))}

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        tokenizer = self.tokenizer
        probs = output.float().softmax(-1)
        rows = []
        for i in range(len(batch["text"])):
            positions = (batch["labels"][i] != IGNORE).nonzero().flatten().tolist() if "labels" in batch else []
            if not positions:
                positions = (batch["input_ids"][i] == tokenizer.mask_token_id).nonzero().flatten().tolist()
            predictions, filled = [], batch["input_ids"][i].tolist()
            for position in positions:
                scores, ids = probs[i, position].topk(min(top_k, probs.shape[-1]))
                filled[position] = int(ids[0])
                predictions += [{"label": tokenizer.decode([int(t)]).strip(), "score": round(float(s), 6),
                                 "position": position} for s, t in zip(scores, ids)]
            row = {"input": batch["text"][i], "predictions": predictions,
                   "filled": tokenizer.decode(filled, skip_special_tokens=True)}
            rows.append(row)
        return rows

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        size = max_length_of(preprocessor)
        examples = []
        for name, text in read_inputs(pattern, "sentence"):
            text = text.replace("[MASK]", preprocessor.mask_token).replace("<mask>", preprocessor.mask_token)
            example = {**self.encode(preprocessor, text, limit=size), "text": text}
            if preprocessor.mask_token_id not in example["input_ids"]:
                raise DataError(f"infer.inputs: '{text}' ({name}) has no {preprocessor.mask_token} to fill; "
                                f"put {preprocessor.mask_token} where a word should be predicted")
            examples.append(example)
        return examples
