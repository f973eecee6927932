// RUN: tfc-opt %s -split-input-file -tfc-merge-gpu-modules -verify-diagnostics | FileCheck %s
// Outlined kernels (one gpu.module each, same function name) move into one
// @kernels module, each named after the module it came from.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         gpu.module @kernels {
// CHECK:           gpu.func @f_kernel(%{{.*}}: memref<?xf32>) kernel
// CHECK:           gpu.func @f_kernel_0(%{{.*}}: memref<?xf32>) kernel
// CHECK:         }
// CHECK-NOT:     gpu.module
// CHECK:         func.func @f(
// CHECK:           gpu.launch_func @kernels::@f_kernel blocks
// CHECK:           gpu.launch_func @kernels::@f_kernel_0 blocks
module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    gpu.func @f_kernel(%buf: memref<?xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @f_kernel_0 {
    gpu.func @f_kernel(%buf: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @f(%buf: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<?xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<?xf32>)
    return
  }
}

// -----

// A module that holds more than kernels was not made by outlining.
module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    // expected-error @+1 {{is not a kernel; only outlined kernels can merge}}
    gpu.func @device_helper() {
      gpu.return
    }
  }
}

// -----

// expected-error @+1 {{symbol @kernels already exists}}
module attributes {gpu.container_module} {
  func.func private @kernels()
  gpu.module @f_kernel {
    gpu.func @f_kernel() kernel {
      gpu.return
    }
  }
}
