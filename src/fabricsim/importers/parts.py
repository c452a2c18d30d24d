"""PCI device ids and NCCL compute capabilities -> catalog part names, for inputs that identify parts by number.

Device ids from the PCI ID repository (pciutils/pciids@c1c12547d626ebf05fd0223144ad87fab5e95d06, pci.ids):
vendor 10de NVIDIA, 15b3 Mellanox, 1d0f Amazon. ibstat's 'CA type: MT4129' and ibv_devinfo's
'vendor_part_id: 4129' are the same Mellanox device id in decimal (4129 = 0x1021).
"""

from __future__ import annotations

# 10de:<id> -> catalog GPU. pci.ids names in the comments.
NVIDIA_GPUS = {
    0x15F9: "P100",  # GP100GL [Tesla P100 SXM2 16GB]
    0x1DB1: "V100",  # GV100GL [Tesla V100 SXM2 16GB] (the catalog's V100 is the 32 GB SKU; links are the same)
    0x1DB5: "V100",  # GV100GL [Tesla V100 SXM2 32GB]
    0x1E04: "RTX2080Ti",  # TU102 [GeForce RTX 2080 Ti]
    0x20B0: "A100-40GB",  # GA100 [A100 SXM4 40GB]
    0x20B2: "A100-80GB",  # GA100 [A100 SXM4 80GB]
    0x2324: "H800",  # GH100 [H800]
    0x2330: "H100",  # GH100 [H100 SXM5 80GB]
    0x2331: "H100-PCIe",  # GH100 [H100 PCIe]
    0x2335: "H200",  # GH100 [H200 SXM 141GB]
    0x2684: "RTX4090",  # AD102 [GeForce RTX 4090]
    0x26B9: "L40S",  # AD102GL [L40S]
    0x2901: "B200",  # GB100 [B200]
    0x2941: "GB200",  # GB100 [HGX GB200]
    0x2B85: "RTX5090",  # GB202 [GeForce RTX 5090]
}

# 15b3:<id> (decimal as ibstat prints it) -> catalog NIC family; 'vf' = a virtual function that does not say
# which ConnectX it is (cloud VMs), 'cx6-dx' = an Ethernet-only ConnectX-6 Dx.
MELLANOX_NICS = {
    4119: "cx5",  # 1017 MT27800 Family [ConnectX-5]
    4121: "cx5",  # 1019 MT28800 Family [ConnectX-5 Ex]
    4123: "cx6",  # 101b MT28908 Family [ConnectX-6]
    4125: "cx6-dx",  # 101d MT2892 Family [ConnectX-6 Dx]
    4126: "vf",  # 101e ConnectX Family mlx5Gen Virtual Function
    4129: "cx7",  # 1021 MT2910 Family [ConnectX-7]
    4131: "cx8",  # 1023 CX8 Family [ConnectX-8]
    41692: "bf3",  # a2dc MT43244 BlueField-3 integrated ConnectX-7 network controller
}
