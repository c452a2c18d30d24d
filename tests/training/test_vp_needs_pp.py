"""vp > 1 interleaves virtual stages over a pipeline: with pp 1 there is none (Megatron-Core refuses it), so it is an
error, not a 'pp1v2' layout timed as pp1."""

from __future__ import annotations

import pytest

from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.training import parallel as P
from fabricsim.training.models import load_model


def test_vp_without_a_pipeline_is_refused():
    model = load_model("gpt3-5b")
    with pytest.raises(FabricsimError, match=r"^vp=2 interleaves virtual stages over a pipeline, and pp=1 has none"):
        P.validate(model, P.resolve(P.Parallelism(vp=2), 8, model.seq), 8, 8)
    P.validate(model, P.resolve(P.Parallelism(pp=2, vp=2), 8, model.seq), 8, 8)


def test_the_command_says_so(capsys):
    assert main(["train", "--model", "gpt3-5b", "-c", "dgx-h100", "--gpus", "8", "--vp", "2"]) == 2
    err = capsys.readouterr().err
    assert "give pp 2 or more, or drop vp" in err and len(err.splitlines()) == 1
