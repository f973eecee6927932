"""ctypes mirrors of the descriptor types of tfc/runtime.h ("Model
descriptor"), field for field in the header's order. runtime.h is the one
source of truth: test/Python/abi-layout.test compiles a C program that
prints the header's sizeof/offsetof of every field and compares them with
these."""

import ctypes as C

MODEL_VERSION = 1  # TFC_MODEL_VERSION
MAX_ARRAY_RANK = 4  # TFC_MAX_ARRAY_RANK
MAX_PARAM_RANK = 3  # TFC_MAX_PARAM_RANK
DIM_BATCH, DIM_SEQ, DIM_ENC_SEQ = -1, -2, -3  # TFC_DIM_*
DTYPE_F32, DTYPE_I32, DTYPE_OPAQUE = 0, 1, 2  # tfc_dtype
ACCESS_READ, ACCESS_WRITE, ACCESS_ACCUMULATE = 0, 1, 2  # tfc_access
DEVICE_CPU, DEVICE_CUDA = 0, 1  # tfc_device
OK = 0  # TFC_OK


class ParamInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("offset", C.c_int64),
                ("numel", C.c_int64), ("rank", C.c_int32),
                ("shape", C.c_int64 * MAX_PARAM_RANK), ("init_kind", C.c_int32),
                ("init_param", C.c_float)]


class ArrayInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int32),
                ("access", C.c_int32), ("rank", C.c_int32),
                ("shape", C.c_int64 * MAX_ARRAY_RANK)]


EntryFn = C.CFUNCTYPE(C.c_int32, C.c_void_p, C.POINTER(C.c_void_p),
                      C.c_void_p, C.c_int64, C.c_int64, C.c_int64, C.c_int64)


class EntryInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("call", EntryFn),
                ("num_arrays", C.c_int32), ("arrays", C.POINTER(ArrayInfo))]


class Model(C.Structure):
    _fields_ = [("version", C.c_int32), ("abi_version", C.c_int32),
                ("name", C.c_char_p), ("tfc_version", C.c_char_p),
                ("spec_hash", C.c_uint64), ("device", C.c_int32)] + \
        [(f, C.c_int64) for f in ("d_model", "n_heads", "n_kv_heads", "head_dim",
                                  "d_ff", "depth", "max_seq", "max_batch", "vocab")] + \
        [(f, C.c_int32) for f in ("has_embedding", "has_head", "has_loss",
                                  "has_cross", "has_key_padding")] + \
        [("param_count", C.c_int64), ("num_tensors", C.c_int64),
         ("tensors", C.POINTER(ParamInfo)),
         ("init", C.CFUNCTYPE(C.c_int32, C.POINTER(C.c_float), C.c_uint64)),
         ("workspace_size", C.CFUNCTYPE(C.c_int64, C.c_int64, C.c_int64, C.c_int64)),
         ("forward", EntryInfo), ("backward", EntryInfo),
         ("kv_cache_size", C.CFUNCTYPE(C.c_int64, C.c_int64, C.c_int64)),
         ("kv_cache_init", C.CFUNCTYPE(C.c_int32, C.c_void_p, C.c_void_p, C.c_int64,
                                       C.c_int64, C.c_int64)),
         ("prefill", EntryInfo), ("decode", EntryInfo)]


# (struct, field) -> the C expression test/Python/abi-layout.test prints.
LAYOUT = [(ParamInfo, "tfc_param_info"), (ArrayInfo, "tfc_array_info"),
          (EntryInfo, "tfc_entry_info"), (Model, "tfc_model")]
