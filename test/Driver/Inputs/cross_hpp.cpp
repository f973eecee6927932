// A model with cross-attention through its typed face: no decoding, and
// asking for a KV cache is a Result with the reason.
#include "cross.hpp"

#include <cstdio>

int main() {
  tfc::models::cross m;
  std::printf("decoding: %s\n", m.has_decoding() ? "yes" : "no");
  auto cache = m.kv_cache(1);
  std::printf("kv_cache: %s\n", cache ? "made" : cache.error().message.c_str());
  return 0;
}
