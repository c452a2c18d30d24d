"""The MLCommons Chakra execution-trace messages, built with protobuf's runtime descriptor API.

Field names, numbers and enum values are those of Chakra's published schema (package ChakraProtoMsg,
schema/protobuf/et_def.proto in mlcommons/chakra): GlobalMetadata, Node, AttributeProto (a oneof of
scalars and lists), IOInfo, NodeType and CollectiveCommType. The storage extensions of newer schema
versions (StorageInfo) are not declared: protobuf keeps such fields as unknown fields, and fabricsim does
not time storage. protobuf is the optional extra `fabricsim[chakra]`, imported only when a trace is read
or written.
"""

from __future__ import annotations

from functools import lru_cache

from fabricsim.errors import FabricsimError

PACKAGE = "ChakraProtoMsg"
NODE_TYPES = ("INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE", "COMP_NODE", "COMM_SEND_NODE",
              "COMM_RECV_NODE", "COMM_COLL_NODE", "STORAGE_NODE", "BATCH_NODE", "CHECKPOINT_NODE")
COLL_TYPES = ("ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER", "BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER",
              "REDUCE_SCATTER_BLOCK", "BARRIER")
# AttributeProto's oneof `value`: (field name, number, scalar type) for each scalar; each has a list twin
# '<type>_list' = number + 1 holding a '<Type>List' message with `repeated <type> values = 1`.
_SCALARS = (("double", 3), ("float", 5), ("int32", 7), ("int64", 9), ("uint32", 11), ("uint64", 13), ("sint32", 15),
            ("sint64", 17), ("fixed32", 19), ("fixed64", 21), ("sfixed32", 23), ("sfixed64", 25), ("bool", 27),
            ("string", 29), ("bytes", 31))


def _protobuf():
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        raise FabricsimError("reading Chakra traces needs protobuf: pip install 'fabricsim[chakra]'") from None
    return descriptor_pb2, descriptor_pool, message_factory


def _field(msg, name: str, number: int, kind: str, label: str = "optional", type_name: str = "", oneof=None):
    d = _protobuf()[0].FieldDescriptorProto
    f = msg.field.add(name=name, number=number, type=getattr(d, f"TYPE_{kind.upper()}"),
                      label=getattr(d, f"LABEL_{label.upper()}"))
    if type_name:
        f.type_name = f".{PACKAGE}.{type_name}"
    if oneof is not None:
        f.oneof_index = oneof
    return f


def _file():
    descriptor_pb2 = _protobuf()[0]
    fd = descriptor_pb2.FileDescriptorProto(name="fabricsim_chakra_et_def.proto", package=PACKAGE, syntax="proto3")
    attr = fd.message_type.add(name="AttributeProto")
    _field(attr, "name", 1, "string")
    _field(attr, "doc_string", 2, "string")
    attr.oneof_decl.add(name="value")
    for scalar, number in _SCALARS:
        list_name = scalar.capitalize() + "List"
        lst = fd.message_type.add(name=list_name)
        _field(lst, "values", 1, scalar, "repeated")
        _field(attr, f"{scalar}_val", number, scalar, oneof=0)
        _field(attr, f"{scalar}_list", number + 1, "message", type_name=list_name, oneof=0)
    meta = fd.message_type.add(name="GlobalMetadata")
    _field(meta, "version", 1, "string")
    _field(meta, "attr", 2, "message", "repeated", "AttributeProto")
    for name, values in (("NodeType", NODE_TYPES), ("CollectiveCommType", COLL_TYPES)):
        enum = fd.enum_type.add(name=name)
        for i, v in enumerate(values):
            enum.value.add(name=v, number=i)
    io = fd.message_type.add(name="IOInfo")
    for i, name in enumerate(("values", "shapes", "types"), 1):
        _field(io, name, i, "string")
    node = fd.message_type.add(name="Node")
    _field(node, "id", 1, "uint64")
    _field(node, "name", 2, "string")
    _field(node, "type", 3, "enum", type_name="NodeType")
    _field(node, "ctrl_deps", 4, "uint64", "repeated")
    _field(node, "data_deps", 5, "uint64", "repeated")
    _field(node, "start_time_micros", 6, "uint64")
    _field(node, "duration_micros", 7, "uint64")
    _field(node, "inputs", 8, "message", type_name="IOInfo")
    _field(node, "outputs", 9, "message", type_name="IOInfo")
    _field(node, "attr", 10, "message", "repeated", "AttributeProto")
    return fd


@lru_cache(maxsize=1)
def messages() -> dict:
    """{'GlobalMetadata': class, 'Node': class, 'AttributeProto': class, ...} (built once)."""
    _, descriptor_pool, message_factory = _protobuf()
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(_file().SerializeToString())
    fd = pool.FindFileByName("fabricsim_chakra_et_def.proto")
    return {name: message_factory.GetMessageClass(fd.message_types_by_name[name]) for name in fd.message_types_by_name}
