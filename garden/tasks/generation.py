"""Generative text: causal language modelling (``causal-lm``, ``generate``) and sequence to
sequence (``summarize``, ``text2text``).

Training and evaluation use teacher forcing, so a batch runs the model once and its output is
the logits, the same through every backend and every pipeline stage. ``mode=infer`` batches are
prompts instead: ``forward`` then calls ``model.generate`` (``infer.max_new_tokens``,
``infer.do_sample``) and ``predict`` decodes the new tokens. Generation needs the whole model,
so it runs on the local backend.

Data, offline by default:

- ``causal-lm``/``generate``: the lines of ``garden/tasks/data/lm_corpus.txt``; ``data.path`` a
  .txt (one text per line) or a .csv/.json/.jsonl with a ``text`` field
  (``data.options.text_field``), ``data.hub`` a Hub dataset with a ``text`` column.
- ``summarize``: ``summaries.jsonl`` (``document`` -> ``summary``).
- ``text2text``: ``translation_en_fr.jsonl`` (``translation.en`` -> ``translation.fr``).
  ``data.options.dataset`` picks another shipped dataset, ``data.options.source``/``target``
  other (dotted) fields; ``task.prefix`` is put before every source (T5's
  ``"translate English to French: "``). Switching a T5 run to summaries::

      python -m garden model=t5 task=text2text task.prefix="summarize: " data.options.dataset=summaries.jsonl
"""

from __future__ import annotations

import functools
import inspect
import math
from pathlib import Path
from typing import Any, Sequence

from garden.errors import ConfigError, DataError, needs
from garden.tasks.base import Task, TaskData, batches, limit, split
from garden.text import (
    check_fields,
    default_data,
    fit_lengths,
    hub_records,
    load_records,
    max_length,
    read_inputs,
    vocabulary_info,
)

IGNORE = -100
#: shipped seq2seq datasets and their (source, target) fields
SEQ2SEQ_DATA = {
    "summaries.jsonl": ("document", "summary"),
    "translation_en_fr.jsonl": ("translation.en", "translation.fr"),
}


def padded(rows: Sequence[Sequence[int]], value: int, *, left: bool = False):
    """``rows`` as one (batch, longest) tensor, filled with ``value`` on the right (or left)."""
    import torch

    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), value, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            start = width - len(r) if left else 0
            out[i, start:start + len(r)] = torch.tensor(r)
    return out


