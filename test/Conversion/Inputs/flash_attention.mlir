// Models for flash-attention-numeric.test: attention exactly as the
// frontend writes it (scores, scale, [mask], softmax, context), queries from
// x ([b, h, s, dh]) and keys and values from enc ([b, h, t, dh]), so that
// t may differ from s. The merged_* models take and return the heads
// merged, [b, s, h * dh], as the projections read and write them: fused,
// their output and their q, k and v gradients are stored merged by the
// attention kernels (tfc-fuse-attention, tfc-fuse-attention-grad). The test
// compiles them with and without the fusions; flash_attention_check.py has
// the same table.

func.func @causal_d5(%params: tensor<?xf32> {tfc.role = "params"},
    %q: tensor<?x3x?x5xf32> {tfc.role = "x"}, %k: tensor<?x3x?x5xf32> {tfc.role = "enc"},
    %v: tensor<?x3x?x5xf32> {tfc.role = "enc"}) -> (tensor<?x3x?x5xf32> {tfc.role = "y"})
    attributes {tfc.model = "causal_d5", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x3x?x5xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x?xf32>
  %t = tfc.scale %s by 0.4472135954999579 : tensor<?x3x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x3x?x?xf32>
  %p = tfc.softmax %m : tensor<?x3x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x5xf32>
  return %o : tensor<?x3x?x5xf32>
}

func.func @cross_d37(%params: tensor<?xf32> {tfc.role = "params"},
    %q: tensor<?x2x?x37xf32> {tfc.role = "x"}, %k: tensor<?x2x?x37xf32> {tfc.role = "enc"},
    %v: tensor<?x2x?x37xf32> {tfc.role = "enc"}) -> (tensor<?x2x?x37xf32> {tfc.role = "y"})
    attributes {tfc.model = "cross_d37", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x37xf32>, tensor<?x2x?x37xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.3 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %t : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x37xf32>) -> tensor<?x2x?x37xf32>
  return %o : tensor<?x2x?x37xf32>
}

func.func @causal_d64(%params: tensor<?xf32> {tfc.role = "params"},
    %q: tensor<?x2x?x64xf32> {tfc.role = "x"}, %k: tensor<?x2x?x64xf32> {tfc.role = "enc"},
    %v: tensor<?x2x?x64xf32> {tfc.role = "enc"}) -> (tensor<?x2x?x64xf32> {tfc.role = "y"})
    attributes {tfc.model = "causal_d64", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.125 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x64xf32>) -> tensor<?x2x?x64xf32>
  return %o : tensor<?x2x?x64xf32>
}

func.func @causal_ts_d16(%params: tensor<?xf32> {tfc.role = "params"},
    %q: tensor<?x1x?x16xf32> {tfc.role = "x"}, %k: tensor<?x1x?x16xf32> {tfc.role = "enc"},
    %v: tensor<?x1x?x16xf32> {tfc.role = "enc"}) -> (tensor<?x1x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "causal_ts_d16", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x1x?x?xf32>
  %t = tfc.scale %s by 0.25 : tensor<?x1x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x1x?x?xf32>
  %p = tfc.softmax %m : tensor<?x1x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x1x?x?xf32>, tensor<?x1x?x16xf32>) -> tensor<?x1x?x16xf32>
  return %o : tensor<?x1x?x16xf32>
}

func.func @bidir_d1(%params: tensor<?xf32> {tfc.role = "params"},
    %q: tensor<?x2x?x1xf32> {tfc.role = "x"}, %k: tensor<?x2x?x1xf32> {tfc.role = "enc"},
    %v: tensor<?x2x?x1xf32> {tfc.role = "enc"}) -> (tensor<?x2x?x1xf32> {tfc.role = "y"})
    attributes {tfc.model = "bidir_d1", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x1xf32>, tensor<?x2x?x1xf32>) -> tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<bidirectional> %s : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x1xf32>) -> tensor<?x2x?x1xf32>
  return %o : tensor<?x2x?x1xf32>
}

func.func @merged_causal_d5(%params: tensor<?xf32> {tfc.role = "params"},
    %x: tensor<?x?x15xf32> {tfc.role = "x"}, %xk: tensor<?x?x15xf32> {tfc.role = "enc"},
    %xv: tensor<?x?x15xf32> {tfc.role = "enc"}) -> (tensor<?x?x15xf32> {tfc.role = "y"})
    attributes {tfc.model = "merged_causal_d5", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %q = tfc.split_heads %x : tensor<?x?x15xf32> -> tensor<?x3x?x5xf32>
  %k = tfc.split_heads %xk : tensor<?x?x15xf32> -> tensor<?x3x?x5xf32>
  %v = tfc.split_heads %xv : tensor<?x?x15xf32> -> tensor<?x3x?x5xf32>
  %s = tfc.attention_scores %q, %k : (tensor<?x3x?x5xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x?xf32>
  %t = tfc.scale %s by 0.4472135954999579 : tensor<?x3x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x3x?x?xf32>
  %p = tfc.softmax %m : tensor<?x3x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x3x?x?xf32>, tensor<?x3x?x5xf32>) -> tensor<?x3x?x5xf32>
  %y = tfc.merge_heads %o : tensor<?x3x?x5xf32> -> tensor<?x?x15xf32>
  return %y : tensor<?x?x15xf32>
}

func.func @merged_cross_d37(%params: tensor<?xf32> {tfc.role = "params"},
    %x: tensor<?x?x74xf32> {tfc.role = "x"}, %xk: tensor<?x?x74xf32> {tfc.role = "enc"},
    %xv: tensor<?x?x74xf32> {tfc.role = "enc"}) -> (tensor<?x?x74xf32> {tfc.role = "y"})
    attributes {tfc.model = "merged_cross_d37", tfc.max_batch = 2 : i64, tfc.max_seq = 256 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %q = tfc.split_heads %x : tensor<?x?x74xf32> -> tensor<?x2x?x37xf32>
  %k = tfc.split_heads %xk : tensor<?x?x74xf32> -> tensor<?x2x?x37xf32>
  %v = tfc.split_heads %xv : tensor<?x?x74xf32> -> tensor<?x2x?x37xf32>
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x37xf32>, tensor<?x2x?x37xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.3 : tensor<?x2x?x?xf32>
  %p = tfc.softmax %t : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x37xf32>) -> tensor<?x2x?x37xf32>
  %y = tfc.merge_heads %o : tensor<?x2x?x37xf32> -> tensor<?x?x74xf32>
  return %y : tensor<?x?x74xf32>
}
