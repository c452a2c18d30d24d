"""The verify command."""

import pytest
from click.testing import CliRunner

from fabricsim.cli.verify import parse_ranks, verify
from fabricsim.errors import FabricsimError


def test_verify_passes_and_prints_table():
    result = CliRunner().invoke(verify, ["--ranks", "1-3,8", "--count", "7"])
    assert result.exit_code == 0, result.output
    assert "all_reduce      nvls" in result.output and "all passed" in result.output
    assert "FAIL" not in result.output


def test_verify_filters():
    result = CliRunner().invoke(verify, ["--ranks", "16", "--algo", "hierarchical,ring", "--collective", "all_reduce"])
    assert result.exit_code == 0
    assert "hierarchical" in result.output and "tree" not in result.output


@pytest.mark.parametrize(
    "args",
    [["--ranks", "0"], ["--ranks", "5-2"], ["--ranks", "x"], ["--algo", "tree", "--collective", "all_gather"],
     ["--ranks", "3", "--algo", "hierarchical"], ["--collective", "gather"], ["--ranks", "1-100000"],
     ["--ranks", "2,3", "--count", "100000000"]],
)
def test_verify_refuses(args):
    result = CliRunner().invoke(verify, args)
    assert isinstance(result.exception, FabricsimError)


def test_parse_ranks():
    assert parse_ranks("2,3,8") == [2, 3, 8] and parse_ranks("1-4") == [1, 2, 3, 4]
