"""Malformed or unsupported input: one FabricsimError naming the file and the line; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.importers import FORMATS, import_cluster, read_machine

FIX = Path(__file__).parent / "fixtures"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_truncated_xml_names_the_line(tmp_path):
    text = (FIX / "xml/azure-ndv5-topo.xml").read_text().splitlines()
    p = _write(tmp_path, "cut.xml", "\n".join(text[:6]) + "\n")
    with pytest.raises(FabricsimError, match=r"cut\.xml \(nccl-xml\): line \d+, column \d+: malformed XML"):
        read_machine(p)


def test_hwloc_xml_is_refused_with_the_fix(tmp_path):
    p = _write(tmp_path, "hw.xml", '<?xml version="1.0"?>\n<topology version="2.0">\n</topology>\n')
    with pytest.raises(FabricsimError, match="hwloc.*NCCL_TOPO_DUMP_FILE"):
        read_machine(p)


def test_smi_unknown_cell_names_the_line(tmp_path):
    text = (FIX / "smi/sglang-30401-h100-topo-m.txt").read_text().replace("PIX     NODE    NODE    NODE    SYS",
                                                                        "PIX     NODE    NVX     NODE    SYS", 1)
    with pytest.raises(FabricsimError, match=r"line 2: 'NVX' is not an nvidia-smi topo -m cell"):
        read_machine(_write(tmp_path, "topo.txt", text))


def test_smi_short_row_names_the_line(tmp_path):
    lines = (FIX / "smi/sglang-30401-h100-topo-m.txt").read_text().splitlines()
    lines[3] = "GPU2    NV18    NV18     X"
    with pytest.raises(FabricsimError, match=r"line 4: row GPU2 has 3 cells for 16 columns"):
        read_machine(_write(tmp_path, "topo.txt", "\n".join(lines)))


def test_ibstat_garbage_line(tmp_path):
    text = (FIX / "ib/gpud-ibstat-h100-all-active.txt").read_text().replace("Rate: 400", "Rate: fast", 1)
    with pytest.raises(FabricsimError, match=r"line 11: rate 'fast' is not a number"):
        read_machine(_write(tmp_path, "ibstat.txt", text))


def test_nccl_log_malformed_comm_line(tmp_path):
    line = "host:1:2 [0] NCCL INFO comm 0x55 rank 0 nRanks sixteen nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
    with pytest.raises(FabricsimError, match=r"log\.txt \(nccl-log\): line 2: a 'comm \.\.\. nRanks' line"):
        read_machine(_write(tmp_path, "log.txt", "host:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + line))


def test_unsupported_file(tmp_path):
    with pytest.raises(FabricsimError, match="not a format topo import reads.*it starts 'hello world'"):
        read_machine(_write(tmp_path, "x.txt", "hello world\n"))


def test_files_of_two_machines_contradict(tmp_path):
    with pytest.raises(FabricsimError, match="disagree on GPU0 model"):
        import_cluster([FIX / "xml/ibm-vpc-h100-topo.xml", FIX / "logs/azure-aks-30-ndv4-excerpts.log"])


def test_cli_writes_a_loadable_cluster_and_prints_assumptions(tmp_path, capsys):
    out = tmp_path / "ndv5.yaml"
    assert main(["topo", "import", str(FIX / "xml/azure-ndv5-topo.xml"), "--gpu", "H100", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"wrote {out}: 1 node of 8 x H100")
    assert "assumed: NIC rate 400 Gb/s" in text and "check: NICs per node: inputs 8, cluster 8 (matches)" in text
    from fabricsim.topology import load_cluster
    assert load_cluster(str(out)).n_gpus == 8


def test_cli_error_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["topo", "import", str(FIX / "xml/azure-ndv5-topo.xml"), "-o", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no input names the GPU model") and err.count("\n") == 1


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.text(max_size=400))
def test_parsers_only_raise_fabricsim_errors(fmt, text):
    try:
        FORMATS[fmt](text, "fuzz")
    except FabricsimError:
        pass


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["xml/ibm-vpc-h100-topo.xml", "smi/sglang-30401-h100-topo-m.txt",
                        "ib/gpud-ibstat-h100-all-active.txt", "logs/azure-aks-30-ndv4-excerpts.log"]),
       st.integers(min_value=0, max_value=10_000), st.text(min_size=1, max_size=5))
def test_corrupted_fixtures_only_raise_fabricsim_errors(name, at, junk):
    text = (FIX / name).read_text()
    at %= len(text)
    fmt = {"xml": "nccl-xml", "smi": "nvidia-smi", "ib": "ibstat", "logs": "nccl-log"}[name.split("/")[0]]
    try:
        FORMATS[fmt](text[:at] + junk + text[at + len(junk):], "fuzz")
    except FabricsimError:
        pass


def test_corrupt_nvlink_tclass_is_a_clear_error(tmp_path):
    """An NVLink's tclass that is not hex (a corrupted dump) names the attribute, as the pci class does."""
    text = (FIX / "xml/ibm-vpc-h100-topo.xml").read_text().replace('tclass="0x068000"', 'tclass="1x068000"', 1)
    p = _write(tmp_path, "bad.xml", text)
    with pytest.raises(FabricsimError, match=r"tclass '1x068000', not a hex PCI class"):
        read_machine(p)


def test_a_gpu_without_nvlink_for_inputs_that_show_nvlink_names_gpu(tmp_path, capsys):
    out = tmp_path / "x.yaml"
    assert main(["topo", "import", str(FIX / "smi/sglang-30401-h100-topo-m.txt"), "--gpu", "L40S", "-o", str(out)]) == 2
    assert capsys.readouterr().err == ("error: --gpu L40S: the inputs show NVLink (18 per GPU) and a L40S has none: give "
                                       "the GPU these files come from (one with NVLink), or leave --gpu out to infer it\n")
    assert not out.exists()
