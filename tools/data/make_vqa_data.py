#!/usr/bin/env python3
# SPDX-License-Identifier: CC0-1.0
"""Render the small visual-question-answering set that ships with garden (``vqa/``).

Each scene is a 96x96 picture of two to five coloured shapes (circle, square, triangle) drawn
with PIL from a seeded generator. Its 36 regions are what LXMERT reads in place of Faster
R-CNN boxes: the whole picture, each shape's box, then cells of a 6x6 grid. A fixed,
hand-written extractor describes every region in 16 numbers (colour histogram, mean colour,
how much of the region the shape fills, where the ink sits); garden projects these to any
``visual_feat_dim`` with a seeded matrix when it loads them (:func:`project`). Questions
("what color is the circle?", "how many squares?", ...) are answerable from the regions.

    python tools/data/make_vqa_data.py            # writes garden/tasks/data/vqa/
    python tools/data/make_vqa_data.py --out DIR  # or somewhere else

Output: ``vqa/regions.npz`` (``ids`` (S,), ``descriptors`` (S, 36, 16) float16, ``boxes``
(S, 36, 4) float16 as x1, y1, x2, y2 in [0, 1]) and ``vqa/questions.json`` (a list of
``{"image", "question", "answer"}``). CC0-1.0; see docs/vqa_data.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random

import numpy as np
from PIL import Image, ImageDraw

#: where the shipped data lives: garden's built-in tasks read it from the installed package
HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "garden", "tasks", "data"))
SEED = 20240611
SIZE = 96
REGIONS = 36
BACKGROUND = (235, 235, 235)
COLORS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 70, 220), "yellow": (235, 200, 30)}
SHAPES = ("circle", "square", "triangle")
NUMBERS = ("zero", "one", "two", "three", "four", "five")


def scene(rng: random.Random) -> tuple[Image.Image, list[tuple[str, str, tuple[int, int, int, int]]]]:
    """A picture and its objects as (shape, colour, box); boxes do not overlap."""
    image = Image.new("RGB", (SIZE, SIZE), BACKGROUND)
    draw = ImageDraw.Draw(image)
    objects: list[tuple[str, str, tuple[int, int, int, int]]] = []
    wanted = rng.randint(2, 5)
    for _ in range(500):  # random placement; a crowded scene may keep fewer shapes
        if len(objects) == wanted:
            break
        side = rng.randint(18, 30)
        x, y = rng.randint(2, SIZE - side - 2), rng.randint(2, SIZE - side - 2)
        box = (x, y, x + side, y + side)
        if any(not (box[2] + 2 < b[0] or b[2] + 2 < box[0] or box[3] + 2 < b[1] or b[3] + 2 < box[1])
               for _, _, b in objects):
            continue
        shape, colour = rng.choice(SHAPES), rng.choice(list(COLORS))
        fill = COLORS[colour]
        if shape == "circle":
            draw.ellipse(box, fill=fill)
        elif shape == "square":
            draw.rectangle(box, fill=fill)
        else:
            draw.polygon([(x + side / 2, y), (x, y + side), (x + side, y + side)], fill=fill)
        objects.append((shape, colour, box))
    return image, objects


def describe(crop: np.ndarray) -> np.ndarray:
    """16 numbers for one region: palette histogram (4), ink fraction, mean colour (3),
    ink bounding-box fill and aspect ratio, ink fraction per quadrant (4), top-row and
    bottom-row ink width (a triangle is narrow on top)."""
    pixels = crop.reshape(-1, 3).astype(np.float64)
    ink = np.abs(pixels - BACKGROUND).sum(-1) > 60
    palette = np.array(list(COLORS.values()), dtype=np.float64)
    nearest = np.argmin(((pixels[:, None, :] - palette[None]) ** 2).sum(-1), axis=1)
    hist = np.bincount(nearest[ink], minlength=len(COLORS)) / max(1, ink.sum())
    mask = ink.reshape(crop.shape[:2])
    h, w = mask.shape
    if mask.any():
        rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
        box = mask[rows[0]: rows[-1] + 1, cols[0]: cols[-1] + 1]
        fill, aspect = box.mean(), box.shape[1] / box.shape[0]
        top, bottom = box[0].mean(), box[-1].mean()
        mean = pixels[ink].mean(0) / 255.0
    else:
        fill = aspect = top = bottom = 0.0
        mean = np.zeros(3)
    quadrants = [mask[: h // 2, : w // 2].mean(), mask[: h // 2, w // 2:].mean(),
                 mask[h // 2:, : w // 2].mean(), mask[h // 2:, w // 2:].mean()]
    return np.array([*hist, mask.mean(), *mean, fill, aspect, *quadrants, top, bottom])


def regions(image: Image.Image, objects: list) -> tuple[np.ndarray, np.ndarray]:
    """(36, 16) descriptors and (36, 4) normalised boxes: whole image, objects, grid cells."""
    boxes = [(0, 0, SIZE, SIZE)] + [b for _, _, b in objects]
    cell = SIZE // 6
    boxes += [(c * cell, r * cell, (c + 1) * cell, (r + 1) * cell) for r in range(6) for c in range(6)]
    boxes = boxes[:REGIONS]
    pixels = np.asarray(image)
    descriptors = np.stack([describe(pixels[y1:y2 + 1, x1:x2 + 1]) for x1, y1, x2, y2 in boxes])
    return descriptors, np.array(boxes, dtype=np.float64) / SIZE


def questions(image_id: str, objects: list, rng: random.Random) -> list[dict[str, str]]:
    """Two to four questions with one right answer each, drawn from what the scene holds."""
    shapes = [s for s, _, _ in objects]
    colours = [c for _, c, _ in objects]
    asked = []
    for shape in SHAPES:
        if shapes.count(shape) == 1:
            asked.append((f"what color is the {shape}?", colours[shapes.index(shape)]))
    for colour in COLORS:
        if colours.count(colour) == 1:
            asked.append((f"what shape is the {colour} object?", shapes[colours.index(colour)]))
    shape = rng.choice(SHAPES)
    asked.append((f"how many {shape}s are there?", NUMBERS[shapes.count(shape)]))
    shape = rng.choice(SHAPES)
    asked.append((f"is there a {shape}?", "yes" if shape in shapes else "no"))
    picked = rng.sample(asked, k=min(len(asked), rng.randint(2, 4)))
    return [{"image": image_id, "question": q, "answer": a} for q, a in picked]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "vqa"))
    ap.add_argument("--scenes", type=int, default=80)
    args = ap.parse_args(argv)
    rng = random.Random(SEED)
    ids, descriptors, boxes, rows = [], [], [], []
    for i in range(args.scenes):
        image, objects = scene(rng)
        d, b = regions(image, objects)
        ids.append(f"scene_{i:03d}")
        descriptors.append(d)
        boxes.append(b)
        rows += questions(ids[-1], objects, rng)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "regions.npz"), "wb") as f:
        np.savez_compressed(f, ids=np.array(ids), descriptors=np.stack(descriptors).astype(np.float16),
                            boxes=np.stack(boxes).astype(np.float16))
    with open(os.path.join(args.out, "questions.json"), "w") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    answers = sorted({r["answer"] for r in rows})
    print(f"{len(ids)} scenes, {len(rows)} questions, {len(answers)} answers, written to {args.out}")


if __name__ == "__main__":
    main()
