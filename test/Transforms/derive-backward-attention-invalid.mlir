// RUN: tfc-opt %s -tfc-derive-backward -verify-diagnostics
// The log-sum-exp of tfc.flash_attention exists for its gradient; a model
// that returns it (so that it would need a gradient) is rejected.

func.func @lse_output(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"}, tensor<?x2x?xf32> {tfc.role = "lse"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  // expected-error @+1 {{'tfc.flash_attention' op lse has a gradient; only out can be differentiated}}
  %o, %l = tfc.flash_attention #tfc.mask<causal> %x, %x, %x scale 0.5 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?xf32>)
  return %o, %l : tensor<?x2x?x4xf32>, tensor<?x2x?xf32>
}
