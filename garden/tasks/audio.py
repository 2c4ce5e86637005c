"""Speech tasks: raw 16 kHz waveforms -> CTC transcripts (``asr``) or class labels (``audio-classify``).

Default data is 204 short English utterances (digits, commands, short sentences) that eSpeak NG
spoke for garden in six voices, shipped in ``garden/tasks/data/speech`` so runs work offline
(docs/speech_data.md). ``data.path=DIR`` reads a folder of WAV/FLAC files with a transcripts
CSV (``file,transcript[,speaker,label]``, LibriSpeech-style) or, for ``audio-classify``,
class sub-folders (``DIR/<label>/<file>.wav``, Speech Commands-style); ``data.hub=NAME`` a Hub
audio dataset. Audio at another rate is resampled to ``data.sample_rate`` with a note; a file
that cannot be decoded stops the run with one line naming it, or is skipped with a warning
under ``data.skip_unreadable=true`` (:class:`garden.errors.Unreadable`, as for images and text).

A model without a pretrained vocabulary learns a character-level CTC vocabulary from the
transcripts, saved with the model: the task asks the model's family for a tokenizer over those
characters (``family.character_tokenizer(texts)``, as
:class:`garden.families.speech.SpeechEncoderFamily` provides it).
"""

from __future__ import annotations

import csv
import functools
import glob
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from garden.errors import ConfigError, DataError, needs, unreadable
from garden.tasks.base import Classification, Task, TaskData, limit, split

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg")
FILE_COLUMNS = ("file", "path", "audio")
TEXT_COLUMNS = ("transcript", "text", "sentence")


@dataclass(frozen=True)
class Utterance:
    """One decoded recording: mono float32 samples at the task's rate, and its CSV row."""

    name: str
    audio: Any
    row: dict[str, str]


