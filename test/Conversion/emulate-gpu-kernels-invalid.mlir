// RUN: tfc-opt %s -split-input-file -tfc-emulate-gpu-kernels -verify-diagnostics
// What the CPU emulator cannot run is an error naming it, never a silently
// different kernel.

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'nvvm.read.ptx.sreg.smid' op cannot be emulated by the CUDA emulator}}
      %s = nvvm.read.ptx.sreg.smid : i32
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k(%x: f32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.call_intrinsic' op calls llvm.nvvm.ex2.approx.f, which the CUDA emulator cannot emulate}}
      %r = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"(%x) : (f32) -> f32
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      %id = llvm.mlir.constant(1 : i32) : i32
      // expected-error @+1 {{'nvvm.barrier' op cannot be emulated by the CUDA emulator}}
      nvvm.barrier id = %id
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k(%a: vector<2xf16>, %c: f32) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'nvvm.mma.sync' op cannot be emulated by the CUDA emulator}}
      %d = nvvm.mma.sync A[%a, %a, %a, %a] B[%a, %a] C[%c, %c, %c, %c] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k() attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.inline_asm' op (inline PTX) cannot be emulated by the CUDA emulator}}
      llvm.inline_asm has_side_effects "membar.gl;", "" : () -> ()
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels [#nvvm.target<chip = "sm_90">] {
    llvm.func @k(%x: f64) attributes {gpu.kernel, nvvm.kernel} {
      // expected-error @+1 {{'llvm.fptrunc' op truncates to bf16 from a type other than f32, which the CUDA emulator does not expand}}
      %h = llvm.fptrunc %x : f64 to bf16
      llvm.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @a [#nvvm.target<chip = "sm_90">] {
  }
  // expected-error @+1 {{'gpu.module' op is a second device module; every launch names @kernels (tfc-parallel-loops-to-gpu)}}
  gpu.module @b [#nvvm.target<chip = "sm_90">] {
  }
}
