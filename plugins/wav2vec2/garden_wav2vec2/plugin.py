"""garden plugin: wav2vec 2.0 (Baevski et al., 2020), speech recognition with CTC."""

from garden.declared import Declared
from garden.hookspecs import hookimpl

GARDEN_API_VERSION = "1.0"

#: models.yaml (the curated entries), results.json (bench/results.py --write) and measurements.json
#: (registry measure --write), beside this file
DECLARED = Declared.beside(__file__)


@hookimpl
def garden_models():
    return DECLARED.models()


@hookimpl
def garden_config_dir():
    return "pkg://garden_wav2vec2.conf"
