// tfc/model.hpp and the generated tiny_lm.hpp (test/Driver/model-hpp.test):
// the consumer example's batch, 20 Adam steps through the typed wrapper,
// then every refusal as a Result and as an exception.
#include "tiny_lm.hpp"

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
