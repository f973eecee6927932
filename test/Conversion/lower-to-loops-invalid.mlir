// RUN: tfc-opt %s -split-input-file -tfc-lower-to-loops -verify-diagnostics
// What tfc-lower-to-loops rejects, with the reason. The model attributes'
// cases are the tfc dialect's rules now (test/Dialect/model-attributes-
// invalid.mlir), which the parser applies before the pass runs.

// expected-error @+1 {{'func.func' op a tfc.model function needs an integer tfc.max_seq}}
func.func @no_max_seq(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.param_count = 8 : i64,
                tfc.vocab = 0 : i64} {
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.model function needs an integer tfc.param_count}}
func.func @no_param_count(%params: tensor<?xf32> {tfc.role = "params"},
                          %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.vocab = 0 : i64} {
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.linear_dtype must be "f32" or "bf16", not "f16"}}
func.func @bad_linear_dtype(%params: tensor<?xf32> {tfc.role = "params"},
                            %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64,
                tfc.linear_dtype = "f16"} {
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @foreign_op(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'arith.addf' op cannot be lowered by tfc-lower-to-loops}}
  %y = arith.addf %x, %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @float_constant(%params: tensor<?xf32> {tfc.role = "params"},
                          %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'arith.constant' op only index constants and static splat f32 or i32 tensors can be lowered}}
  %c = arith.constant 1.0 : f32
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @offset_loop(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{'scf.for' op the depth loop must run from 0 with step 1}}
  %r = scf.for %i = %c1 to %c2 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    scf.yield %h : tensor<?x?x8xf32>
  }
  return %r : tensor<?x?x8xf32>
}

// -----

// The plan sizes per-layer slots by the trip count before any compute, so it
// must be a constant, not arithmetic.
func.func @computed_depth(%params: tensor<?xf32> {tfc.role = "params"},
                          %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.addi %c1, %c1 : index
  // expected-error @+1 {{'scf.for' op the depth loop's trip count must be a constant}}
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    scf.yield %h : tensor<?x?x8xf32>
  }
  return %r : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.model must be a string (the model's name)}}
func.func @unnamed(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}) -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model, tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.max_batch must be a positive integer (i64), not "4"}}
func.func @string_batch(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}) -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = "4", tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.model function with token ids needs a positive tfc.vocab}}
func.func @no_vocab(%p: tensor<?xf32> {tfc.role = "params"}, %t: tensor<?x?xi32> {tfc.role = "tokens"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}) -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Fused attention's kernels need the head counts: the dialect lets both be
// dynamic, the lowering does not.
func.func @flash_dynamic_heads(%params: tensor<?xf32> {tfc.role = "params"},
                               %x: tensor<?x?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'tfc.flash_attention' op needs static query and key head counts}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %x, %x, %x scale 0.5 : (tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32>) -> (tensor<?x?x?x8xf32>, tensor<?x?x?xf32>)
  return %o : tensor<?x?x?x8xf32>
}

// -----

func.func @flash_dynamic_head_width(%params: tensor<?xf32> {tfc.role = "params"},
                                    %x: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'tfc.flash_attention' op needs a static head width}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %x, %x, %x scale 0.5 : (tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> (tensor<?x2x?x?xf32>, tensor<?x2x?xf32>)
  return %o : tensor<?x2x?x?xf32>
}
