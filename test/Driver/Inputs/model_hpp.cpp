// tfc/model.hpp and the generated tiny_lm.hpp (test/Driver/model-hpp.test):
// the consumer example's batch, 20 Adam steps through the typed wrapper,
// greedy decoding of the trained model against its forward, then every
// refusal as a Result and as an exception.
#include "tiny_lm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  tfc::models::tiny_lm m(1);
  m.init(7).value();
  const int B = 4, S = TINY_LM_MAX_SEQ, V = TINY_LM_VOCAB;
  std::vector<int32_t> tokens(B * S), targets(B * S);
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < S; ++s) {
      tokens[b * S + s] = (3 * b + s) % V;
      targets[b * S + s] = s + 1 < S ? (3 * b + s + 1) % V : -1;
    }
  std::vector<float> logits(size_t(B * S * V)), adamM(m.params().size()),
      adamV(m.params().size());
  float loss = 0, first = 0;
  tfc_adam_config adam;
  tfc_adam_defaults(&adam);
  adam.lr = 1e-2f;
  tfc::Model::Arrays arrays{{"tokens", tokens.data()},
                            {"targets", targets.data()},
                            {"logits", logits.data()},
                            {"loss", &loss}};
  for (int step = 1; step <= 20; ++step) {
    m.forward(tokens, targets, logits, loss, B, S).value();
    m.zero_grad();
    m.backward().value();
    tfc_adam_step(&adam, adam.lr, step, m.params().data(), m.grads().data(),
                  adamM.data(), adamV.data(), int64_t(m.params().size()));
    if (step == 1)
      first = loss;
  }
  std::printf("loss %.6f at step 1, %.6f at step 20\n", first, loss);
  auto wq = m.tensor("blocks.0.attn.wq.weight");
  std::printf("wq: %zu floats at offset %td\n", wq.value().size(),
              wq.value().data() - m.params().data());

  auto show = [](const char *what, const tfc::Result<void> &r) {
    std::printf("%s: %s\n", what, r ? "ok" : r.error().message.c_str());
  };

  // Decoding: each sequence's first P tokens prefilled, the next decoded at
  // position P; both equal the full forward's logits at those positions.
  const int P = 8;
  tfc::KvCache cache = m.kv_cache(B).value();
  std::vector<int32_t> prompt(B * P), lengths(B, P), next(B), positions(B, P);
  for (int b = 0; b < B; ++b) {
    for (int s = 0; s < P; ++s)
      prompt[b * P + s] = tokens[b * S + s];
    next[b] = tokens[b * S + P];
  }
  std::vector<float> prefilled(size_t(B * P * V)), decoded(size_t(B * V));
  m.prefill(cache, prompt, lengths, prefilled, B, P).value();
  m.decode(cache, next, positions, decoded, B).value();
  show("backward after decode", m.backward());
  m.forward(tokens, targets, logits, loss, B, S).value();
  float worst = 0;
  std::printf("greedy:");
  for (int b = 0; b < B; ++b) {
    int best = 0;
    for (int v = 0; v < V; ++v) {
      float ref = logits[size_t((b * S + P) * V + v)];
      worst = std::max(worst, std::abs(decoded[size_t(b * V + v)] - ref));
      for (int s = 0; s < P; ++s)
        worst =
            std::max(worst, std::abs(prefilled[size_t((b * P + s) * V + v)] -
                                     logits[size_t((b * S + s) * V + v)]));
      if (decoded[size_t(b * V + v)] > decoded[size_t(b * V + best)])
        best = v;
    }
    std::printf(" %d", best);
  }
  std::printf("; decode and prefill %s the forward\n",
              worst <= 1e-4f ? "within 1e-4 of" : "differ from");
  std::printf("cache size: %s\n", m.kv_cache(B + 1).error().message.c_str());
  show("short decode",
       m.decode(cache, next, positions, std::span<float>(decoded).first(3), B));
  positions[0] = P + 3;
  show("position", m.decode(cache, next, positions, decoded, B));
  show("cache array", m.decode(cache,
                               {{"tokens", next.data()},
                                {"positions", positions.data()},
                                {"kv_cache", cache.data()},
                                {"logits", decoded.data()}},
                               B));
  m.clear(cache).value();
  positions[0] = 1;
  show("cleared", m.decode(cache, next, positions, decoded, B));
  std::printf("no tensor: %s\n", m.tensor("nope").error().message.c_str());
  show("missing", m.forward({{"tokens", tokens.data()}}, B, S));
  show("unknown", m.forward({{"tokens", tokens.data()},
                             {"targets", targets.data()},
                             {"logits", logits.data()},
                             {"loss", &loss},
                             {"enc", tokens.data()}},
                            B, S));
  show("sizes", m.forward(arrays, B, 99));
  show("short span", m.forward(tokens, targets,
                               std::span<float>(logits).first(10), loss, B, S));
  tokens[0] = 99;
  show("token", m.forward(arrays, B, S));
  try {
    m.forward(arrays, B, S).value();
  } catch (const tfc::Error &e) {
    std::printf("thrown: %d %s\n", e.code(), e.what());
  }
  tfc::models::tiny_lm moved = std::move(m);
  std::printf("moved: %lld parameters\n", (long long)moved.params().size());
  return 0;
}
