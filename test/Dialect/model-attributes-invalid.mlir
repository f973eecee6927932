// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per rule of the tfc dialect's attribute verifier
// (TfcModelAttributes.cpp): the discardable tfc.* attributes of model
// functions, their gradients and the ops inside. model-attributes.mlir has
// the valid forms.

// tfc.model names a function.
func.func @f() {
  // expected-error @+1 {{'arith.constant' op tfc.model must be on a function}}
  %c = arith.constant {tfc.model = "m"} 0 : index
  return
}

// -----

// The name prefixes the C functions.
// expected-error @+1 {{'func.func' op tfc.model must be a string (the model's name)}}
func.func @unit(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model, tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.model must be a C identifier (it prefixes the C functions), not "2x"}}
func.func @bad_name(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "2x", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op cannot be both a tfc.model and a tfc.backward_of function}}
func.func @both(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.backward_of = "m", tfc.model = "both", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// The entry points check batch and seq against the maxima.
// expected-error @+1 {{'func.func' op a tfc.model function needs an integer tfc.max_seq}}
func.func @no_max_seq(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "no_max_seq", tfc.max_batch = 4 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Roles name the C arguments: every argument and result has one.
// expected-error @+1 {{'func.func' op argument 1 of a tfc.model function needs a tfc.role}}
func.func @no_role(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32>)
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "no_role", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op result 0 of a tfc.model function needs a tfc.role}}
func.func @no_result_role(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> tensor<?x?x8xf32>
    attributes {tfc.model = "no_result_role", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.model function needs an argument with tfc.role = "params"}}
func.func @no_params(%x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "no_params", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Token ids are checked against the vocabulary.
// expected-error @+1 {{'func.func' op a tfc.model function with token ids needs a positive tfc.vocab}}
func.func @no_vocab(%p: tensor<?xf32> {tfc.role = "params"}, %t: tensor<?x?xi32> {tfc.role = "tokens"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "no_vocab", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// The gradient function: (params, d_outputs..., d_params) -> (d_params, d_inputs...).
func.func @f() {
  // expected-error @+1 {{'arith.constant' op tfc.backward_of must be on a function}}
  %c = arith.constant {tfc.backward_of = "m"} 0 : index
  return
}

// -----

// expected-error @+1 {{'func.func' op tfc.backward_of must name the model (a C identifier), not 3 : i64}}
func.func @m_grad(%p: tensor<?xf32> {tfc.role = "params"}, %dy: tensor<?x?x8xf32> {tfc.role = "d_y"}, %dp: tensor<?xf32> {tfc.role = "d_params"})
    -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
    attributes {tfc.backward_of = 3 : i64} {
  return %dp, %dy : tensor<?xf32>, tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.backward_of function needs arguments with tfc.role = "params" and "d_params"}}
func.func @m_grad(%p: tensor<?xf32> {tfc.role = "params"}, %dy: tensor<?x?x8xf32> {tfc.role = "d_y"})
    -> (tensor<?x?x8xf32> {tfc.role = "d_x"})
    attributes {tfc.backward_of = "m"} {
  return %dy : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.backward_of function returns d_params first}}
func.func @m_grad(%p: tensor<?xf32> {tfc.role = "params"}, %dy: tensor<?x?x8xf32> {tfc.role = "d_y"}, %dp: tensor<?xf32> {tfc.role = "d_params"})
    -> (tensor<?x?x8xf32> {tfc.role = "d_x"}, tensor<?xf32> {tfc.role = "d_params"})
    attributes {tfc.backward_of = "m"} {
  return %dy, %dp : tensor<?x?x8xf32>, tensor<?xf32>
}

// -----

// Sizes belong to the model and its gradient; the rest to the model.
// expected-error @+1 {{'func.func' op tfc.max_batch belongs on a tfc.model or tfc.backward_of function}}
func.func @f() attributes {tfc.max_batch = 4 : i64} {
  return
}

// -----

// expected-error @+1 {{'func.func' op tfc.linear_dtype belongs on a tfc.model function}}
func.func @m_grad(%p: tensor<?xf32> {tfc.role = "params"}, %dy: tensor<?x?x8xf32> {tfc.role = "d_y"}, %dp: tensor<?xf32> {tfc.role = "d_params"})
    -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
    attributes {tfc.backward_of = "m", tfc.linear_dtype = "f32"} {
  return %dp, %dy : tensor<?xf32>, tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.max_batch must be a positive integer (i64), not 0 : i64}}
