// RUN: tfc-opt %s -tfc-approximate-math | FileCheck %s
// f32 exp, log, tanh, erf, sin and cos (RoPE's), scalar or vector, become polynomials of arith
// ops (and math.fma / floor / absf, which are LLVM intrinsics, not libm
// calls); other functions and f64 stay as they are.

// CHECK-LABEL: func.func @scalar(
// CHECK-NOT:     {{math\.(exp|log|tanh|erf) }}
// CHECK:         math.fma %{{.*}} : f32
// CHECK-NOT:     {{math\.(exp|log|tanh|erf) }}
// CHECK:         return
func.func @scalar(%x: f32) -> (f32, f32, f32, f32) {
  %0 = math.exp %x : f32
  %1 = math.log %x : f32
  %2 = math.tanh %x : f32
  %3 = math.erf %x : f32
  return %0, %1, %2, %3 : f32, f32, f32, f32
}

// CHECK-LABEL: func.func @vector(
// CHECK-NOT:     {{math\.(exp|log|tanh|erf) }}
// CHECK:         math.fma %{{.*}} : vector<16xf32>
// CHECK-NOT:     {{math\.(exp|log|tanh|erf) }}
// CHECK:         return
func.func @vector(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
  %0 = math.exp %x : vector<16xf32>
  %1 = math.log %x : vector<16xf32>
  %2 = math.tanh %x : vector<16xf32>
  %3 = math.erf %x : vector<16xf32>
  return %0, %1, %2, %3 : vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>
}

// Each one on its own, so that none hides behind another's expansion.
// CHECK-LABEL: func.func @exp_only(
// CHECK-NOT:     math.exp
// CHECK:         return
func.func @exp_only(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.exp %x : vector<8xf32>
  return %0 : vector<8xf32>
}

// CHECK-LABEL: func.func @log_only(
// CHECK-NOT:     math.log
// CHECK:         return
func.func @log_only(%x: f32) -> f32 {
  %0 = math.log %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @tanh_only(
// CHECK-NOT:     math.tanh
// CHECK:         return
func.func @tanh_only(%x: f32) -> f32 {
  %0 = math.tanh %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @erf_only(
// CHECK-NOT:     math.erf
// CHECK:         return
func.func @erf_only(%x: vector<4xf32>) -> vector<4xf32> {
  %0 = math.erf %x : vector<4xf32>
  return %0 : vector<4xf32>
}

// RoPE's cos and sin of an angle reduced to [0, 2 pi).
// CHECK-LABEL: func.func @sin_cos_only(
// CHECK-NOT:     {{math\.(sin|cos) }}
// CHECK:         return
func.func @sin_cos_only(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>) {
  %0 = math.sin %x : f32
  %1 = math.cos %v : vector<8xf32>
  return %0, %1 : f32, vector<8xf32>
}

// f64 (the sinusoidal position table) and functions not on the list stay.
// CHECK-LABEL: func.func @kept(
// CHECK:         math.sin %{{.*}} : f64
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         math.rsqrt %{{.*}} : f32
// CHECK:         return
func.func @kept(%x: f64, %y: f32) -> (f64, f64, f32) {
  %0 = math.sin %x : f64
  %1 = math.exp %x : f64
  %2 = math.rsqrt %y : f32
  return %0, %1, %2 : f64, f64, f32
}
