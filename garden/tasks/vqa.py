"""Visual question answering over region features: a question and 36 image regions -> an answer.

LXMERT-style models read an image as precomputed region features (``visual_feats``, one vector
per region) and normalised boxes (``visual_pos``, x1, y1, x2, y2 in [0, 1]); the answer is a
class from the answer vocabulary found in the data.

Default data is 238 questions about 80 rendered scenes of coloured shapes, shipped in
``garden/tasks/data/vqa`` as 16-number region descriptors that are projected to the model's
``visual_feat_dim`` by a fixed seeded matrix (:func:`project`; docs/vqa_data.md).
``data.path=DIR`` reads the user's own features: ``DIR/features.npz`` (or ``.h5``) with arrays
``ids`` (N,), ``features`` (N, R, visual_feat_dim) and ``boxes`` (N, R, 4), and
``DIR/questions.json``, a list of ``{"image": id, "question": text, "answer": text}``.
``infer.inputs=FILE.json`` asks new questions (``answer`` optional) about the same images.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from garden.errors import DataError
from garden.tasks.base import Classification, TaskData, limit, split

FEATURE_FILES = ("features.npz", "features.h5", "features.hdf5")
#: the seed of the matrix that lifts the shipped descriptors to any feature size
PROJECTION_SEED = 20240611


def default_vqa() -> Path:
    from garden.compat import package_files as files

    return Path(str(files("garden.tasks") / "data" / "vqa"))


def question_words() -> list[str]:
    """The words of the shipped questions (:func:`basic_words`), sorted: what a model without a
    checkpoint builds its question vocabulary from (its family knows the tokenizer's own tokens)."""
    return sorted({w for q in read_questions(default_vqa() / "questions.json") for w in basic_words(q["question"])})


def basic_words(text: str) -> list[str]:
    """Lower-cased words and punctuation marks, as a WordPiece tokenizer's basic step splits them."""
    out, word = [], ""
    for c in text.lower():
        if c.isalnum():
            word += c
            continue
        out += [word] if word else []
        word = ""
        out += [] if c.isspace() else [c]
    return out + ([word] if word else [])


@dataclass
class RegionQuestionProcessor:
    """What turns a question and an image's regions into model inputs: the question tokenizer
    and the feature size the model reads (``visual_feat_dim``)."""

    tokenizer: Any
    feature_dim: int

    def save_pretrained(self, folder: str | Path) -> None:
        self.tokenizer.save_pretrained(folder)


def project(descriptors: Any, dim: int) -> Any:
    """The shipped 16-number region descriptors as ``dim``-wide features: ReLU(d @ W), W seeded."""
    import numpy as np

    weights = np.random.default_rng(PROJECTION_SEED).standard_normal((descriptors.shape[-1], dim))
    return np.maximum(descriptors.astype(np.float32) @ (weights / np.sqrt(descriptors.shape[-1])).astype(np.float32), 0)


def read_questions(path: Path) -> list[dict[str, Any]]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read questions file {path}: {err}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "image" in r and "question" in r for r in rows):
        raise DataError(f"{path} must be a JSON list of {{\"image\", \"question\", \"answer\"}} objects")
    return rows


