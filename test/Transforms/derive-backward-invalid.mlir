// RUN: tfc-opt %s -split-input-file -tfc-derive-backward -verify-diagnostics
// What tfc-derive-backward rejects, with the reason.

// An op on the gradient path needs a gradient rule: arith on tensors has none.
func.func @foreign_op(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'arith.addf' op has no gradient rule (GradientOpInterface)}}
  %a = arith.addf %x, %x : tensor<?x?x8xf32>
  %y = tfc.activation #tfc.activation<relu> %a : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Nor do most backward ops themselves (tfc.activation_grad).
func.func @backward_op(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'tfc.activation_grad' op has no gradient rule (GradientOpInterface)}}
  %y = tfc.activation_grad #tfc.activation<relu> %x, %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Inside the depth loop too.
func.func @foreign_op_in_loop(%params: tensor<?xf32> {tfc.role = "params"},
                              %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %out = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    // expected-error @+1 {{'arith.mulf' op has no gradient rule (GradientOpInterface)}}
    %y = arith.mulf %h, %h : tensor<?x?x8xf32>
    scf.yield %y : tensor<?x?x8xf32>
  }
  return %out : tensor<?x?x8xf32>
}

// -----

// An x input nothing depends on has no gradient to return (here y comes
// from the tokens alone).
// expected-error @+1 {{'func.func' op input 1 gets no gradient; the model does not use it}}
func.func @unused_x(%params: tensor<?xf32> {tfc.role = "params"},
                    %x: tensor<?x?x8xf32> {tfc.role = "x"},
                    %tokens: tensor<?x?xi32> {tfc.role = "tokens"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 16 : i64} {
  %table = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %y = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// "Does not use it" means: no output depends on it; a dead use does not count.
// expected-error @+1 {{'func.func' op input 1 gets no gradient; the model does not use it}}
func.func @dead_use_of_x(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x8xf32> {tfc.role = "x"},
                         %tokens: tensor<?x?xi32> {tfc.role = "tokens"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 16 : i64} {
  %dead = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  %table = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %y = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Same for an enc input (here: the third argument).
// expected-error @+1 {{'func.func' op input 2 gets no gradient; the model does not use it}}
func.func @unused_enc(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"},
                      %enc: tensor<?x?x8xf32> {tfc.role = "enc"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// The depth loop's other carried values (the load-balancing losses) are
// differentiated beside the residual stream, never without it.
func.func @carried_without_stream(%params: tensor<?xf32> {tfc.role = "params"},
                                  %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "z"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'scf.for' op carried value #1 has a gradient but the residual stream (#0) has none}}
  %out:2 = scf.for %l = %c0 to %c2 step %c1 iter_args(%h = %x, %g = %x)
      -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
    %y = tfc.activation #tfc.activation<relu> %h : tensor<?x?x8xf32>
    %z = tfc.activation #tfc.activation<relu> %g : tensor<?x?x8xf32>
    scf.yield %y, %z : tensor<?x?x8xf32>, tensor<?x?x8xf32>
  }
  return %out#1 : tensor<?x?x8xf32>
}

// -----

// A second run would define @twice_grad again.
// expected-error @+1 {{'func.func' op already has a backward function @twice_grad}}
func.func @twice(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "twice", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  %y = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
func.func @twice_grad() {
  return
}

// -----

// Positions given per sequence are decoding's (NAME_decode): no backward.
func.func @positions_at(%params: tensor<?xf32> {tfc.role = "params"},
                        %x: tensor<?x?x8xf32> {tfc.role = "x"},
                        %positions: tensor<?xi32> {tfc.role = "lengths"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'tfc.add_positions' op has no gradient at given positions (a decoding op)}}
  %y = tfc.add_positions #tfc.positions<sinusoidal> %x at %positions : (tensor<?x?x8xf32>, tensor<?xi32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
