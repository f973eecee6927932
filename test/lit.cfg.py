# -*- Python -*- lit configuration for tfc.
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TFC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".toml", ".test", ".c"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tfc_obj_root, "test")
# Inputs shared by several tests, the unit-test and numerics drivers live
# next to the tests but are not tests themselves.
config.excludes = ["Inputs", "unit", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py", "harness", "emu"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tfc_src", config.tfc_src_root))
config.substitutions.append(("%tfc_lib", os.path.join(config.tfc_obj_root, "lib")))
config.substitutions.append(("%tfc_include",
                             os.path.join(config.tfc_src_root, "runtime", "include")))
config.substitutions.append(("%cc", config.c_compiler))
# C++ programs over the runtime (tfc/model.hpp), instrumented like %cc in a
# sanitized build.
cxx = shutil.which("c++") or "g++"
if getattr(config, "tfc_sanitize", ""):
    cxx += f" -fsanitize={config.tfc_sanitize} -fno-sanitize-recover=all"
config.substitutions.append(("%cxx", cxx))
config.substitutions.append(("%python", "/usr/bin/python3"))

llvm_config.with_system_environment(["HOME", "TMPDIR"])
# FileCheck, not, count come from LLVM's tools; tfc's own tools come first.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", os.path.join(config.tfc_obj_root, "bin"),
                             append_path=True)
llvm_config.use_default_substitutions()

tool_dirs = [os.path.join(config.tfc_obj_root, "bin"), config.llvm_tools_dir]
# `tfc` must not be substituted inside `--emit=tfc`: '=' may not precede it.
llvm_config.add_tool_substitutions([ToolSubst("tfc", pre=r".-^/\<="), "tfc-opt",
                                    "tfc-emu", "tfc-train"],
                                   tool_dirs)

# The install tests (test/Install): cmake and pkg-config on PATH.
config.substitutions.append(("%tfc_obj", config.tfc_obj_root))
# The pkg-config package's name, as a substitution applied after the tool
# substitutions (which would turn a bare `tfc` into build/bin/tfc).
config.substitutions.append(("%tfc_pkg", "tfc"))
for tool in ("cmake", "pkg-config"):
    if shutil.which(tool):
        config.available_features.add(tool)

# The long tier (scripts/test-long.sh sets TFC_LONG_TESTS=1): the full
# products and repeats that CI's suite samples (tests with REQUIRES: long).
if os.environ.get("TFC_LONG_TESTS") == "1":
    config.available_features.add("long")

# The CPU multiplies bf16 pairs (AVX512-BF16's vdpbf16ps, with AVX-512):
# tests that run the bf16 micro-kernel built for it, not only compile it.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        cpu_flags = next((line.split() for line in cpuinfo
                          if line.startswith("flags")), [])
except OSError:
    cpu_flags = []
if "avx512f" in cpu_flags and "avx512_bf16" in cpu_flags:
    config.available_features.add("avx512bf16")

# Numerics tests need the PyTorch oracle (Debian's python3-torch).
if os.system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0:
    config.available_features.add("torch")

# The CUDA target: ptxas (the cubin, and a check of every PTX the compiler
# writes) where the toolkit is installed; a GPU where the driver loads and
# reports a device (tests that run kernels need one).
ptxas = shutil.which("ptxas")
if not ptxas and os.access("/usr/local/cuda/bin/ptxas", os.X_OK):
    ptxas = "/usr/local/cuda/bin/ptxas"
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))


def cuda_device_count():
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


if cuda_device_count() > 0:
    config.available_features.add("cuda-device")

# tfc-train built with MPI, and an mpirun to launch it: the data-parallel
# tests. Loopback only: shared memory between the ranks, the launcher's own
# traffic on lo; several ranks per core; root allowed (containers).
tfc_train = os.path.join(config.tfc_obj_root, "bin", "tfc-train")
mpirun = shutil.which("mpirun")
if mpirun and os.path.exists(tfc_train):
    import subprocess
    version = subprocess.run([tfc_train, "--version"], capture_output=True,
                             text=True).stdout
    if "MPI: yes" in version:
        config.available_features.add("mpi")
        config.substitutions.append(
            ("%mpirun", mpirun + " --allow-run-as-root --oversubscribe"
             " --mca btl self,vader --mca oob_tcp_if_include lo"))

# The CPU emulator of the CUDA driver (test/emu, tests only): CUDA builds made
# with tfc-emu run on it through TFC_CUDA_DRIVER=%cuda_emu.
cuda_emu = os.path.join(config.tfc_obj_root, "lib", "libtfc_cuda_emu.so")
if os.path.exists(cuda_emu):
    config.available_features.add("cuda-emu")
    config.substitutions.append(("%cuda_emu", cuda_emu))
# Its NCCL (built with MPI): tfc-train's allreduce over device buffers.
nccl_emu = os.path.join(config.tfc_obj_root, "lib", "libtfc_nccl_emu.so")
if os.path.exists(nccl_emu):
    config.available_features.add("nccl-emu")
    config.substitutions.append(("%nccl_emu", nccl_emu))

# A TFC_SANITIZE build: every sanitizer report is fatal, leaks included (the
# same defaults as scripts/test-sanitized.sh, unless the environment sets its
# own). %cc then instruments the programs it links against the runtime.
if getattr(config, "tfc_sanitize", ""):
    config.environment.setdefault(
        "ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:check_initialization_order=1")
    config.environment.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    config.available_features.add("sanitizer")
