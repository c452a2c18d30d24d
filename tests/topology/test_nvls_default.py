"""A cluster file that leaves `nvls` out gets what NCCL does by default (NCCL_NVLS_ENABLE=2: NVLS where the
NVSwitch reduces in the switch): on for Hopper / Blackwell NVSwitch domains, off for A100's NVSwitch and PCIe."""

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.topology import ClusterSpec, build, preset_spec
from fabricsim.tuner.select import best


def _file(gpu: str, chips: int, extra: str = "") -> ClusterSpec:
    return ClusterSpec.from_yaml(f"name: box\ngpu: {gpu}\nnodes: 1\ngpus_per_node: 8\nscaleup: nvswitch\n"
                                 f"domain_size: 8\nnvswitch_chips: {chips}\n{extra}")


@pytest.mark.parametrize("gpu, chips, on", [("H100", 4, True), ("H200", 4, True), ("B200", 2, True),
                                            ("A100-80GB", 6, False)])
def test_nvls_follows_the_nvswitch_generation(gpu, chips, on):
    assert _file(gpu, chips).nvls is on
    assert _file(gpu, chips, "nvls: false\n").nvls is False  # NCCL_NVLS_ENABLE=0 stays expressible


def test_an_h100_file_picks_what_the_preset_picks_and_writes_the_value_in_force():
    spec = _file("H100", 4)
    pick = best(build(spec), "all_reduce", 1 << 30)
    assert pick.algorithm == best(build(preset_spec("dgx-h100")), "all_reduce", 1 << 30).algorithm == "nvls"
    assert "nvls: true" in spec.to_yaml() and ClusterSpec.from_yaml(spec.to_yaml()) == spec


def test_pcie_and_explicit_nvls_without_nvswitch():
    pcie = preset_spec("pcie-l40s-8")
    assert pcie.nvls is False
    with pytest.raises(FabricsimError, match="nvls: true needs NVSwitch"):
        ClusterSpec.from_yaml(pcie.to_yaml().replace("nvls: false", "nvls: true"))
