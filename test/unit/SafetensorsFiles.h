//===- SafetensorsFiles.h - Hand-made safetensors files for the tests -----===//
//
// Builds files byte by byte (length, header text, data) so that the tests
// can write exactly the malformed file each error message is about, in a
// fresh temporary directory per test.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TEST_SAFETENSORS_FILES_H
#define TFC_TEST_SAFETENSORS_FILES_H

#include "tfc/safetensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tfc_test {

// A temporary directory, removed with its files at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string base = ::testing::TempDir() + "tfc-st-XXXXXX";
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    EXPECT_NE(mkdtemp(buf.data()), nullptr);
    path_ = buf.data();
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

inline void writeBytes(const std::string &path, const std::string &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  ASSERT_EQ(fclose(f), 0);
}

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i)
    s[i] = (char)(v >> (8 * i));
  return s;
}

// length (of the header, unless given) + header + data.
inline std::string stBytes(const std::string &header, const std::string &data,
                           int64_t length = -1) {
  return le64(length < 0 ? header.size() : (uint64_t)length) + header + data;
}

inline std::string floatBytes(const std::vector<float> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(float));
}

inline std::string lastError() { return tfc_last_error(); }

// Opens `path`, expecting failure with exactly `message`.
inline void expectOpenError(const std::string &path,
                            const std::string &message) {
  tfc_st_file *f = reinterpret_cast<tfc_st_file *>(1);
  EXPECT_EQ(tfc_st_open(path.c_str(), &f), TFC_ERR_BAD_ARGUMENT) << message;
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(lastError(), path + ": " + message);
}

} // namespace tfc_test

#endif // TFC_TEST_SAFETENSORS_FILES_H