def field(row: dict[str, Any], path: str, where: str, number: int) -> str:
    """The value at a dotted ``path`` (``translation.en``) of ``row``, as text."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or value.get(part) is None:
            raise DataError(f"{where}: row {number} has no field '{path}'; set data.options.source/target "
                            f"to the fields that hold the text")
        value = value[part]
    return str(value)


def tokenize(tokenizer: Any, texts: list[str], size: int, *, truncation: bool, what: str,
             names: Sequence[str] | None = None) -> list[list[int]]:
    """Token ids of ``texts`` (with the tokenizer's special tokens), truncated to ``size`` with a note."""
    ids = tokenizer(texts)["input_ids"]
    if fit_lengths([len(i) for i in ids], size, truncation=truncation, what=what, names=names):
        ids = tokenizer(texts, truncation=True, max_length=size)["input_ids"]
    return ids


def no_cache(model: Any) -> dict[str, bool]:
    """``use_cache=False`` where the model's forward takes it: teacher forcing reads every
    position's logits at once, so a decoding cache would only cost memory (a training step would
    keep every layer's keys and values); hybrid models whose layers hold no attention (a tiny
    Bamba, Jamba) cannot even size one, and FSMT builds its decoder's causal mask only without
    one (with its config's ``use_cache=True`` it would train on the tokens it predicts)."""
    return {"use_cache": False} if _takes_use_cache(type(model)) else {}


@functools.lru_cache(maxsize=None)
def _takes_use_cache(cls: type) -> bool:
    parameters = inspect.signature(cls.forward).parameters
    return "use_cache" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class Generative(Task):
    """What causal and seq2seq LMs share: prompt batches generate, ``predict`` decodes."""

    greater_is_better = False
    #: a decoder-only model continues its prompt; an encoder-decoder starts a new sequence
    decoder_only = True
    #: the batch tensors the model (and the first pipeline stage) reads, in order
    input_names: tuple[str, ...] = ("input_ids", "attention_mask")
    #: the field read from .jsonl/.csv files given as infer.inputs
    input_field = "text"
    tokenizer: Any = None
    settings: Any = None

    def use_tokenizer(self, cfg: Any, tokenizer: Any) -> None:
        if tokenizer is None:
            raise ConfigError(f"task '{self.name}' needs a tokenizer, but model '{cfg.model.name}' has none")
        self.tokenizer, self.settings = tokenizer, cfg.infer

    @property
    def pad_id(self) -> int:
        tok = self.tokenizer
        return tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        if batch.get("generate"):
            return self.generate(model, batch)
        return model(**{k: batch[k] for k in self.input_names}, **no_cache(model)).logits

    def generate(self, model: Any, batch: dict[str, Any]) -> Any:
        """The new token ids for a batch of prompts, padded with the pad id."""
        settings = self.settings
        start = {} if self.decoder_only else {"decoder_start_token_id": self.start_id}
        out = model.generate(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
            max_new_tokens=settings.max_new_tokens if settings else 20,
            do_sample=bool(settings.do_sample) if settings else False,
            pad_token_id=self.pad_id, eos_token_id=self.tokenizer.eos_token_id, **start,
        )
        return out[:, batch["input_ids"].shape[1]:] if self.decoder_only else out

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        texts = self.tokenizer.batch_decode(output.tolist(), skip_special_tokens=True)
        rows = []
        for i, text in enumerate(texts):
            row = {"input": batch["input_names"][i], "prompt": batch["prompts"][i], "output": text.strip()}
            if batch.get("references"):
                row["reference"] = batch["references"][i]
            rows.append(row)
        return rows

    def prompts(self, items: list[tuple[str, str]], references: list[str] | None = None) -> list[dict]:
        """Prompt examples (``mode=infer``): ``(name, text)`` pairs, tokenized."""
        size = max_length(self.data_cfg, self.tokenizer)
        texts = [self.source_text(t) for _, t in items]
        ids = tokenize(self.tokenizer, texts, size, truncation=True, what=f"{self.name} prompt",
                       names=[n for n, _ in items])
        return [{"input_ids": i, "prompt": t, "input_name": n, **({"reference": references[k]} if references else {})}
                for k, (i, (n, t)) in enumerate(zip(ids, items))]

    def source_text(self, text: str) -> str:
        return text

    def collate_prompts(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        """Prompts padded on the left for a decoder-only model (generation continues at the right edge)."""
        rows = [e["input_ids"] for e in examples]
        batch = {"input_ids": padded(rows, self.pad_id, left=self.decoder_only),
                 "attention_mask": padded([[1] * len(r) for r in rows], 0, left=self.decoder_only),
                 "generate": True, "prompts": [e["prompt"] for e in examples],
                 "input_names": [e["input_name"] for e in examples]}
        if "reference" in examples[0]:
            batch["references"] = [e["reference"] for e in examples]
        return batch

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        return self.prompts(read_inputs(pattern, self.input_field))


class CausalLM(Generative):
    """Next-token prediction; eval loss and perplexity; infer continues prompts."""

    name = "causal-lm"
    metric = "perplexity"

    def texts(self, cfg: Any) -> tuple[list[str], str]:
        data, key = cfg.data, cfg.data.options.get("text_field", "text")
        if data.path and str(data.path).lower().endswith(".txt"):
            file = Path(data.path).expanduser()
            if not file.is_file():
                raise DataError(f"data.path={data.path} does not exist; give a .txt (one text per line) or "
                                f".csv/.json/.jsonl with a '{key}' field")
            lines, source = file.read_text(encoding="utf-8").splitlines(), f"file {data.path}"
        elif data.path:
            lines, source = [str(r[key]) for r in load_records(data.path, (key,), self.name)], f"file {data.path}"
        elif data.hub:
            rows = check_fields(hub_records(data.hub), (key,), self.name, f"data.hub={data.hub}")
            lines, source = [str(r[key]) for r in rows], f"hub {data.hub}"
        else:
            lines = default_data("lm_corpus.txt").read_text(encoding="utf-8").splitlines()
            source = "garden's lm_corpus.txt"
        return [ln.strip() for ln in lines if ln.strip()], source

    def load(self, cfg: Any, tokenizer: Any) -> TaskData:
        self.use_tokenizer(cfg, tokenizer)
        self.data_cfg = cfg.data
        lines, source = self.texts(cfg)
        train, held_out = split(lines, cfg.data.eval_fraction, cfg.seed)
        train, held_out = limit(train, cfg.data.limit), limit(held_out, cfg.data.eval_limit)
        if cfg.mode == "infer":  # continue the first half of each held-out text
            halves = [" ".join(t.split()[: max(1, len(t.split()) // 2)]) for t in held_out]
            eval_examples = self.prompts([(f"held-out {i}", h) for i, h in enumerate(halves, 1)], held_out)
        else:
            eval_examples = self.encode(held_out, max_length(cfg.data, tokenizer), cfg.data.truncation)
        return TaskData(train=self.encode(train, max_length(cfg.data, tokenizer), cfg.data.truncation),
                        eval=eval_examples, collate=self.collate, info=vocabulary_info(tokenizer), source=source)

    def encode(self, texts: list[str], size: int, truncation: bool) -> list[dict[str, Any]]:
        """Each text as one example, ending in the end-of-text token so the model learns to stop."""
        eos = self.tokenizer.eos_token_id
        ids = tokenize(self.tokenizer, texts, size - 1, truncation=truncation, what=self.name)
        return [{"input_ids": i if i and i[-1] == eos else [*i, eos]} for i in ids]

    def collate(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        if "prompt" in examples[0]:
            return self.collate_prompts(examples)
        rows = [e["input_ids"] for e in examples]
        return {"input_ids": padded(rows, self.pad_id), "attention_mask": padded([[1] * len(r) for r in rows], 0),
                "labels": padded(rows, IGNORE)}

    def loss_units(self, target: Any) -> float:
        return float((target[:, 1:] != IGNORE).sum())

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        logits = output[:, :-1].float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target[:, 1:].reshape(-1), ignore_index=IGNORE)

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        import torch.nn.functional as F

        total, count = 0.0, 0
        for logits, batch in zip(outputs, batches):
            labels = batch["labels"][:, 1:]
            logits = logits[:, :-1].float()
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                     ignore_index=IGNORE, reduction="sum").item()
            count += int((labels != IGNORE).sum())
        loss = total / max(1, count)
        return {"loss": loss, "perplexity": math.exp(min(loss, 50.0))}

    def baseline(self, data: TaskData) -> dict[str, Any]:
        """Unigram perplexity: every next token predicted by its frequency in the train split."""
        from collections import Counter

        counts, held_out = Counter(targets(data.train, data.collate, 1)), targets(data.eval, data.collate, 1)
        seen, vocabulary = sum(counts.values()), len(self.tokenizer)
        nll = -sum(math.log((counts[t] + 1) / (seen + vocabulary)) for t in held_out) / len(held_out)
        return self.baseline_of("unigram model of the training split (add-one smoothing)", math.exp(nll))


class Generate(CausalLM):
    """GPT-2's text generation: infer-first (``mode=infer``), trained as a causal LM."""

    name = "generate"


class Seq2Seq(Generative):
    """Source text -> target text with teacher forcing (``text2text``; default data translates en -> fr).

    Eval reports the loss and the token accuracy: each target token predicted from the true
    prefix, compared position by position. (ROUGE and BLEU of teacher-forced predictions would
    reward a model that merely repeats its previous input token; an untrained tied-embedding
    model scores BLEU 100 that way.) ROUGE-L F1 (``rouge-score``) and BLEU (``sacrebleu``) of
    real generations come with ``mode=infer`` on the held-out split, one per prediction, beside
    the reference.
    """

    name = "text2text"
    metric = "token_accuracy"
    greater_is_better = True
    decoder_only = False
    input_names = ("input_ids", "attention_mask", "decoder_input_ids")
    input_field = "source"
    default_dataset = "translation_en_fr.jsonl"
    #: the fields read from the user's own file (``data.path``) unless data.options names others
    file_fields = ("source", "target")

    def pairs(self, cfg: Any) -> tuple[list[tuple[str, str]], str]:
        options = cfg.data.options
        if cfg.data.path or cfg.data.hub:
            src, tgt = options.get("source", self.file_fields[0]), options.get("target", self.file_fields[1])
        else:
            name = options.get("dataset", self.default_dataset)
            if name not in SEQ2SEQ_DATA:
                raise DataError(f"data.options.dataset={name} is not a shipped seq2seq dataset; choose one of: "
                                f"{', '.join(SEQ2SEQ_DATA)}, or give data.path=FILE")
            src, tgt = options.get("source", SEQ2SEQ_DATA[name][0]), options.get("target", SEQ2SEQ_DATA[name][1])
        roots = tuple(dict.fromkeys(f.split(".")[0] for f in (src, tgt)))
        if cfg.data.path:
            rows, where, source = load_records(cfg.data.path, roots, self.name), f"data.path={cfg.data.path}", \
                f"file {cfg.data.path}"
        elif cfg.data.hub:
            where, source = f"data.hub={cfg.data.hub}", f"hub {cfg.data.hub}"
            rows = check_fields(hub_records(cfg.data.hub), roots, self.name, where)
        else:
            path = default_data(name)
            rows, where, source = load_records(path, roots, self.name), str(path), f"garden's {name}"
        return [(field(r, src, where, n), field(r, tgt, where, n)) for n, r in enumerate(rows, start=1)], source

    def load(self, cfg: Any, tokenizer: Any) -> TaskData:
        self.use_tokenizer(cfg, tokenizer)
        self.data_cfg, self.prefix = cfg.data, cfg.task.prefix or ""
        start = getattr(self.family, "decoder_start_token", "pad_token")
        self.start_id = getattr(tokenizer, f"{start}_id")
        pairs, source = self.pairs(cfg)
        train, held_out = split(pairs, cfg.data.eval_fraction, cfg.seed)
        train, held_out = limit(train, cfg.data.limit), limit(held_out, cfg.data.eval_limit)
        size = max_length(cfg.data, tokenizer)
        if cfg.mode == "infer":
            eval_examples = self.prompts([(f"held-out {i}", s) for i, (s, _) in enumerate(held_out, 1)],
                                         [t for _, t in held_out])
        else:
            eval_examples = self.encode(held_out, size, cfg.data.truncation)
        return TaskData(train=self.encode(train, size, cfg.data.truncation), eval=eval_examples,
                        collate=self.collate, info=vocabulary_info(tokenizer), source=source)

    def source_text(self, text: str) -> str:
        return self.prefix + text

    def encode(self, pairs: list[tuple[str, str]], size: int, truncation: bool) -> list[dict[str, Any]]:
        sources = tokenize(self.tokenizer, [self.source_text(s) for s, _ in pairs], size, truncation=truncation,
                           what=f"{self.name} source")
        targets = tokenize(self.tokenizer, [t for _, t in pairs], size, truncation=truncation,
                           what=f"{self.name} target")
        return [{"input_ids": s, "labels": t} for s, t in zip(sources, targets)]

    def collate(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        if "prompt" in examples[0]:
            return self.collate_prompts(examples)
        rows = [e["input_ids"] for e in examples]
        return {"input_ids": padded(rows, self.pad_id), "attention_mask": padded([[1] * len(r) for r in rows], 0),
                "decoder_input_ids": padded([[self.start_id, *e["labels"][:-1]] for e in examples], self.pad_id),
                "labels": padded([e["labels"] for e in examples], IGNORE)}

    def loss_units(self, target: Any) -> float:
        return float((target != IGNORE).sum())

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.cross_entropy(output.float().reshape(-1, output.shape[-1]), target.reshape(-1), ignore_index=IGNORE)

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        import torch.nn.functional as F

        total, count, right = 0.0, 0, 0
        for logits, batch in zip(outputs, batches):
            labels = batch["labels"]
            total += F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                     ignore_index=IGNORE, reduction="sum").item()
            count += int((labels != IGNORE).sum())
            right += int(((logits.argmax(-1) == labels) & (labels != IGNORE)).sum())
        return {"loss": total / max(1, count), "token_accuracy": right / max(1, count)}

    def baseline(self, data: TaskData) -> dict[str, Any]:
        """Token accuracy of predicting the train split's most frequent target token everywhere."""
        from collections import Counter

        counts, held_out = Counter(targets(data.train, data.collate)), targets(data.eval, data.collate)
        most = max(sorted(counts), key=counts.__getitem__)
        return self.baseline_of("most frequent target token of the training split", held_out.count(most) / len(held_out))

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        rows = super().predict(output, batch, data, top_k)
        for row in rows:
            if "reference" in row:
                row.update(scores(row["output"], row["reference"]))
        return rows


class Summarize(Seq2Seq):
    """Document -> summary (default data: ``summaries.jsonl``)."""

    name = "summarize"
    input_field = "document"
    default_dataset = "summaries.jsonl"
    file_fields = ("document", "summary")


def targets(dataset: Sequence[Any], collate: Any, start: int = 0) -> list[int]:
    """The token ids a loss scores in ``dataset`` (labels from position ``start`` on, padding left out)."""
    return [t for batch in batches(dataset, collate) for row in batch["labels"][:, start:].tolist()
            for t in row if t != IGNORE]


def scores(hypothesis: str, reference: str) -> dict[str, float]:
    """ROUGE-L F1 (0-1) and sentence BLEU (0-100, smoothed) of one generated text."""
    import logging

    sacrebleu = needs("sacrebleu", "sacrebleu", "scoring generated text (BLEU)")
    rouge_scorer = needs("rouge_score.rouge_scorer", "rouge-score", "scoring generated text (ROUGE-L)")
    logging.getLogger("absl").setLevel(logging.WARNING)  # rouge-score logs every scorer it builds
    rouge = rouge_scorer.RougeScorer(["rougeL"]).score(reference, hypothesis)["rougeL"].fmeasure
    return {"rougeL": round(rouge, 4), "bleu": round(sacrebleu.sentence_bleu(hypothesis, [reference]).score, 2)}
