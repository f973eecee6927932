// tfc::Model over a shared model tfc_model_open loads: a CUDA build is
// refused with the reason (cuda-build-refused.test).
#include <tfc/model.hpp>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  const tfc_model *desc = nullptr;
  void *handle = nullptr;
  if (tfc_model_open(argv[1], &desc, &handle) != TFC_OK) {
    std::printf("open: %s\n", tfc_last_error());
    return 1;
  }
  auto m = tfc::Model::open(desc);
  std::printf("tfc::Model: %s\n", m ? "opened" : m.error().message.c_str());
  tfc_model_close(handle);
  return 0;
}