func.func @zero_batch(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "zero_batch", tfc.max_batch = 0 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.max_seq must be a positive integer (i64), not "16"}}
func.func @string_seq(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "string_seq", tfc.max_batch = 4 : i64, tfc.max_seq = "16", tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.param_count must be a non-negative integer (i64), not -1 : i64}}
func.func @negative_count(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "negative_count", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = -1 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.vocab must be a non-negative integer (i64), not 1.000000e+00 : f32}}
func.func @float_vocab(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "float_vocab", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.vocab = 1.0 : f32} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.linear_dtype must be "f32" or "bf16", not "f16"}}
func.func @f16(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.linear_dtype = "f16", tfc.model = "f16", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// The parameter table: a name and an (offset, numel) pair per tensor, inside tfc.param_count.
// expected-error @+1 {{'func.func' op tfc.param_names and tfc.param_ranges go together (an array of strings and array<i64>)}}
func.func @names_only(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "names_only", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.param_names = ["w"]} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.param_ranges needs an (offset, numel) pair per name: 1 names, 3 numbers}}
func.func @odd_ranges(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "odd_ranges", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.param_names = ["w"], tfc.param_ranges = array<i64: 0, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.param_names must hold non-empty strings, not ""}}
func.func @empty_name(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "empty_name", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.param_names = [""], tfc.param_ranges = array<i64: 0, 8>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.param_ranges puts "w" at [4, 4 + 8), outside [0, tfc.param_count = 8)}}
func.func @outside(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "outside", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.param_names = ["w"], tfc.param_ranges = array<i64: 4, 8>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Save slots (TfcSaveSlots.h).
func.func @f(%x: tensor<?x?x8xf32>, %e: tensor<5x8xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tfc.loss_head' op tfc.save marks the result of a one-result op (several results: tfc.save_results)}}
  %l, %loss, %dl = tfc.loss_head %x, %e, %t {tfc.save = 0 : i64, transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %loss : tensor<f32>
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.activation' op tfc.save must be a slot number >= 0 (i64), not -1 : i64}}
  %y = tfc.activation #tfc.activation<relu> %x {tfc.save = -1 : i64} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.activation' op tfc.save_results must be an array<i64> of a slot (or -1) per result (1), not array<i64: 0, 1>}}
  %y = tfc.activation #tfc.activation<relu> %x {tfc.save_results = array<i64: 0, 1>} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.activation' op tfc.save_iter_arg marks the carried value of a loop}}
  %y = tfc.activation #tfc.activation<relu> %x {tfc.save_iter_arg = 0 : i64} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.save on an argument belongs on a tfc.model function}}
func.func @f(%x: tensor<?x?x8xf32> {tfc.save = 0 : i64}) {
  return
}

// -----

// Names of fusions and kernels, the runtime handle, and nothing else.
func.func @f(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error @+1 {{'tfc.activation' op tfc.fused must be a non-empty string, not ""}}
  %y = tfc.activation #tfc.activation<relu> %x {tfc.fused = ""} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @f() {
  // expected-error @+1 {{'arith.constant' op tfc.kernel must be a non-empty string, not 1 : i64}}
  %c = arith.constant {tfc.kernel = 1 : i64} 0 : index
  return
}

// -----

// expected-error @+1 {{'func.func' op tfc.runtime_handle is a unit attribute of a function whose first argument is the handle}}
func.func @f() attributes {tfc.runtime_handle} {
  return
}

// -----

// expected-error @+1 {{'func.func' op has an unknown tfc attribute tfc.max_seqs}}
func.func @typo(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "typo", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.max_seqs = 16 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Roles (TfcRoles.h): C identifiers; the ABI's in their place, on their type.
// expected-error @+1 {{'func.func' op tfc.role belongs on a tfc.model, tfc.backward_of or tfc.decoding_of function (argument 0)}}
func.func @f(%x: tensor<?x?x8xf32> {tfc.role = "x"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op tfc.role of argument 1 must be a C identifier (it names the C argument), not "d-x"}}
func.func @dash(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "d-x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "dash", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.role "y" names a result, not argument 1}}
func.func @swapped(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "y"})
    -> (tensor<?x?x8xf32> {tfc.role = "x"})
    attributes {tfc.model = "swapped", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.role "tokens" needs a tensor<?x?xi32>, not 'tensor<?x?x8xf32>' (argument 1)}}
func.func @float_tokens(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "tokens"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "float_tokens", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.vocab = 4 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.role "x" needs a ranked tensor, not 'tensor<*xf32>' (argument 1)}}
func.func @unranked(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<*xf32> {tfc.role = "x"})
    -> (tensor<*xf32> {tfc.role = "y"})
    attributes {tfc.model = "unranked", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<*xf32>
}

// -----

// expected-error @+1 {{'func.func' op has an unknown tfc argument attribute tfc.rol (argument 1)}}
func.func @arg_typo(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x", tfc.rol = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "arg_typo", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op has an unknown tfc result attribute tfc.rol (result 0)}}
func.func @result_typo(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y", tfc.rol = "y"})
    attributes {tfc.model = "result_typo", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64} {
  return %x : tensor<?x?x8xf32>
}

// -----

// Decoding functions (tfc.decoding_of): NAME_prefill and NAME_decode.
// expected-error @+1 {{'func.func' op tfc.decoding_of must name the model (a C identifier), not "m-1"}}
func.func @m__prefill(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"}, %c: tensor<?xf32> {tfc.role = "kv_cache"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m-1", tfc.decoding = "prefill", tfc.kv_cache_shape = array<i64: 2, 1, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.decoding_of function is neither a tfc.model nor a tfc.backward_of function}}
func.func @both(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"}, %c: tensor<?xf32> {tfc.role = "kv_cache"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m", tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.decoding = "prefill", tfc.kv_cache_shape = array<i64: 2, 1, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.decoding_of function needs tfc.decoding = "prefill" or "decode"}}
func.func @no_kind(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"}, %c: tensor<?xf32> {tfc.role = "kv_cache"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m", tfc.decoding = "generate", tfc.kv_cache_shape = array<i64: 2, 1, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.decoding_of function needs tfc.kv_cache_shape = array<i64: depth >= 1, kv_heads >= 1, head_dim >= 1, window >= 0>}}
func.func @bad_shape(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"}, %c: tensor<?xf32> {tfc.role = "kv_cache"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m", tfc.decoding = "prefill", tfc.kv_cache_shape = array<i64: 2, 0, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a tfc.decoding_of function needs an argument with tfc.role = "kv_cache"}}
func.func @no_cache(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m", tfc.decoding = "prefill", tfc.kv_cache_shape = array<i64: 2, 1, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op a "decode" function needs an argument with tfc.role = "positions"}}
func.func @decode_lengths(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"}, %c: tensor<?xf32> {tfc.role = "kv_cache"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m", tfc.decoding = "decode", tfc.kv_cache_shape = array<i64: 2, 1, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.role "kv_cache" needs a tensor<?xf32>, not 'tensor<?xi32>' (argument 3)}}
func.func @cache_type(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"}, %n: tensor<?xi32> {tfc.role = "lengths"}, %c: tensor<?xi32> {tfc.role = "kv_cache"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.decoding_of = "m", tfc.decoding = "prefill", tfc.kv_cache_shape = array<i64: 2, 1, 8, 0>} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.decoding belongs on a tfc.decoding_of function}}
func.func @stray_kind(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.decoding = "prefill"} {
  return %x : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{'func.func' op tfc.recompute must be "none", "attention", "ffn" or "block", not "layers"}}
func.func @recompute_layers(%p: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "recompute_layers", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 8 : i64, tfc.recompute = "layers"} {
  return %x : tensor<?x?x8xf32>
}

// -----

// tfc.recompute is a choice of the model (its gradient function is derived
// from it).
// expected-error @+1 {{'func.func' op tfc.recompute belongs on a tfc.model function}}
func.func @not_a_model() attributes {tfc.recompute = "block"} {
  return
}

// -----

// expected-error @+1 {{'builtin.module' op tfc.memory_report is a dictionary on the module (tfc-lower-to-loops' memory-report option)}}
module attributes {tfc.memory_report = [1, 2]} {
}

// -----

// expected-error @+1 {{'func.func' op tfc.memory_report is a dictionary on the module (tfc-lower-to-loops' memory-report option)}}
func.func @report_on_a_function() attributes {tfc.memory_report = {}} {
  return
}
