"""tfc from Python: load a model that `tfc --emit=shared` built and run it
on numpy arrays, through its descriptor (tfc/runtime.h, "Model
descriptor"); ctypes and numpy only, no build step.

    import tfc
    m = tfc.compile("spec.toml")          # or tfc.load("libNAME.so")
    m.init(seed=1)
    out = m.forward(tokens=t, targets=y)  # {"logits": array, "loss": float}
    m.zero_grad(); m.backward()           # m.grads: d loss / d params
    m.tensors["blocks.0.attn.wq.weight"]  # a view into m.params

Every failing call raises tfc.Error with the runtime's message
(tfc_last_error). CPU builds; a CUDA build is refused for now.
docs/python.md has the whole surface.
"""

import ctypes as C
import hashlib
import os
import shutil
import subprocess

import numpy as np

from . import _abi

__all__ = ["Error", "Model", "KVCache", "load", "compile"]


class Error(RuntimeError):
    """A tfc call failed; the message is the runtime's or the compiler's."""


_NUMPY = {_abi.DTYPE_F32: np.float32, _abi.DTYPE_I32: np.int32}


def _text(b):
    return b.decode() if b is not None else None


class Model:
    """One loaded shared model, its parameters, gradients and runtime."""

    def __init__(self, path, threads=0):
        path = os.path.abspath(os.fspath(path))
        try:
            # The model's own dependencies bring the runtime: its functions
            # resolve through this handle, the same instance the model calls.
            lib = C.CDLL(path)
        except OSError as e:
            raise Error(f"tfc.load({path}): {e}") from None
        for name, res, args in [
                ("tfc_model_open", C.c_int32,
                 [C.c_char_p, C.POINTER(C.POINTER(_abi.Model)), C.POINTER(C.c_void_p)]),
                ("tfc_model_close", C.c_int32, [C.c_void_p]),
                ("tfc_last_error", C.c_char_p, []),
                ("tfc_status_string", C.c_char_p, [C.c_int32]),
                ("tfc_runtime_create", C.c_int32, [C.c_int32, C.POINTER(C.c_void_p)]),
                ("tfc_runtime_destroy", None, [C.c_void_p])]:
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise Error(f"tfc.load({path}): not a model tfc built with "
                            f"--emit=shared (no {name})") from None
            fn.restype, fn.argtypes = res, args
        self._lib, self._handle, self._rt = lib, C.c_void_p(), C.c_void_p()
        desc = C.POINTER(_abi.Model)()
        self._check(lib.tfc_model_open(path.encode(), C.byref(desc),
                                       C.byref(self._handle)))
        self._d = desc.contents
        if self._d.device != _abi.DEVICE_CPU:
            raise Error(f"{path}: model {self.name} is a CUDA build; the Python "
                        "binding runs CPU builds")
        self._check(lib.tfc_runtime_create(int(threads), C.byref(self._rt)))
        n = self._d.param_count
        self.params = np.zeros(n, dtype=np.float32)
        self.grads = np.zeros(n, dtype=np.float32)
        self.tensors = {}
        for i in range(self._d.num_tensors):
            t = self._d.tensors[i]
            shape = tuple(t.shape[k] for k in range(t.rank))
            self.tensors[_text(t.name)] = \
                self.params[t.offset:t.offset + t.numel].reshape(shape)
        self._saved = None  # the last forward's (workspace, sizes)

    # -- what the model is -----------------------------------------------

    @property
    def name(self):
        return _text(self._d.name)

    @property
    def param_count(self):
        return self._d.param_count

    def __getattr__(self, key):
        # The sizes of NAME.h: d_model, n_heads, max_seq, vocab, has_loss, ...
        d = self.__dict__.get("_d")
        if d is not None and key in dict(_abi.Model._fields_) and \
                key.startswith(("d_", "n_", "head_", "depth", "max_", "vocab", "has_")):
            return getattr(d, key)
        raise AttributeError(key)

    def entry_arrays(self, entry):
        """(name, dtype, access, shape) of an entry point's arrays; shape
        entries below 0 are TFC_DIM_BATCH / _SEQ / _ENC_SEQ."""
        e = getattr(self._d, entry)
        return [(_text(a.name), a.dtype, a.access, tuple(a.shape[k] for k in range(a.rank)))
                for a in (e.arrays[i] for i in range(e.num_arrays))]

    # -- calls ---------------------------------------------------------------

    def init(self, seed=1):
        """The spec's initialisation into self.params."""
        self._check(self._d.init(self.params.ctypes.data_as(C.POINTER(C.c_float)),
                                 C.c_uint64(seed)))

    def zero_grad(self):
        self.grads.fill(0)

    def forward(self, **inputs):
        """Runs forward on the given inputs (tokens, x, enc, targets,
        lengths, as the model takes them); returns its outputs by name,
        the loss as a float. The workspace is kept for backward."""
        batch, seq, enc_seq = self._sizes("forward", inputs)
        ws_bytes = self._d.workspace_size(batch, seq, enc_seq)
        if ws_bytes < 0:
            sizes = f"batch {batch}, seq {seq}" + \
                (f", enc_seq {enc_seq}" if self._d.has_cross else "")
            raise Error(f"{self.name}: {sizes} out of range (max_batch "
                        f"{self._d.max_batch}, max_seq {self._d.max_seq})")
        workspace = np.empty(ws_bytes + 64, dtype=np.uint8)
        out = self._call("forward", inputs, workspace, ws_bytes, (batch, seq, enc_seq))
        self._saved = (workspace, ws_bytes, (batch, seq, enc_seq))
        return out

    def backward(self, **inputs):
        """Runs backward after forward (same sizes, its workspace): adds the
        parameter gradients into self.grads (zero_grad first unless
        accumulating) and returns the input gradients (d_x, d_enc) by name.
        Without a loss, pass d_logits or d_y."""
        if self._saved is None:
            raise Error(f"{self.name}: backward before forward")
        if not self._d.backward.call:
            raise Error(f"model {self.name} was compiled --forward-only: it has no backward")
        workspace, ws_bytes, sizes = self._saved
        return self._call("backward", inputs, workspace, ws_bytes, sizes)

    # -- decoding with a KV cache (docs/abi.md "Decoding") -------------------

    def kv_cache_available(self):
        """Whether the model decodes (prefill, decode, kv_cache)."""
        return bool(self._d.kv_cache_size)

    def kv_cache(self, batch, max_len=None):
        """A KV cache for `batch` sequences of up to max_len (default
        max_seq) positions, set up by NAME_kv_cache_init."""
        if not self.kv_cache_available():
            raise Error(f"model {self.name} has no decoding (cross-attention or a "
                        "bidirectional mask)")
        return KVCache(self, batch, max_len or self._d.max_seq)

    def prefill(self, cache, tokens, lengths=None):
        """Runs prompts (right-padded; lengths[b] tokens each, default all)
        from position 0 into `cache`; returns every position's logits."""
        tokens = np.asarray(tokens, np.int32)
        if lengths is None:
            lengths = np.full(tokens.shape[:1], tokens.shape[-1], np.int32)
        return self._decoding("prefill", cache, tokens=tokens, lengths=lengths)

    def decode(self, cache, tokens, positions):
        """One token per sequence at positions[b]; returns its logits."""
        return self._decoding("decode", cache, tokens=tokens, positions=positions)

    def _decoding(self, entry, cache, **inputs):
        if not isinstance(cache, KVCache) or cache.model is not self:
            raise Error(f"{self.name}_{entry}: the cache is not one of this model's "
                        "kv_cache()")
        batch, seq, _ = self._sizes(entry, inputs)
        ws_bytes = self._d.workspace_size(batch, seq, seq)
        if ws_bytes < 0:
            raise Error(f"{self.name}: batch {batch}, seq {seq} out of range (max_batch "
                        f"{self._d.max_batch}, max_seq {self._d.max_seq})")
        workspace = np.empty(ws_bytes + 64, dtype=np.uint8)
        out = self._call(entry, dict(inputs, kv_cache=cache), workspace, ws_bytes,
                         (batch, seq, seq))
        return out["logits"] if "logits" in out else out["y"]

    def close(self):
        """Frees the runtime (its threads); the model is unusable after."""
        rt = self.__dict__.get("_rt")
        if rt:
            self._lib.tfc_runtime_destroy(rt)
            self._rt = C.c_void_p()

    def __del__(self):
        self.close()

    # -- the generic call ----------------------------------------------------

    def _check(self, status):
        if status != _abi.OK:
            message = _text(self._lib.tfc_last_error()) or \
                _text(self._lib.tfc_status_string(status))
            raise Error(message)

    def _sizes(self, entry, inputs):
        """batch, seq and enc_seq from the inputs' shapes."""
        known = {}
        for name, dtype, access, shape in self.entry_arrays(entry):
            if name not in inputs or access != _abi.ACCESS_READ:
                continue
            given = np.shape(inputs[name])
            if len(given) != len(shape):
                raise Error(f"{self.name}_{entry}: '{name}' has {len(given)} "
                            f"dimensions, not {len(shape)} {self._shape_text(shape)}")
            for want, got in zip(shape, given):
                if want >= 0 and want != got:
                    raise Error(f"{self.name}_{entry}: '{name}' has shape {tuple(given)}, "
                                f"not {self._shape_text(shape)}")
                if want < 0 and known.setdefault(want, got) != got:
                    raise Error(f"{self.name}_{entry}: '{name}' has shape {tuple(given)}: "
                                f"{self._dim_name(want)} is {known[want]} elsewhere")
        return (known.get(_abi.DIM_BATCH, 1), known.get(_abi.DIM_SEQ, 1),
                known.get(_abi.DIM_ENC_SEQ, known.get(_abi.DIM_SEQ, 1)))

    @staticmethod
    def _dim_name(d):
        return {_abi.DIM_BATCH: "batch", _abi.DIM_SEQ: "seq", _abi.DIM_ENC_SEQ: "enc_seq"}[d]

    def _shape_text(self, shape):
        return "[" + ", ".join(self._dim_name(d) if d < 0 else str(d) for d in shape) + "]"

    def _call(self, entry, inputs, workspace, ws_bytes, sizes):
        batch, seq, enc_seq = sizes
        dims = {_abi.DIM_BATCH: batch, _abi.DIM_SEQ: seq, _abi.DIM_ENC_SEQ: enc_seq}
        arrays, keep, outputs = [], [], {}
        names = set()
        for name, dtype, access, shape in self.entry_arrays(entry):
            names.add(name)
            concrete = tuple(dims.get(d, d) for d in shape)
            if name == "params":
                a = self.params
            elif name == "d_params":
                a = self.grads
            elif dtype == _abi.DTYPE_OPAQUE:
                a = inputs[name]  # the KV cache: its aligned buffer
                keep.append(a)
                arrays.append(a.address)
                continue
            elif access == _abi.ACCESS_WRITE:
                a = np.zeros(concrete, dtype=_NUMPY[dtype])
                outputs[name] = a
            elif name in inputs:
                a = np.ascontiguousarray(inputs[name], dtype=_NUMPY[dtype])
            else:
                raise Error(f"{self.name}_{entry} needs '{name}' {self._shape_text(shape)}")
            keep.append(a)
            arrays.append(a.ctypes.data)
        unknown = sorted(set(inputs) - names)
        if unknown:
            raise Error(f"{self.name}_{entry} takes no '{unknown[0]}' (it takes "
                        f"{', '.join(sorted(names - {'params', 'd_params'}))})")
        argv = (C.c_void_p * len(arrays))(*arrays)
        base = workspace.ctypes.data
        aligned = (base + 63) // 64 * 64
        e = getattr(self._d, entry)
        self._check(e.call(self._rt, argv, C.c_void_p(aligned), ws_bytes,
                           batch, seq, enc_seq))
        return {k: (float(v) if v.ndim == 0 else v) for k, v in outputs.items()}


