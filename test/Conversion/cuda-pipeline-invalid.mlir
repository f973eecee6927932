// RUN: not tfc-opt %s -tfc-cuda-pipeline="arch=sm90" 2>&1 | FileCheck %s
// The pipeline reads its arch with the driver's sm_NN parser (CudaArch.h).
// CHECK: tfc-cuda-pipeline: arch 'sm90' is not sm_NN (e.g. sm_90)
module {
}
