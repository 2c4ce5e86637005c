"""Molecule property regression: atoms and 3-D positions in, one number per molecule out, MAE.

Default data: the 148 molecules of ASE's G2 collection (``ase.collections.g2``: MP2/6-31G(d)
geometries, the single atoms left out), with ``data.options.target``:

- ``zpe`` (default): the zero-point vibrational energy, kcal/mol;
- ``enthalpy``: the experimental enthalpy of formation at 298 K, kcal/mol;

both from the G2 tables ASE ships (``ase.data.g2``; see docs/graph_data.md).
``data.path=FILE`` reads QM9-style data: a ``.json`` list of ``{"name", "z", "pos", "y"}`` (``z``
atomic numbers or element symbols, ``pos`` in Å), or an ``.npz`` with ``z`` and ``pos`` for all
atoms back to back, ``n_atoms`` and ``y`` per molecule (and optional ``names``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from garden.errors import DataError
from garden.tasks.base import Task, TaskData, limit, split

TARGETS = {"zpe": ("ZPE", "zero-point energy (kcal/mol)"), "enthalpy": ("enthalpy", "enthalpy of formation (kcal/mol)")}
#: SchNet embeds atomic numbers 1..99 (its embedding table has 100 rows, 0 unused)
MAX_Z = 99


def g2(target: str) -> tuple[list[dict[str, Any]], str, str]:
    """The G2 molecules with more than one atom, and the chosen target; returns (molecules, source, quantity)."""
    from ase.collections import g2 as collection
    from ase.data import g2 as tables

    if target not in TARGETS:
        raise DataError(f"data.options.target={target} is not one of: {', '.join(TARGETS)}")
    key, quantity = TARGETS[target]
    molecules = [{"name": name, "z": list(atoms.numbers), "pos": atoms.positions.tolist(), "y": tables.data[name][key]}
                 for name in collection.names if len(atoms := collection[name]) > 1]
    return molecules, f"ASE G2 molecules ({len(molecules)}), {quantity}", quantity


def atomic_numbers(name: str, elements: list[Any], where: str) -> list[int]:
    """Atomic numbers from numbers or symbols; an unknown element names the molecule and the atom."""
    from ase.data import atomic_numbers as by_symbol

    numbers = []
    for i, element in enumerate(elements):
        number = by_symbol.get(element) if isinstance(element, str) else int(element)
        if number is None or not 1 <= number <= MAX_Z:
            raise DataError(
                f"{where}: molecule '{name}' has unknown element {element!r} (atom {i}); "
                f"use element symbols or atomic numbers 1-{MAX_Z}"
            )
        numbers.append(number)
    return numbers


def user_molecules(path: str) -> tuple[list[dict[str, Any]], str, str]:
    import numpy as np

    file = Path(path).expanduser()
    if not file.is_file():
        raise DataError(f"data.path={path} does not exist; give a .json list of molecules or an .npz (z, pos, n_atoms, y)")
    if file.suffix == ".npz":
        arrays = np.load(file, allow_pickle=False)
        missing = [k for k in ("z", "pos", "n_atoms", "y") if k not in arrays]
        if missing:
            raise DataError(f"data.path={path} lacks array(s) {', '.join(missing)}; an .npz needs z, pos, n_atoms and y")
        ends = np.cumsum(arrays["n_atoms"])
        names = arrays["names"].tolist() if "names" in arrays else [f"molecule {i}" for i in range(len(ends))]
        rows = [{"name": str(n), "z": arrays["z"][e - k:e].tolist(), "pos": arrays["pos"][e - k:e].tolist(), "y": float(y)}
                for n, e, k, y in zip(names, ends, arrays["n_atoms"], arrays["y"])]
    elif file.suffix == ".json":
        try:
            rows = json.loads(file.read_text())
        except json.JSONDecodeError as err:
            raise DataError(f"data.path={path} is not valid JSON ({err})") from None
    else:
        raise DataError(f"data.path={path} is neither .json nor .npz")
    molecules = []
    for i, row in enumerate(rows):
        name = str(row.get("name", f"molecule {i}"))
        z = atomic_numbers(name, list(row["z"]), f"data.path={path}")
        if np.shape(row["pos"]) != (len(z), 3):
            raise DataError(f"data.path={path}: molecule '{name}' has {len(z)} atoms but pos of shape {np.shape(row['pos'])}; give one xyz row per atom")
        molecules.append({"name": name, "z": z, "pos": row["pos"], "y": float(row["y"])})
    return molecules, f"molecules {file} ({len(molecules)})", "target"


def collate(examples: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    return {
        "labels": torch.tensor([e["y"] for e in examples], dtype=torch.float32),
        "z": torch.cat([e["z"] for e in examples]),
        "pos": torch.cat([e["pos"] for e in examples]),
        "batch": torch.cat([torch.full((len(e["z"]),), i) for i, e in enumerate(examples)]),
        "names": [e["name"] for e in examples],
    }


class MoleculeRegression(Task):
    splittable = False
    name = "graph-regress"
    metric = "mae"
    greater_is_better = False
    perfect = 0.0

    def load(self, cfg: Any, preprocessor: Any) -> TaskData:
        import numpy as np
        import torch

        data = cfg.data
        target = str(data.options.get("target", "zpe"))
        molecules, source, quantity = user_molecules(data.path) if data.path else g2(target)
        examples = [{"name": m["name"], "z": torch.tensor(m["z"]), "pos": torch.tensor(m["pos"], dtype=torch.float32),
                     "y": float(m["y"])} for m in molecules]
        train, held_out = split(examples, data.eval_fraction, cfg.seed)
        train, held_out = limit(train, data.limit), limit(held_out, data.eval_limit)
        per_atom = np.array([e["y"] / len(e["z"]) for e in train])
        return TaskData(
            train=train,
            eval=held_out,
            collate=collate,
            labels=(quantity,),
            info={"mean": float(per_atom.mean()), "std": float(per_atom.std()) or 1.0},
            source=source,
        )

    def inputs(self, batch: dict[str, Any]) -> tuple:
        return (batch["z"], batch["pos"], batch["batch"])

    def forward(self, model: Any, batch: dict[str, Any]) -> Any:
        return model(*self.inputs(batch))

    def loss(self, output: Any, target: Any) -> Any:
        import torch.nn.functional as F

        return F.mse_loss(output.float(), target)

    def evaluate(self, outputs: list[Any], batches: list[dict[str, Any]]) -> dict[str, float]:
        import torch

        predicted = torch.cat([o.float() for o in outputs])
        target = torch.cat([b["labels"] for b in batches])
        return {"mae": (predicted - target).abs().mean().item(), "loss": self.loss(predicted, target).item()}

    def baseline(self, data: TaskData) -> dict[str, Any]:
        """The train split's mean per atom, times each molecule's atoms: the size alone, no geometry."""
        mean = data.info["mean"]
        errors = [abs(mean * len(e["z"]) - e["y"]) for e in data.eval]
        return self.baseline_of("the training mean per atom times the atom count", sum(errors) / len(errors))

    def predict(self, output: Any, batch: dict[str, Any], data: TaskData, top_k: int) -> list[dict]:
        (what,) = data.labels or ("target",)
        return [{"input": name, "label": round(float(y), 4), "predictions": [{"label": what, "score": round(float(p), 4)}]}
                for name, y, p in zip(batch["names"], batch["labels"], output.float())]