def read_arrays(file: Path) -> dict[str, Any]:
    """``ids``, ``features`` and ``boxes`` from an .npz or .h5 file."""
    import numpy as np

    if file.suffix == ".npz":
        with np.load(file, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    else:
        try:
            import h5py
        except ImportError:
            raise DataError(f"reading {file} needs h5py; pip install h5py, or save the arrays as "
                            f"features.npz") from None
        with h5py.File(file, "r") as h5:
            arrays = {k: h5[k][()] for k in h5.keys()}
    missing = [k for k in ("ids", "features", "boxes") if k not in arrays]
    if missing:
        raise DataError(f"{file} lacks array(s) {', '.join(missing)}; it needs ids (N,), features (N, R, D), "
                        f"boxes (N, R, 4)")
    arrays["ids"] = [x.decode() if isinstance(x, bytes) else str(x) for x in arrays["ids"]]
    return arrays


def check_shapes(file: Path, features: Any, boxes: Any, dim: int) -> None:
    """Features must be (N, R, ``dim``) and boxes (N, R, 4) with values in [0, 1]."""
    expected = (*features.shape[:2], dim) if features.ndim == 3 else ("N", "R", dim)
    if features.shape[2:] != (dim,):
        raise DataError(f"{file}: features have shape {tuple(features.shape)}, the model reads {expected} "
                        f"(visual_feat_dim={dim}); extract features of that size or pick a variant that reads them")
    if boxes.shape != (*features.shape[:2], 4):
        raise DataError(f"{file}: boxes have shape {tuple(boxes.shape)}, expected {(*features.shape[:2], 4)} "
                        f"(x1, y1, x2, y2 per region)")
    if boxes.size and (boxes.min() < 0 or boxes.max() > 1):
        raise DataError(f"{file}: boxes range over [{boxes.min():.3g}, {boxes.max():.3g}]; the model reads boxes "
                        f"normalised to [0, 1] (divide x by the image width and y by its height)")


def read_regions(path: str, dim: int) -> tuple[dict[str, tuple[Any, Any]], Path]:
    """Each image id's (features, boxes) from the user's folder (or feature file), and the questions file."""
    where = Path(path).expanduser()
    if not where.exists():
        raise DataError(f"data.path={path} does not exist; point it at a folder with features.npz and questions.json")
    folder = where if where.is_dir() else where.parent
    file = where if where.is_file() else next((folder / f for f in FEATURE_FILES if (folder / f).exists()), None)
    if file is None:
        raise DataError(f"data.path={path} holds none of {', '.join(FEATURE_FILES)}; see docs/vqa_data.md")
    questions = folder / "questions.json"
    if not questions.exists():
        raise DataError(f"data.path={path} has no questions.json beside {file.name}")
    arrays = read_arrays(file)
    check_shapes(file, arrays["features"], arrays["boxes"], dim)
    return {i: (f, b) for i, f, b in zip(arrays["ids"], arrays["features"], arrays["boxes"])}, questions


def shipped_regions(dim: int) -> dict[str, tuple[Any, Any]]:
    import numpy as np

    with np.load(default_vqa() / "regions.npz") as z:
        features = project(z["descriptors"], dim)
        return {str(i): (f, b) for i, f, b in zip(z["ids"], features, z["boxes"])}


class Questions:
    """Questions tokenised once, each with its image's region tensors (shared between questions)."""

    def __init__(self, rows: list[dict[str, Any]], regions: dict[str, tuple[Any, Any]], tokenizer: Any,
                 answers: dict[str, int], max_length: int | None):
        self.rows, self.regions, self.tokenizer, self.answers = rows, regions, tokenizer, answers
        self.max_length = max_length
        self.cache: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i not in self.cache:
            import torch

            row = self.rows[i]
            features, boxes = self.regions[str(row["image"])]
            ids = self.tokenizer(row["question"], truncation=self.max_length is not None,
                                 max_length=self.max_length)["input_ids"]
            example = {"input_ids": ids, "visual_feats": torch.as_tensor(features, dtype=torch.float32),
                       "visual_pos": torch.as_tensor(boxes, dtype=torch.float32),
                       "input_name": f"{row['image']}: {row['question']}"}
            if row.get("answer") in self.answers:
                example["label"] = self.answers[row["answer"]]
            self.cache[i] = example
        return self.cache[i]


def collate(examples: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    longest = max(len(e["input_ids"]) for e in examples)
    ids = torch.zeros(len(examples), longest, dtype=torch.long)
    mask = torch.zeros(len(examples), longest, dtype=torch.long)
    for i, e in enumerate(examples):
        ids[i, : len(e["input_ids"])] = torch.tensor(e["input_ids"])
        mask[i, : len(e["input_ids"])] = 1
    feats = torch.stack([e["visual_feats"] for e in examples])
    batch: dict[str, Any] = {
        "input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids),
        "visual_feats": feats, "visual_pos": torch.stack([e["visual_pos"] for e in examples]),
        "visual_attention_mask": torch.ones(feats.shape[:2], dtype=torch.long),
        "input_names": [e["input_name"] for e in examples],
    }
    if all("label" in e for e in examples):
        batch["labels"] = torch.tensor([e["label"] for e in examples], dtype=torch.long)
    return batch


class VisualQuestionAnswering(Classification):
    """Answer classification over the answers seen in the data; accuracy and top answers."""

    name = "vqa"
    metric = "accuracy"
    input_names = ("input_ids", "attention_mask", "token_type_ids", "visual_feats", "visual_pos",
                   "visual_attention_mask")

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        data = cfg.data
        if data.hub:
            raise DataError(f"data.hub={data.hub}: vqa reads precomputed region features, which Hub VQA datasets "
                            f"do not hold; extract them and use data.path=DIR (see docs/vqa_data.md)")
        if data.path:
            self.regions, questions_file = read_regions(data.path, preprocessor.feature_dim)
            source = f"folder {data.path}"
        else:
            self.regions, questions_file = shipped_regions(preprocessor.feature_dim), default_vqa() / "questions.json"
            source = "garden shapes VQA (238 questions, 80 scenes)"
        rows = read_questions(questions_file)
        self.check_images(rows, questions_file)
        unanswered = [r for r in rows if "answer" not in r]
        if unanswered:
            raise DataError(f"{questions_file}: {len(unanswered)} question(s) have no answer, e.g. "
                            f"{unanswered[0]['question']!r}; training needs one answer per question")
        labels = tuple(sorted({str(r["answer"]) for r in rows}))
        self.answers = {a: i for i, a in enumerate(labels)}
        self.tokenizer, self.max_length = preprocessor.tokenizer, data.max_length
        train, held_out = split(rows, data.eval_fraction, cfg.seed)
        train, held_out = limit(train, data.limit), limit(held_out, data.eval_limit)
        return TaskData(train=self.questions(train), eval=self.questions(held_out), collate=collate, labels=labels,
                        source=source, info={"config": {"vocab_size": len(self.tokenizer)}})

    def questions(self, rows: list[dict[str, Any]]) -> Questions:
        return Questions(rows, self.regions, self.tokenizer, self.answers, self.max_length)

    def check_images(self, rows: Sequence[dict[str, Any]], questions_file: Path) -> None:
        missing = sorted({str(r["image"]) for r in rows} - set(self.regions))
        if missing:
            raise DataError(f"{questions_file} asks about image(s) with no region features: "
                            f"{', '.join(missing[:3])}; add them to the features file or drop those questions")

    def inputs(self, batch: dict[str, Any]) -> tuple:
        return tuple(batch[name] for name in self.input_names)

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(**{name: batch[name] for name in self.input_names}).question_answering_score

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        """Questions from a JSON file (``[{"image", "question"}]``) about the loaded images."""
        file = Path(pattern).expanduser()
        if not file.is_file():
            raise DataError(f"infer.inputs={pattern} is not a file; give a JSON list of {{\"image\", \"question\"}}")
        rows = read_questions(file)
        self.check_images(rows, file)
        return self.questions(rows)
