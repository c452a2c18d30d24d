"""importers.nccl_log.scan on real logs: the facts the doctor tests causes against, with the lines that state them."""

from __future__ import annotations

from pathlib import Path

from fabricsim.importers.nccl_log import scan

ROOT = Path(__file__).parents[1]
P5 = ROOT / "importers/fixtures/logs/aws-p5-efa-16gpu-nccl-info.log"
AKS = ROOT / "importers/fixtures/logs/azure-aks-30-ndv4-excerpts.log"
GB200 = ROOT / "reports/fixtures/oke_gb200_headerless.log"
TUNING = Path(__file__).parent / "fixtures/nccl-1453-tuning-lines.log"


def test_p5_environment_plugin_and_network_lines():
    log = scan(P5.read_text())
    assert log.env["NCCL_BUFFSIZE"] == "8388608" and log.env["NCCL_P2P_NET_CHUNKSIZE"] == "524288"
    assert log.plugin_latency_us == 75.0 and log.tuner_plugin is True
    assert log.net_devs == {"AWS Libfabric": set(range(8))} and len(log.ofi_groups) == 8
    first = {kind: lines[0][0] for kind, lines in log.lines.items()}
    # line numbers read by hand from the log (grep -n)
    assert (first["version"], first["net"], first["network"], first["plugin_latency"]) == (72, 309, 356, 84)
    assert (first["net_gdr"], first["channels"], first["tuner"]) == (1413, 2823, 2869)
    assert "net_host" not in log.lines and "local_shm" not in log.lines
    assert log.lines["net_gdr"][0][1].endswith("via NET/AWS Libfabric/5/GDRDMA")


def test_aks_channels_without_gpudirect_and_no_nvls():
    log = scan(AKS.read_text())
    assert log.lines["net_host"][0][0] == 22 and log.lines["net_host"][0][1].endswith("via NET/IB/9")
    assert "net_gdr" not in log.lines and log.lines["nvls_not"][0][0] == 9
    assert log.net_devs["IB"] >= {9, 11, 13, 15}


def test_ring_gdr_summary_line():
    log = scan(GB200.read_text())
    assert log.ring_gdr == [True] and log.lines["ring_gdr"][0][0] == 1
    assert log.comms == {8: {"nodes": 0, "local": 0, "mnnvl": None}} and len(log.hosts) == 2


def test_tuning_lines_name_nccl_algorithm_and_protocol():
    # NCCL_ALGO_TREE = 0, NCCL_PROTO_LL128 = 1 (src/include/nccl_common.h)
    log = scan(TUNING.read_text())
    assert log.tuning == {("", 262144): ("Tree", "LL128")} and log.lines["tuning"][0][0] == 1


def test_a_plain_nccl_tests_log_has_no_info_facts():
    log = scan((Path(__file__).parent / "fixtures/dgxh100-4gpu-ar.log").read_text())
    assert log.info_lines == 0 and not log.lines and not log.env
