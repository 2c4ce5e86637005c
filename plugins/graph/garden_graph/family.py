"""What the three graph families share: a JSON config plus safetensors, in Hub folder layout.

A family builds its network from one flat config: the variant's sizes, the sizes the task
found in its data (``BuildSpec.options``: feature width, class count, node count) and the user's
``model.options``. ``save`` writes that config as ``config.json`` beside ``model.safetensors``
(safetensors' ``save_model``, which stores SchNet's shared filter weights once), so
``weights=<folder>`` rebuilds exactly the saved network, buffers (TGN's memory) included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from garden.errors import ConfigError, WeightsError
from garden.hookspecs import BuildSpec, ModelFamily


class GraphFamily(ModelFamily):
    #: PopTorch Geometric (the Poplar SDK's PyG, poptorch/poptorch_geometric) runs PyG models on IPUs
    #: only with batches padded to fixed node and edge counts (FixedSizeDataLoader) on the PyG it
    #: pins (requirements.txt: pyg-nightly 2.4.0.dev20230606 with torch-scatter/-sparse/-cluster
    #: built for torch 2.0.1); garden_graph needs torch-geometric 2.8 and batches whole ClusterGCN
    #: partitions, TGN event windows with a stateful memory and SchNet radius graphs of varying size.
    ipu_unsupported = ("garden_graph's models need torch-geometric 2.8 and variable-size graph batches, while "
                       "PopTorch Geometric (SDK 3.4) pins PyG 2.4.0.dev and compiles fixed-size batches; "
                       "use backend=local or backend=pipeline")
    #: the config keys the network's constructor takes, each with its default
    defaults: dict[str, Any] = {}

    def network(self, config: dict[str, Any]) -> Any:
        """The torch module for a complete config."""
        raise NotImplementedError

    def config(self, spec: BuildSpec) -> dict[str, Any]:
        """Defaults, then the saved or variant config, then the data's sizes and model.options."""
        config = dict(self.defaults)
        if spec.weights_dir is not None:
            config.update(json.loads((Path(spec.weights_dir) / "config.json").read_text()))
        else:
            config.update(spec.variant.config)
        unknown = sorted(set(spec.options) - set(self.defaults))
        if unknown:
            raise ConfigError(
                f"model.options has unknown key(s) {', '.join(unknown)} for {spec.entry.name}; "
                f"known: {', '.join(sorted(self.defaults))}"
            )
        config.update(spec.options)
        return config

    def build(self, spec: BuildSpec) -> Any:
        config = self.config(spec)
        model = self.network(config)
        model.garden_config = config
        if spec.weights_dir is not None:
            from safetensors.torch import load_model

            try:
                load_model(model, str(Path(spec.weights_dir) / "model.safetensors"))
            except RuntimeError as err:
                first = str(err).splitlines()[1].strip() if len(str(err).splitlines()) > 1 else str(err)
                raise WeightsError(
                    f"weights={spec.weights_dir} do not fit this data's {spec.entry.name} ({first}); "
                    "infer on the data the model was trained on, or train again"
                ) from None
        return model

    def save(self, model: Any, preprocessor: Any, folder: Path) -> None:
        from safetensors.torch import save_model

        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(model.garden_config, indent=2) + "\n")
        save_model(model, str(folder / "model.safetensors"))