class KVCache:
    """A model's KV cache: kv_cache_size(batch, max_len) bytes, 64-byte
    aligned, set up by kv_cache_init; Model.kv_cache makes one."""

    def __init__(self, model, batch, max_len):
        d = model._d
        size = d.kv_cache_size(batch, max_len)
        if size < 0:
            raise Error(f"{model.name}: a KV cache of batch {batch}, max_len {max_len} "
                        f"is out of range (max_batch {d.max_batch}, max_seq {d.max_seq})")
        self.model, self.batch, self.max_len = model, batch, max_len
        self._buffer = np.zeros(size + 64, dtype=np.uint8)
        self.address = (self._buffer.ctypes.data + 63) // 64 * 64
        model._check(d.kv_cache_init(model._rt, C.c_void_p(self.address), size,
                                     batch, max_len))


def load(path, threads=0):
    """The model of a `tfc --emit=shared` object."""
    return Model(path, threads)


def _find_tfc():
    for candidate in (os.environ.get("TFC"), shutil.which("tfc"),
                      os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "tfc")):
        if candidate and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise Error("tfc.compile: no tfc (set TFC, put it on PATH, or build the tree)")


def compile(spec, args=(), cache_dir=None, tfc=None, threads=0):
    """Compiles `spec` (a TOML file) with `tfc --emit=shared`, once per
    distinct text, arguments and compiler, into cache_dir (default
    $TFC_CACHE_DIR, else ~/.cache/tfc), and loads it."""
    tfc = tfc or _find_tfc()
    with open(spec, "rb") as f:
        text = f.read()
    # The compiler by version and by file: a rebuilt tfc compiles again.
    st = os.stat(tfc)
    version = subprocess.run([tfc, "--version"], capture_output=True).stdout + \
        f"{st.st_size} {st.st_mtime_ns}".encode()
    key = hashlib.sha256(text + b"\0" + "\0".join(args).encode() + b"\0" +
                         version).hexdigest()[:16]
    cache = cache_dir or os.environ.get("TFC_CACHE_DIR") or \
        os.path.join(os.path.expanduser("~"), ".cache", "tfc")
    out_dir = os.path.join(cache, key)
    lib = os.path.join(out_dir, "libmodel.so")
    if not os.path.exists(lib):
        os.makedirs(out_dir, exist_ok=True)
        tmp = lib + f".tmp{os.getpid()}"
        r = subprocess.run([tfc, os.fspath(spec), "--emit=shared", "-o", tmp, *args],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Error(r.stderr.strip() or f"tfc exited {r.returncode}")
        os.replace(tmp, lib)
    return Model(lib, threads)
