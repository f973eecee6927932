// RUN: tfc-opt %s -tfc-lower-to-loops -verify-diagnostics
// An @NAME_grad whose arrays are not those of NAME_backward's C signature
// (EntrySignature, from the model): a second d_x the header has no argument
// for. tfc-derive-backward never builds one; the check keeps a mismatch from
// indexing the wrong pointer.

func.func @m(%params: tensor<?xf32> {tfc.role = "params"},
             %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "m", tfc.max_batch = 4 : i64, tfc.max_seq = 4 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  return %x : tensor<?x?x8xf32>
}

// expected-error @+1 {{'func.func' op has no array d_x in m_backward's C signature}}
func.func @m_grad(%params: tensor<?xf32> {tfc.role = "params"},
                  %dy: tensor<?x?x8xf32> {tfc.role = "d_y"},
                  %dp: tensor<?xf32> {tfc.role = "d_params"})
    -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"},
        tensor<?x?x8xf32> {tfc.role = "d_x"})
    attributes {tfc.backward_of = "m"} {
  return %dp, %dy, %dy : tensor<?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
