// Models for weight-grads-numeric.test: weight gradients whose dW is
// larger than the 512 KiB the tiles carry in L2, so that they pack both
// operands and run K-blocked (blocks of 1,024 tokens, dW carried from
// block to block); 130 and 1030 are no multiple of a row block or a panel.
// The last is small (24 x (40 + 72)): it reads X and dY in place, K-blocked
// in blocks of 960 tokens, and its tiles sum the bias gradients.
func.func @wg(%params: tensor<?xf32> {tfc.role = "params"},
              %xa: tensor<?x?x130xf32> {tfc.role = "x"},
              %xb: tensor<?x?x128xf32> {tfc.role = "x"},
              %pre: tensor<?x?x1030xf32> {tfc.role = "x"},
              %dy: tensor<?x?x1030xf32> {tfc.role = "x"},
              %dk: tensor<?x?x520xf32> {tfc.role = "x"},
              %xs: tensor<?x?x24xf32> {tfc.role = "x"},
              %ds1: tensor<?x?x40xf32> {tfc.role = "x"},
              %ds2: tensor<?x?x72xf32> {tfc.role = "x"})
    -> (tensor<128x1030xf32> {tfc.role = "y"},
        tensor<1030x128xf32> {tfc.role = "y"},
        tensor<130x1030xf32> {tfc.role = "y"},
        tensor<?x?x1030xf32> {tfc.role = "y"},
        tensor<1030xf32> {tfc.role = "y"},
        tensor<130x1030xf32> {tfc.role = "y"},
        tensor<130x520xf32> {tfc.role = "y"},
        tensor<1030xf32> {tfc.role = "y"},
        tensor<520xf32> {tfc.role = "y"},
        tensor<24x40xf32> {tfc.role = "y"},
        tensor<24x72xf32> {tfc.role = "y"},
        tensor<40xf32> {tfc.role = "y"},
        tensor<72xf32> {tfc.role = "y"})
    attributes {tfc.model = "wg", tfc.max_batch = 3 : i64, tfc.max_seq = 1024 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dw = tfc.linear_weight_grad %xb, %dy : (tensor<?x?x128xf32>, tensor<?x?x1030xf32>) -> tensor<128x1030xf32>
  %dwt = tfc.linear_weight_grad %xb, %dy {transpose_weight} : (tensor<?x?x128xf32>, tensor<?x?x1030xf32>) -> tensor<1030x128xf32>
  %dwa, %dpre, %db = tfc.linear_act_weight_grad #tfc.activation<relu> %xa, %pre, %dy : (tensor<?x?x130xf32>, tensor<?x?x1030xf32>, tensor<?x?x1030xf32>) -> (tensor<130x1030xf32>, tensor<?x?x1030xf32>, tensor<1030xf32>)
  %dwq, %dwk, %dbq, %dbk = tfc.merged_weight_grad %xa grads(%dy, %dk) : tensor<?x?x130xf32>, (tensor<?x?x1030xf32>, tensor<?x?x520xf32>) -> weights(tensor<130x1030xf32>, tensor<130x520xf32>) biases(tensor<1030xf32>, tensor<520xf32>)
  %dws1, %dws2, %dbs1, %dbs2 = tfc.merged_weight_grad %xs grads(%ds1, %ds2) : tensor<?x?x24xf32>, (tensor<?x?x40xf32>, tensor<?x?x72xf32>) -> weights(tensor<24x40xf32>, tensor<24x72xf32>) biases(tensor<40xf32>, tensor<72xf32>)
  return %dw, %dwt, %dwa, %dpre, %db, %dwq, %dwk, %dbq, %dbk, %dws1, %dws2, %dbs1, %dbs2 : tensor<128x1030xf32>, tensor<1030x128xf32>, tensor<130x1030xf32>, tensor<?x?x1030xf32>, tensor<1030xf32>, tensor<130x1030xf32>, tensor<130x520xf32>, tensor<1030xf32>, tensor<520xf32>, tensor<24x40xf32>, tensor<24x72xf32>, tensor<40xf32>, tensor<72xf32>
}
