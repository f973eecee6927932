// RUN: tfc-opt %s -tfc-lower-to-loops="host-memory=false bf16-tensor-cores=false" -verify-diagnostics
// RUN: tfc-opt %s -tfc-cuda-pipeline="arch=sm_75" -verify-diagnostics
// RUN: tfc-opt %s -tfc-lower-to-loops | FileCheck %s
// bf16 linear layers are mma.sync bf16 kernels on the GPU, which PTX has
// from sm_80 on (NVPTX would abort on the intrinsic): tfc-lower-to-loops
// rejects them for an older GPU, with the reason. The CPU rounds in f32
// arithmetic, so it takes them on any target.

// CHECK-LABEL: func.func @m_forward
// expected-error @+1 {{'func.func' op tfc.linear_dtype = "bf16" needs a GPU with bf16 tensor cores (sm_80 or newer)}}
func.func @m(%params: tensor<?xf32> {tfc.role = "params"},
             %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64,
                tfc.linear_dtype = "bf16"} {
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
