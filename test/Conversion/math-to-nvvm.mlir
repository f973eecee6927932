// RUN: tfc-opt %s -tfc-math-to-nvvm | FileCheck %s
// f32 square roots become PTX's correctly rounded sqrt.rn (vectors lane by
// lane); rsqrt is 1 / sqrt; fma, floor and absf call the generic LLVM
// intrinsics by name; f64 is left to the default lowering.

// CHECK-LABEL: func.func @roots(
// CHECK-SAME:    %[[X:.*]]: f32,
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%[[X]]) : (f32) -> f32
// CHECK:         %[[R:.*]] = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%[[X]]) : (f32) -> f32
// CHECK:         %[[INV:.*]] = arith.divf %[[ONE]], %[[R]] : f32
// CHECK:         math.sqrt %{{.*}} : f64
// CHECK:         return %[[S]], %[[INV]]
func.func @roots(%x: f32, %y: f64) -> (f32, f32, f64) {
  %0 = math.sqrt %x : f32
  %1 = math.rsqrt %x : f32
  %2 = math.sqrt %y : f64
  return %0, %1, %2 : f32, f32, f64
}

// CHECK-LABEL: func.func @lanes(
// CHECK-COUNT-4: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK-NOT:     math.sqrt
func.func @lanes(%x: vector<4xf32>) -> vector<4xf32> {
  %0 = math.sqrt %x : vector<4xf32>
  return %0 : vector<4xf32>
}

// CHECK-LABEL: func.func @others(
// CHECK:         llvm.call_intrinsic "llvm.fma.v4f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK:         llvm.call_intrinsic "llvm.floor.f32"(%{{.*}}) : (f32) -> f32
// CHECK:         llvm.call_intrinsic "llvm.fabs.f32"(%{{.*}}) : (f32) -> f32
// CHECK:         math.floor %{{.*}} : f64
// CHECK-NOT:     math.
func.func @others(%v: vector<4xf32>, %x: f32, %y: f64) -> (vector<4xf32>, f32, f32, f64) {
  %0 = math.fma %v, %v, %v : vector<4xf32>
  %1 = math.floor %x : f32
  %2 = math.absf %x : f32
  %3 = math.floor %y : f64
  return %0, %1, %2, %3 : vector<4xf32>, f32, f32, f64
}