def say_note(note: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[yellow]note:[/] {note}", highlight=False)


def default_speech() -> Path:
    from garden.compat import package_files as files

    return Path(str(files("garden.tasks") / "data" / "speech"))


class AudioReader:
    """Decodes audio files with soundfile, resampling to ``rate``; a file that does not decode is
    refused or skipped as :class:`garden.errors.Unreadable` says."""

    def __init__(self, rate: int):
        self.rate = rate
        self.resampled: dict[int, int] = {}

    def read(self, path: Path) -> Any:
        """The file's samples as mono float32 at ``rate``, or ``None`` for a skipped file."""
        import numpy as np

        soundfile = needs("soundfile", "soundfile", "reading audio")
        try:
            audio, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
        except Exception as err:  # soundfile raises several types for missing and corrupt files
            reason = str(err).splitlines()[0] if str(err) else type(err).__name__
            unreadable().found(f"cannot decode audio file {path} ({reason})", "audio file")
            return None
        audio = audio.mean(axis=1)
        if rate != self.rate:
            resample_poly = needs("scipy.signal", "scipy", "resampling audio").resample_poly
            step = math.gcd(rate, self.rate)
            audio = resample_poly(audio, self.rate // step, rate // step).astype(np.float32)
            self.resampled[rate] = self.resampled.get(rate, 0) + 1
        return audio

    def notes(self) -> None:
        """Print what was resampled, once per run."""
        for rate, count in sorted(self.resampled.items()):
            say_note(f"{count} audio file(s) at {rate} Hz were resampled to {self.rate} Hz (data.sample_rate)")


def first_column(columns: Sequence[str], wanted: Sequence[str], where: Any) -> str:
    found = next((c for c in wanted if c in columns), None)
    if found is None:
        raise DataError(f"{where} has columns {list(columns)}; it needs one of: {', '.join(wanted)}")
    return found


def transcripts_csv(root: Path) -> Path | None:
    """``transcripts.csv`` in ``root``, else its only CSV file, else ``None``."""
    if (root / "transcripts.csv").exists():
        return root / "transcripts.csv"
    found = sorted(root.glob("*.csv"))
    if len(found) > 1:
        raise DataError(f"data.path={root} holds {len(found)} CSV files; name the transcripts file "
                        f"transcripts.csv or point data.path at it")
    return found[0] if found else None


def read_folder(path: str | Path, reader: AudioReader) -> list[Utterance]:
    """Utterances from a folder (or CSV file) of audio with a transcripts CSV, or class sub-folders."""
    where = Path(path).expanduser()
    if not where.exists():
        raise DataError(f"data.path={path} does not exist; point it at a folder of audio files with transcripts.csv")
    csv_file = where if where.is_file() else transcripts_csv(where)
    if csv_file is None:
        files = sorted(p for p in where.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES)
        if not files:
            raise DataError(f"data.path={path} holds no transcripts CSV and no audio files "
                            f"({', '.join(AUDIO_SUFFIXES)})")
        rows = [(p, {"label": p.parent.name}) for p in files if p.parent != where]
        if not rows:
            raise DataError(f"data.path={path} has audio but no transcripts.csv (file,transcript) and no class folders")
    else:
        with open(csv_file, newline="", encoding="utf-8") as f:
            table = list(csv.DictReader(f))
        if not table:
            raise DataError(f"{csv_file} has no rows; it needs a header (file,transcript) and one row per recording")
        column = first_column(list(table[0]), FILE_COLUMNS, csv_file)
        rows = [(csv_file.parent / r[column], r) for r in table]
    utterances = []
    for file, row in rows:
        audio = reader.read(file)
        if audio is not None:
            utterances.append(Utterance(str(file.relative_to(where) if where.is_dir() else file.name), audio, row))
    return utterances


def read_hub(name: str, reader: AudioReader) -> list[Utterance]:
    """A Hub audio dataset, ``name[:config]``, train split; audio decoded here with soundfile."""
    import io

    from datasets import Audio, load_dataset

    repo, _, config = name.partition(":")
    ds = load_dataset(repo, config or None, split="train")
    if "audio" not in ds.column_names:
        raise DataError(f"data.hub={name}: expected an 'audio' column, found {ds.column_names}")
    ds = ds.cast_column("audio", Audio(decode=False))
    utterances = []
    for i, record in enumerate(ds):
        audio = record.pop("audio")
        source = io.BytesIO(audio["bytes"]) if audio.get("bytes") else Path(audio["path"])
        samples = reader.read(source)
        if samples is not None:
            row = {k: str(v) for k, v in record.items()}
            utterances.append(Utterance(audio.get("path") or f"{name}[{i}]", samples, row))
    return utterances


def read_speech(cfg: Any, rate: int) -> tuple[list[Utterance], str]:
    """The utterances ``cfg.data`` names (user folder, Hub, or the shipped set) and where they came from."""
    data = cfg.data
    reader = AudioReader(rate)
    if data.path:
        utterances, source = read_folder(data.path, reader), f"folder {data.path}"
    elif data.hub:
        utterances, source = read_hub(data.hub, reader), f"hub {data.hub}"
    else:
        utterances, source = read_folder(default_speech(), reader), "garden speech (204 eSpeak NG utterances)"
    reader.notes()
    if len(utterances) < 2:
        raise DataError(f"{source}: only {len(utterances)} readable recording(s); a run needs at least 2")
    return utterances, source


def feature_extractor_of(preprocessor: Any) -> Any:
    return getattr(preprocessor, "feature_extractor", preprocessor)


def check_rate(cfg: Any, preprocessor: Any) -> int:
    """``data.sample_rate``, which must be the rate the model's feature extractor reads."""
    model_rate = getattr(feature_extractor_of(preprocessor), "sampling_rate", cfg.data.sample_rate)
    if model_rate != cfg.data.sample_rate:
        raise ConfigError(f"data.sample_rate={cfg.data.sample_rate} but model '{cfg.model.name}' reads "
                          f"{model_rate} Hz audio; set data.sample_rate={model_rate} (files are resampled to it)")
    return model_rate


class Waveforms:
    """Utterances normalised by the model's feature extractor once, on first access; the result is
    stored under ``key``, the model's input (raw ``input_values``, or spectrogram ``input_features``)."""

    def __init__(self, items: list[tuple[str, Any, dict]], extractor: Any, rate: int, key: str = "input_values"):
        self.items, self.extractor, self.rate, self.key, self.cache = items, extractor, rate, key, {}

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i not in self.cache:
            import torch

            name, audio, extra = self.items[i]
            values = self.extractor(audio, sampling_rate=self.rate, return_tensors="np")[self.key][0]
            self.cache[i] = {self.key: torch.as_tensor(values, dtype=torch.float32), "input_name": name, **extra}
        return self.cache[i]


def collate(examples: list[dict[str, Any]], key: str = "input_values") -> dict[str, Any]:
    """Zero-padded waveforms (or feature frames, along their first axis) with their attention
    mask; CTC labels padded with -100."""
    import torch

    longest = max(len(e[key]) for e in examples)
    values = torch.zeros(len(examples), longest, *examples[0][key].shape[1:])
    mask = torch.zeros(len(examples), longest, dtype=torch.long)
    for i, e in enumerate(examples):
        values[i, : len(e[key])] = e[key]
        mask[i, : len(e[key])] = 1
    batch: dict[str, Any] = {key: values, "attention_mask": mask, "input_names": [e["input_name"] for e in examples]}
    if "label_ids" in examples[0]:
        longest = max(len(e["label_ids"]) for e in examples)
        labels = torch.full((len(examples), longest), -100, dtype=torch.long)
        for i, e in enumerate(examples):
            labels[i, : len(e["label_ids"])] = torch.tensor(e["label_ids"], dtype=torch.long)
        batch["labels"], batch["texts"] = labels, [e["text"] for e in examples]
    elif "label" in examples[0]:
        batch["labels"] = torch.tensor([e["label"] for e in examples], dtype=torch.long)
    return batch


def knows_no_characters(tokenizer: Any) -> bool:
    """Whether ``tokenizer``'s vocabulary is its special tokens and word delimiter alone."""
    specials = {*tokenizer.all_special_tokens, getattr(tokenizer, "word_delimiter_token", None)}
    return set(tokenizer.get_vocab()) <= specials


def normalise(text: str, vocab: Any) -> str:
    """``text`` with single spaces, in the letter case of ``vocab`` (LibriSpeech vocabularies are upper case)."""
    text = " ".join(text.split())
    letters = [t for t in vocab if len(t) == 1 and t.isalpha()]
    if letters and all(c.isupper() for c in letters):
        return text.upper()
    if letters and all(c.islower() for c in letters):
        return text.lower()
    return text


def edit_distance(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Levenshtein distance between two sequences (words for WER, characters for CER)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diagonal, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (x != y))
    return row[-1]


def error_rates(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Corpus word and character error rates: total edits over total reference length."""
    words = sum(edit_distance(h.split(), r.split()) for h, r in zip(hypotheses, references))
    chars = sum(edit_distance(h, r) for h, r in zip(hypotheses, references))
    return {"wer": words / max(1, sum(len(r.split()) for r in references)),
            "cer": chars / max(1, sum(len(r) for r in references))}


class SpeechTask(Task):
    """What both speech tasks share: reading audio, padding batches, the user's own files.

    The model reads raw ``input_values`` unless its family says otherwise (``audio_input``, e.g.
    ``input_features``; ``audio_inputs`` when it takes no attention mask)."""

    @property
    def audio_key(self) -> str:
        return getattr(self.family, "audio_input", "input_values")

    @property
    def input_names(self) -> tuple[str, ...]:  # type: ignore[override]
        return tuple(getattr(self.family, "audio_inputs", (self.audio_key, "attention_mask")))

    def model_kwargs(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {k: batch[k] for k in self.input_names}

    def prepare(self, cfg: Any, preprocessor: Any) -> tuple[list[Utterance], str, int]:
        rate = check_rate(cfg, preprocessor)
        self.rate, self.extractor = rate, feature_extractor_of(preprocessor)
        utterances, source = read_speech(cfg, rate)
        return utterances, source, rate

    def task_data(self, cfg: Any, items: list, **kwargs: Any) -> TaskData:
        train, held_out = split(items, cfg.data.eval_fraction, cfg.seed)
        train, held_out = limit(train, cfg.data.limit), limit(held_out, cfg.data.eval_limit)
        key = self.audio_key
        return TaskData(train=Waveforms(train, self.extractor, self.rate, key),
                        eval=Waveforms(held_out, self.extractor, self.rate, key),
                        collate=functools.partial(collate, key=key), **kwargs)

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        where = Path(pattern).expanduser()
        paths = sorted(where.rglob("*")) if where.is_dir() else sorted(Path(p) for p in glob.glob(str(where)))
        paths = [p for p in paths if p.suffix.lower() in AUDIO_SUFFIXES]
        if not paths:
            raise DataError(f"infer.inputs={pattern} matches no audio files ({', '.join(AUDIO_SUFFIXES)})")
        reader = AudioReader(self.rate)
        items = [(str(p), audio, {}) for p in paths if (audio := reader.read(p)) is not None]
        reader.notes()
        return Waveforms(items, self.extractor, self.rate, self.audio_key)


class SpeechRecognition(SpeechTask):
    """CTC speech recognition: per-frame character logits, greedy decoding, WER and CER."""

    name = "asr"
    metric = "wer"
    greater_is_better = False
    perfect = 0.0

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        utterances, source, _ = self.prepare(cfg, preprocessor)
        column = first_column(list(utterances[0].row), TEXT_COLUMNS, source)
        texts = [" ".join(u.row[column].split()) for u in utterances]
        if knows_no_characters(preprocessor.tokenizer):
            preprocessor.tokenizer = self.family.character_tokenizer(texts)
            say_note(f"no pretrained vocabulary: learned {len(preprocessor.tokenizer)} CTC tokens "
                     f"from the transcripts of {source}")
        self.tokenizer = tokenizer = preprocessor.tokenizer
        vocab = tokenizer.get_vocab()
        texts = [normalise(t, vocab) for t in texts]
        unknown = sorted({c for t in texts for c in t if not c.isspace()} - set(vocab))
        if unknown:
            say_note(f"characters {''.join(unknown)} are not in the model's vocabulary and train as "
                     f"{tokenizer.unk_token}")
        items = [(u.name, u.audio, {"text": t, "label_ids": tokenizer(t).input_ids})
                 for u, t in zip(utterances, texts)]
        info = {"config": {"vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id,
                           "ctc_loss_reduction": "mean"}}
        return self.task_data(cfg, items, info=info, source=source)

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        """Logits (batch, frames, vocab) and each utterance's frame count (the rest is padding)."""
        import torch

        logits = model(**self.model_kwargs(batch)).logits
        if not hasattr(model, "_get_feat_extract_output_lengths") or "attention_mask" not in batch:
            return logits, logits.new_full((logits.shape[0],), logits.shape[1], dtype=torch.long)  # count them all
        frames = model._get_feat_extract_output_lengths(batch["attention_mask"].sum(-1)).long()
        return logits, frames

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        logits, frames = output
        log_probs = F.log_softmax(logits.float(), dim=-1).transpose(0, 1)
        present = target >= 0
        return F.ctc_loss(log_probs, target.masked_select(present), frames, present.sum(-1),
                          blank=self.tokenizer.pad_token_id, reduction="mean", zero_infinity=True)

    def decode(self, output: Any) -> list[tuple[str, float]]:
        """Greedy CTC decoding: best token per frame, repeats merged, blanks dropped; and a confidence."""
        logits, frames = output
        probs = logits.float().softmax(-1)
        best, ids = probs.max(-1)
        decoded = []
        for row, scores, n in zip(ids.tolist(), best, frames.tolist()):
            row = row[:n]
            kept = [t for i, t in enumerate(row) if t != self.tokenizer.pad_token_id and (i == 0 or t != row[i - 1])]
            text = self.tokenizer.decode(kept, group_tokens=False, spaces_between_special_tokens=False)
            decoded.append((" ".join(text.split()), round(scores[:n].mean().item(), 6)))
        return decoded

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        hypotheses = [text for output in outputs for text, _ in self.decode(output)]
        references = [text for batch in batches for text in batch["texts"]]
        losses = [self.loss(o, b["labels"]).item() * len(b["texts"]) for o, b in zip(outputs, batches)]
        return {**error_rates(hypotheses, references), "loss": sum(losses) / len(references)}

    def baseline(self, data: TaskData) -> dict[str, Any]:
        """WER of answering every utterance with the train split's most frequent transcript."""
        from collections import Counter

        counts = Counter(extra["text"] for _, _, extra in data.train.items)
        most = max(sorted(counts), key=counts.__getitem__)
        references = [extra["text"] for _, _, extra in data.eval.items]
        return self.baseline_of("most frequent transcript of the training split, for every utterance",
                                error_rates([most] * len(references), references)[self.metric])

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        rows = []
        for i, (text, confidence) in enumerate(self.decode(output)):
            row = {"input": batch["input_names"][i], "transcript": text,
                   "predictions": [{"label": text, "score": confidence}]}
            if "texts" in batch:
                row["reference"] = batch["texts"][i]
            rows.append(row)
        return rows


class AudioClassification(Classification, SpeechTask):
    """Utterance classification (keyword spotting, speaker identification): pooled frames -> logits.

    The class is the CSV's ``label`` column (``data.options.label_column`` picks another, e.g.
    ``speaker``); on the shipped set that is the spoken keyword, ``_unknown_`` for sentences.
    """

    name = "audio-classify"
    metric = "accuracy"

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        utterances, source, _ = self.prepare(cfg, preprocessor)
        column = cfg.data.options.get("label_column", "label")
        if column not in utterances[0].row:
            raise DataError(f"data.options.label_column={column} is not a column of {source} "
                            f"(columns: {', '.join(utterances[0].row)}); pick one of those")
        names = tuple(sorted({u.row[column] for u in utterances}))
        index = {n: i for i, n in enumerate(names)}
        items = [(u.name, u.audio, {"label": index[u.row[column]]}) for u in utterances]
        return self.task_data(cfg, items, labels=names, source=source)

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(**self.model_kwargs(batch)).logits
