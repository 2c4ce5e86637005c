"""Image classification: images and class labels -> logits, cross-entropy, accuracy.

Default data is scikit-learn's 1,797 handwritten digits (real 8x8 scans, shipped with the
package, so runs work offline); ``data.path=DIR`` reads an ImageFolder-style directory
(``DIR/<class>/<image>``) through ``datasets``; ``data.hub=NAME`` a Hub image dataset.
"""

from __future__ import annotations

import glob
import io
from pathlib import Path
from typing import Any

from garden.errors import DataError, needs, unreadable
from garden.tasks.base import Classification, TaskData, limit, split

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def digits() -> tuple[list[Any], list[int], tuple[str, ...]]:
    """scikit-learn's handwritten digits as RGB PIL images, read from the file scikit-learn ships
    without importing scikit-learn (2 s of a run's start); its own loader if the file moved."""
    import importlib.util

    import numpy as np
    from PIL import Image

    spec = importlib.util.find_spec("sklearn")
    shipped = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz" if spec and spec.origin else None
    if shipped and shipped.is_file():
        table = np.loadtxt(shipped, delimiter=",")
        scans, targets = table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(int)
    else:
        bunch = needs("sklearn.datasets", "scikit-learn", "the default image data (scikit-learn's digits)").load_digits()
        scans, targets = bunch.images, bunch.target
    pixels = (scans * (255.0 / 16.0)).astype(np.uint8)
    images = [Image.fromarray(p, mode="L").convert("RGB") for p in pixels]
    return images, [int(t) for t in targets], tuple(str(n) for n in range(10))


def image_folder(path: str) -> tuple[list[Any], list[int], tuple[str, ...]]:
    """An ImageFolder-style directory read with ``datasets``' imagefolder builder."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise DataError(f"data.path={path} is not a directory; point it at DIR/<class>/<image> files")
    if not any(p.suffix.lower() in IMAGE_SUFFIXES for p in root.rglob("*")):
        raise DataError(f"data.path={path} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    import datasets

    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # its bar for a few hundred files would be the run's second line
    try:
        ds = datasets.load_dataset("imagefolder", data_dir=str(root), split="train")
    finally:
        if not quiet:
            datasets.enable_progress_bars()
    ds = ds.cast_column("image", datasets.Image(decode=False))
    names = tuple(ds.features["label"].names)
    images, targets = [], []
    for file, target in zip(ds["image"], ds["label"]):  # decoded here, to name a file that does not decode
        image = read_image(file["path"] or io.BytesIO(file["bytes"]))
        if image is not None:
            images.append(image)
            targets.append(target)
    return images, targets, names


def read_image(path: Any) -> Any:
    """The image at ``path`` as RGB, or ``None`` for one skipped as unreadable
    (:class:`garden.errors.Unreadable`: else the run stops, naming it)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except Exception as err:  # PIL raises UnidentifiedImageError, OSError, SyntaxError, ... for corrupt files
        unreadable().found(f"cannot read image {path} ({' '.join(str(err).split()) or type(err).__name__})", "image")
        return None


def hub_images(name: str) -> tuple[list[Any], list[int], tuple[str, ...]]:
    """A Hub image-classification dataset, ``name[:config]``, using its train split."""
    from datasets import load_dataset

    repo, _, config = name.partition(":")
    ds = load_dataset(repo, config or None, split="train")
    image_col = next((c for c in ("image", "img", "pixel_values") if c in ds.column_names), None)
    label_col = next((c for c in ("label", "labels", "fine_label") if c in ds.column_names), None)
    if image_col is None or label_col is None:
        raise DataError(f"data.hub={name}: expected image and label columns, found {ds.column_names}")
    names = tuple(getattr(ds.features[label_col], "names", None) or sorted({str(x) for x in ds[label_col]}))
    return [im.convert("RGB") for im in ds[image_col]], list(ds[label_col]), names


class ProcessedImages:
    """Images run through the model's image processor once, on first access."""

    def __init__(self, items: list[tuple[Any, int]], processor: Any):
        self.items, self.processor, self.cache = items, processor, {}

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i not in self.cache:
            image, label = self.items[i]
            pixels = self.processor(images=image, return_tensors="pt")["pixel_values"][0]
            self.cache[i] = {"pixel_values": pixels, "labels": label}
        return self.cache[i]


def collate(examples: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    batch: dict[str, Any] = {"pixel_values": torch.stack([e["pixel_values"] for e in examples])}
    if "labels" in examples[0]:
        batch["labels"] = torch.tensor([e["labels"] for e in examples], dtype=torch.long)
    if "input_name" in examples[0]:
        batch["input_names"] = [e["input_name"] for e in examples]
    return batch


def class_scores(output: Any) -> Any:
    """A classifier's logits: ``output.logits``, or the (batch, labels) ``last_hidden_state`` a head
    returns them as where its output class has no ``logits`` (PP-LCNet's)."""
    logits = getattr(output, "logits", None)
    if logits is None:
        last = getattr(output, "last_hidden_state", None)
        if last is not None and last.dim() == 2:
            return last
        raise AttributeError(f"{type(output).__name__} has neither logits nor a (batch, labels) last_hidden_state")
    return logits


class ImageClassification(Classification):
    name = "classify"
    metric = "accuracy"
    input_names = ("pixel_values",)

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        data = cfg.data
        if data.path:
            images, targets, names, source = *image_folder(data.path), f"folder {data.path}"
        elif data.hub:
            images, targets, names, source = *hub_images(data.hub), f"hub {data.hub}"
        else:
            images, targets, names, source = *digits(), "scikit-learn digits (1,797 8x8 scans)"
        train, held_out = split(list(zip(images, targets)), data.eval_fraction, cfg.seed)
        train, held_out = limit(train, data.limit), limit(held_out, data.eval_limit)
        return TaskData(
            train=ProcessedImages(train, preprocessor),
            eval=ProcessedImages(held_out, preprocessor),
            collate=collate,
            labels=names,
            source=source,
        )

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return class_scores(model(pixel_values=batch["pixel_values"]))

    def load_inputs(self, pattern: str, preprocessor: Any, data: TaskData) -> list[Any]:
        paths = sorted(glob.glob(str(Path(pattern).expanduser() / "**" / "*"), recursive=True)) \
            if Path(pattern).expanduser().is_dir() else sorted(glob.glob(str(Path(pattern).expanduser())))
        paths = [p for p in paths if p.lower().endswith(IMAGE_SUFFIXES)]
        if not paths:
            raise DataError(f"infer.inputs={pattern} matches no image files ({', '.join(IMAGE_SUFFIXES)})")
        examples = []
        for p in paths:
            image = read_image(p)
            if image is None:
                continue
            pixels = preprocessor(images=image, return_tensors="pt")["pixel_values"][0]
            examples.append({"pixel_values": pixels, "input_name": p})
        return examples
