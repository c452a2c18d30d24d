"""`fabricsim schema cluster|model` prints a JSON Schema that the files fabricsim writes and reads validate against."""

import dataclasses
import json
import subprocess
import sys

import jsonschema
import pytest
import yaml

from fabricsim.cli.main import main
from fabricsim.topology import PRESETS, preset_spec, save_cluster
from fabricsim.training.models import MODELS


def schema(kind: str) -> dict:
    """The schema as the real entry point prints it (a fresh process)."""
    out = subprocess.run([sys.executable, "-m", "fabricsim.cli.main", "schema", kind], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def schema_in_process(kind: str, capsys) -> dict:
    """The schema as the console script's `main()` prints it, in this process."""
    capsys.readouterr()
    assert main(["schema", kind]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def cluster_schema():
    doc = schema("cluster")
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


def test_every_preset_saved_as_yaml_validates(cluster_schema, tmp_path):
    for name in PRESETS:
        path = tmp_path / f"{name}.yaml"
        save_cluster(preset_spec(name), path)
        jsonschema.validate(yaml.safe_load(path.read_text()), cluster_schema)


@pytest.mark.parametrize("key, value", [("nodes", 0), ("bogus", 1), ("scaleup", "torus"), ("nvswitch_chips", 32768),
                                        ("oversubscription", float("inf")), ("rail_optimized", "yes")])
def test_bad_cluster_files_fail_the_schema(cluster_schema, key, value):
    data = {**dataclasses.asdict(preset_spec("dgx-h100")), key: value}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, cluster_schema)


def test_model_schema_accepts_the_builtin_models_and_names_the_fields(capsys):
    doc = schema_in_process("model", capsys)
    jsonschema.Draft202012Validator.check_schema(doc)
    for model in MODELS.values():
        jsonschema.validate(dataclasses.asdict(model), doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**dataclasses.asdict(MODELS["llama3-8b"]), "layers": 10 ** 9}, doc)
