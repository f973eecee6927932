//===- SafetensorsReaderTest.cpp - The safetensors reader and writer ------===//
//
// Well-formed files read back exactly (F32, BF16 and F16 conversions checked
// against values worked out from the bit patterns), the writer's bytes
// (header, padding, order), a save/load round trip bit for bit, metadata,
// and every error the reader and the writer report, each on a file made to
// trigger it, with the exact message.
//
//===----------------------------------------------------------------------===//

#include "SafetensorsFiles.h"

#include <cmath>
#include <dirent.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfc_test;

namespace {

const char *kOneF32 =
    R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";

TEST(SafetensorsReader, ReadsF32AndListsTensors) {
  TempDir dir;
  std::string path = dir.file("a.safetensors");
  std::vector<float> v = {1, -2, 3.5f, 0, 1e-30f, -7};
  writeBytes(path, stBytes(kOneF32, floatBytes(v)));
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(path.c_str(), &f), TFC_OK) << lastError();
  ASSERT_EQ(tfc_st_num_tensors(f), 1);
  tfc_st_tensor_info t;
  ASSERT_EQ(tfc_st_tensor(f, 0, &t), TFC_OK);
  EXPECT_STREQ(t.name, "a");
  EXPECT_EQ(t.dtype, TFC_ST_F32);
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.shape[0], 2);
  EXPECT_EQ(t.shape[1], 3);
  EXPECT_EQ(t.numel, 6);
  EXPECT_EQ(t.data_begin, 0);
  EXPECT_EQ(t.data_end, 24);
  EXPECT_EQ(tfc_st_find(f, "a"), 0);
  EXPECT_EQ(tfc_st_find(f, "b"), -1);
  EXPECT_EQ(tfc_st_find(f, nullptr), -1);
  std::vector<float> got(6);
  ASSERT_EQ(tfc_st_read_f32(f, 0, got.data(), 6), TFC_OK);
  EXPECT_EQ(0, memcmp(got.data(), v.data(), 24));
  std::string raw(24, '\0');
  ASSERT_EQ(tfc_st_read_raw(f, 0, raw.data(), 24), TFC_OK);
  EXPECT_EQ(raw, floatBytes(v));
  EXPECT_EQ(tfc_st_num_metadata(f), 0);
  EXPECT_EQ(tfc_st_metadata_get(f, "x"), nullptr);
  tfc_st_close(f);
  tfc_st_close(nullptr);
}

std::string u16Bytes(const std::vector<uint16_t> &v) {
  std::string s;
  for (uint16_t h : v) {
    s += (char)(h & 0xff);
    s += (char)(h >> 8);
  }
  return s;
}

TEST(SafetensorsReader, ConvertsBf16AndF16Exactly) {
  TempDir dir;
  std::string path = dir.file("h.safetensors");
  // bf16: 1, -2, the smallest subnormal, +inf. f16: 1, -2, 65504 (max),
  // 2^-24 (smallest subnormal), 2^-15 (a subnormal with the leading one at
  // bit 9), -0, inf, NaN.
  std::vector<uint16_t> bf = {0x3f80, 0xc000, 0x0001, 0x7f80};
  std::vector<uint16_t> hf = {0x3c00, 0xc000, 0x7bff, 0x0001,
                              0x0200, 0x8000, 0x7c00, 0x7e00};
  std::string header =
      R"({"b":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},)"
      R"("h":{"dtype":"F16","shape":[8],"data_offsets":[8,24]}})";
  writeBytes(path, stBytes(header, u16Bytes(bf) + u16Bytes(hf)));
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(path.c_str(), &f), TFC_OK) << lastError();
  std::vector<float> b(4), h(8);
  ASSERT_EQ(tfc_st_read_f32(f, 0, b.data(), 4), TFC_OK);
  ASSERT_EQ(tfc_st_read_f32(f, 1, h.data(), 8), TFC_OK);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -2.0f);
  EXPECT_EQ(b[2], std::ldexp(1.0f, -133)); // 2^-126 * 2^-7
  EXPECT_EQ(b[3], std::numeric_limits<float>::infinity());
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], std::ldexp(1.0f, -15));
  EXPECT_EQ(h[5], 0.0f);
  EXPECT_TRUE(std::signbit(h[5]));
  EXPECT_EQ(h[6], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(h[7]));
  tfc_st_close(f);
}

TEST(SafetensorsReader, AcceptsEmptyTensorsPaddingAndOtherDtypes) {
  TempDir dir;
  std::string path = dir.file("e.safetensors");
  // An empty tensor sits anywhere; spaces pad the header (as the reference
  // writer's alignment does); I64 lists and reads raw but not as f32.
  std::string header =
      R"({"e":{"dtype":"F32","shape":[0,5],"data_offsets":[8,8]},)"
      R"("step":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}   )";
  writeBytes(path, stBytes(header, le64(42)));
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(path.c_str(), &f), TFC_OK) << lastError();
  tfc_st_tensor_info t;
  ASSERT_EQ(tfc_st_tensor(f, 1, &t), TFC_OK);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.numel, 1);
  int64_t step = 0;
  ASSERT_EQ(tfc_st_read_raw(f, 1, &step, 8), TFC_OK);
  EXPECT_EQ(step, 42);
  float x;
  EXPECT_EQ(tfc_st_read_f32(f, 1, &x, 1), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), path + ": tensor 'step': dtype I64 cannot be read "
                                "as f32 (F32, BF16 and F16 can)");
  EXPECT_EQ(tfc_st_read_f32(f, 0, &x, 0), TFC_OK);
  tfc_st_close(f);
}

TEST(SafetensorsReader, DtypeNamesAndSizes) {
  EXPECT_STREQ(tfc_st_dtype_name(TFC_ST_F32), "F32");
  EXPECT_STREQ(tfc_st_dtype_name(TFC_ST_BF16), "BF16");
  EXPECT_STREQ(tfc_st_dtype_name(TFC_ST_F8_E5M2), "F8_E5M2");
  EXPECT_EQ(tfc_st_dtype_name(-1), nullptr);
  EXPECT_EQ(tfc_st_dtype_name(TFC_ST_NUM_DTYPES), nullptr);
  EXPECT_EQ(tfc_st_dtype_size(TFC_ST_F64), 8);
  EXPECT_EQ(tfc_st_dtype_size(TFC_ST_BOOL), 1);
  EXPECT_EQ(tfc_st_dtype_size(99), 0);
}

// ---- Every error of tfc_st_open ------------------------------------------

TEST(SafetensorsReaderErrors, FileLevel) {
  TempDir dir;
  std::string missing = dir.file("missing.safetensors");
  expectOpenError(missing, "cannot open: No such file or directory");
  expectOpenError(dir.path(), "not a regular file");
  std::string p = dir.file("x.safetensors");
  writeBytes(p, "abcde");
  expectOpenError(p, "file is 5 bytes, shorter than the 8-byte header "
                     "length");
  writeBytes(p, stBytes("{", ""));
  expectOpenError(p, "header length 1 is below the 2 bytes of '{}'");
  writeBytes(p, stBytes("{}", "", 100000001));
  expectOpenError(p, "header length 100000001 is over the format's limit of "
                     "100000000 bytes");
  writeBytes(p, stBytes("{}", "", 1000));
  expectOpenError(p, "header length 1000 exceeds the 2 bytes after it "
                     "(truncated file?)");
  writeBytes(p, stBytes("{}", "", -1) + "");
  tfc_st_file *f = nullptr;
  EXPECT_EQ(tfc_st_open(p.c_str(), &f), TFC_OK) << "{} is a valid file";
  tfc_st_close(f);
  EXPECT_EQ(tfc_st_open(nullptr, &f), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_open: path is NULL");
  EXPECT_EQ(tfc_st_open(p.c_str(), nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_open: out is NULL");
}

struct HeaderCase {
  const char *header;
  const char *data; // bytes after the header
  const char *message;
};

TEST(SafetensorsReaderErrors, HeaderJson) {
  const HeaderCase cases[] = {
      {R"({"a":)", "", "header is not valid JSON (at byte 4 of 5)"},
      {R"({} x)", "", "header has bytes after its JSON (at byte 3 of 4)"},
      {R"([1,2])", "", "header is not a JSON object"},
      {R"({"__metadata__":[]})", "",
       "__metadata__ is not an object of "
       "strings"},
      {R"({"__metadata__":{"k":1}})", "",
       "__metadata__ 'k' is not a "
       "string"},
      {R"({"__metadata__":{"k":"1","k":"2"}})", "",
       "__metadata__ 'k' appears twice"},
      {R"({"__metadata__":{},"__metadata__":{}})", "",
       "__metadata__ appears twice"},
      {R"({"a":[]})", "", "tensor 'a' is not an object"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":1}})", "abcd",
       "tensor 'a': unknown key 'x'"},
      {R"({"a":{"dtype":"F32","dtype":"F32"}})", "",
       "tensor 'a': key 'dtype' appears twice"},
      {R"({"a":{"shape":[],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': no dtype"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "abcd",
       "tensor 'a': no shape"},
      {R"({"a":{"dtype":"F32","shape":[]}})", "abcd",
       "tensor 'a': no data_offsets"},
      {R"({"a":{"dtype":7,"shape":[],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': dtype is not a string"},
      {R"({"a":{"dtype":"F31","shape":[],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': unknown dtype 'F31'"},
      {R"({"a":{"dtype":"F32","shape":3,"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': shape is not an array"},
      {R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],)"
       R"("data_offsets":[0,4]}})",
       "abcd", "tensor 'a': rank 9 is over 8"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': shape[0] is not an integer in [0, 2^53]"},
      {R"({"a":{"dtype":"F32","shape":[1,1.5],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': shape[1] is not an integer in [0, 2^53]"},
      {R"({"a":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': shape[0] is not an integer in [0, 2^53]"},
      {R"({"a":{"dtype":"F32","shape":[1e16],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': shape[0] is not an integer in [0, 2^53]"},
      {R"({"a":{"dtype":"F32","shape":[1048576,1048576,1048576],)"
       R"("data_offsets":[0,4]}})",
       "abcd", "tensor 'a': shape has over 2^60 elements"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0]}})", "abcd",
       "tensor 'a': data_offsets is not [begin, end]"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":{"b":0,"e":4}}})",
       "abcd", "tensor 'a': data_offsets is not [begin, end]"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,-4]}})", "abcd",
       "tensor 'a': data_offsets are not integers in [0, 2^53]"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[4,0]}})", "abcd",
       "tensor 'a': data_offsets [4, 0) end before they begin"},
      {R"({"h.0.attn.c_attn.weight":{"dtype":"F32","shape":[1024],)"
       R"("data_offsets":[0,4096]}})",
       "abcd",
       "tensor 'h.0.attn.c_attn.weight': data_offsets [0, 4096) exceed the "
       "data section (4 bytes)"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd",
       "tensor 'a': shape [2] of F32 needs 8 bytes, data_offsets [0, 4) hold "
       "4"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
       R"("a":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})",
       "abcdefgh", "tensor 'a' appears twice"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})",
       "abcdefgh", "tensors 'a' [0, 8) and 'b' [4, 8) overlap"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})", "abcdefgh",
       "data section bytes [0, 4) belong to no tensor"},
      {R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})", "abcdefgh",
       "data section bytes [4, 8) belong to no tensor"},
      {"{\"a\\nb\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
       "abcd",
       "tensor 'a\\x0ab': shape [2] of F32 needs 8 bytes, data_offsets [0, 4) "
       "hold 4"},
  };
  TempDir dir;
  std::string p = dir.file("bad.safetensors");
  for (const HeaderCase &c : cases) {
    writeBytes(p, stBytes(c.header, c.data));
    expectOpenError(p, c.message);
  }
}

TEST(SafetensorsReaderErrors, Accessors) {
  TempDir dir;
  std::string p = dir.file("a.safetensors");
  writeBytes(p, stBytes(kOneF32, std::string(24, '\0')));
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(p.c_str(), &f), TFC_OK);
  tfc_st_tensor_info t;
  float buf[6];
  EXPECT_EQ(tfc_st_tensor(f, 1, &t), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor index 1 is outside [0, 1)");
  EXPECT_EQ(tfc_st_tensor(nullptr, 0, &t), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_tensor: file is NULL");
  EXPECT_EQ(tfc_st_read_f32(f, -1, buf, 6), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor index -1 is outside [0, 1)");
  EXPECT_EQ(tfc_st_read_f32(f, 0, buf, 5), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor 'a' has 6 elements, not 5");
  EXPECT_EQ(tfc_st_read_f32(f, 0, nullptr, 6), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_read_f32: dst is NULL");
  EXPECT_EQ(tfc_st_read_raw(f, 0, buf, 23), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor 'a' has 24 bytes, not 23");
  const char *k, *v;
  EXPECT_EQ(tfc_st_metadata(f, 0, &k, &v), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": metadata index 0 is outside [0, 0)");
  EXPECT_EQ(tfc_st_metadata(f, 0, nullptr, &v), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_metadata: a pointer argument is NULL");
  // The file shrinks after opening: the read fails, it does not crash.
  writeBytes(p, "");
  EXPECT_EQ(tfc_st_read_f32(f, 0, buf, 6), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensor 'a': cannot read its data (file "
                             "changed since it was opened?)");
  tfc_st_close(f);
}

// ---- Writer ---------------------------------------------------------------

// Files in `dir` with ".tmp." in their name (the writer's PATH.tmp.PID.N).
int temporaries(const std::string &dir) {
  int n = 0;
  DIR *d = opendir(dir.c_str());
  while (struct dirent *e = d ? readdir(d) : nullptr)
    n += strstr(e->d_name, ".tmp.") != nullptr;
  if (d)
    closedir(d);
  return n;
}

// "PATH.tmp.PID.N": the writer's temporary file for this process.
std::string tmpPrefix(const std::string &path) {
  return path + ".tmp." + std::to_string(getpid()) + ".";
}

// `message` is `before` + a call number + `after`.
void expectTmpMessage(const std::string &message, const std::string &before,
                      const std::string &after) {
  EXPECT_EQ(message.rfind(before, 0), 0u) << message;
  ASSERT_GE(message.size(), before.size() + after.size()) << message;
  std::string middle = message.substr(
      before.size(), message.size() - before.size() - after.size());
  EXPECT_FALSE(middle.empty()) << message;
  EXPECT_EQ(middle.find_first_not_of("0123456789"), std::string::npos)
      << message;
  EXPECT_EQ(message.substr(message.size() - after.size()), after) << message;
}

std::string readAll(const std::string &path) {
  FILE *f = fopen(path.c_str(), "rb");
  std::string s;
  if (!f)
    return s;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    s.append(buf, n);
  fclose(f);
  return s;
}

TEST(SafetensorsWriter, WritesTheFormatExactly) {
  TempDir dir;
  std::string p = dir.file("w.safetensors");
  float a[2] = {1.0f, -2.5f};
  int64_t step = 7;
  tfc_st_write_tensor t[2] = {};
  t[0].name = "a";
  t[0].dtype = TFC_ST_F32;
  t[0].rank = 1;
  t[0].shape[0] = 2;
  t[0].f32 = a;
  t[1].name = "step";
  t[1].dtype = TFC_ST_I64;
  t[1].rank = 0;
  t[1].raw = &step;
  tfc_st_metadata_entry meta[1] = {{"format", "pt"}};
  ASSERT_EQ(tfc_st_write(p.c_str(), t, 2, meta, 1), TFC_OK) << lastError();
  std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("step":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  EXPECT_EQ(readAll(p), stBytes(header, floatBytes({1.0f, -2.5f}) + le64(7)));
  EXPECT_EQ(temporaries(dir.path()), 0) << "the temporary file is renamed";
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(p.c_str(), &f), TFC_OK) << lastError();
  EXPECT_STREQ(tfc_st_metadata_get(f, "format"), "pt");
  const char *k, *v;
  ASSERT_EQ(tfc_st_metadata(f, 0, &k, &v), TFC_OK);
  EXPECT_STREQ(k, "format");
  EXPECT_STREQ(v, "pt");
  tfc_st_close(f);
}

TEST(SafetensorsWriter, Bf16RoundsToNearestEven) {
  TempDir dir;
  std::string p = dir.file("b.safetensors");
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1. 1 + 3 * 2^-8 is
  // halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6. Just above a
  // half rounds up; the largest float rounds to inf; NaN stays NaN.
  float in[6] = {1 + std::ldexp(1.0f, -8),
                 1 + 3 * std::ldexp(1.0f, -8),
                 1 + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20),
                 std::numeric_limits<float>::max(),
                 std::numeric_limits<float>::quiet_NaN(),
                 -0.0f};
  tfc_st_write_tensor t = {};
  t.name = "x";
  t.dtype = TFC_ST_BF16;
  t.rank = 1;
  t.shape[0] = 6;
  t.f32 = in;
  ASSERT_EQ(tfc_st_write(p.c_str(), &t, 1, nullptr, 0), TFC_OK);
  tfc_st_file *f = nullptr;
  ASSERT_EQ(tfc_st_open(p.c_str(), &f), TFC_OK);
  float out[6];
  ASSERT_EQ(tfc_st_read_f32(f, 0, out, 6), TFC_OK);
  tfc_st_close(f);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1 + std::ldexp(1.0f, -6));
  EXPECT_EQ(out[2], 1 + std::ldexp(1.0f, -7));
  EXPECT_EQ(out[3], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(out[4]));
  EXPECT_TRUE(std::signbit(out[5]) && out[5] == 0.0f);
}

const tfc_param_info kTable[2] = {
    {"embed.tokens", 0, 6, 2, {3, 2}, TFC_INIT_NORMAL, 0.02f},
    {"final_norm.weight", 6, 2, 1, {2, 0}, TFC_INIT_ONES, 0.0f},
};

TEST(SafetensorsWriter, SaveLoadRoundTripIsBitIdentical) {
  TempDir dir;
  std::string p1 = dir.file("p1.safetensors"), p2 = dir.file("p2.safetensors");
  float params[8] = {1e-38f, -0.0f, 3.14159f, 1e30f, -1e-45f, 7, 0.5f, 2};
  tfc_st_metadata_entry meta[2] = {{"model", "tiny"}, {"step", "3"}};
  ASSERT_EQ(
      tfc_save_safetensors(p1.c_str(), params, kTable, 2, TFC_ST_F32, meta, 2),
      TFC_OK)
      << lastError();
  float back[8];
  memset(back, 0xff, sizeof back);
  ASSERT_EQ(tfc_load_safetensors(p1.c_str(), back, kTable, 2, TFC_ST_MAP_TFC),
            TFC_OK)
      << lastError();
  EXPECT_EQ(0, memcmp(back, params, sizeof params));
  ASSERT_EQ(
      tfc_save_safetensors(p2.c_str(), back, kTable, 2, TFC_ST_F32, meta, 2),
      TFC_OK);
  EXPECT_EQ(readAll(p1), readAll(p2));
  // BF16: loading gives the rounded values, saving those again the same file.
  ASSERT_EQ(tfc_save_safetensors(p1.c_str(), params, kTable, 2, TFC_ST_BF16,
                                 nullptr, 0),
            TFC_OK);
  ASSERT_EQ(tfc_load_safetensors(p1.c_str(), back, kTable, 2, TFC_ST_MAP_TFC),
            TFC_OK);
  EXPECT_EQ(back[2], 3.140625f);
  ASSERT_EQ(tfc_save_safetensors(p2.c_str(), back, kTable, 2, TFC_ST_BF16,
                                 nullptr, 0),
            TFC_OK);
  EXPECT_EQ(readAll(p1), readAll(p2));
}

TEST(SafetensorsWriterErrors, EveryCheck) {
  TempDir dir;
  std::string p = dir.file("w.safetensors");
  float a[2] = {0, 0};
  auto one = [&](const char *name) {
    tfc_st_write_tensor t = {};
    t.name = name;
    t.dtype = TFC_ST_F32;
    t.rank = 1;
    t.shape[0] = 2;
    t.f32 = a;
    return t;
  };
  auto expect = [&](const tfc_st_write_tensor *t, int64_t n,
                    const tfc_st_metadata_entry *m, int64_t nm, int32_t status,
                    const std::string &message) {
    EXPECT_EQ(tfc_st_write(p.c_str(), t, n, m, nm), status) << message;
    EXPECT_EQ(lastError(), message);
    EXPECT_EQ(readAll(p), "") << "nothing written: " << message;
  };
  tfc_st_write_tensor t[2] = {one("a"), one("a")};
  expect(t, 2, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensor 'a' appears twice");
  expect(t, -1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": num_tensors = -1, num_metadata = 0: negative");
  expect(nullptr, 1, nullptr, 0, TFC_ERR_NULL_POINTER, p + ": tensors is NULL");
  expect(t, 1, nullptr, 1, TFC_ERR_NULL_POINTER, p + ": metadata is NULL");
  tfc_st_metadata_entry m[2] = {{"k", "v"}, {"k", "w"}};
  expect(t, 1, m, 2, TFC_ERR_BAD_ARGUMENT,
         p + ": metadata key 'k' appears twice");
  m[1].value = nullptr;
  expect(t, 1, m, 2, TFC_ERR_NULL_POINTER,
         p + ": metadata[1] has a NULL key or value");
  t[0] = one(nullptr);
  expect(t, 1, nullptr, 0, TFC_ERR_NULL_POINTER,
         p + ": tensors[0].name is NULL");
  t[0] = one("");
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensors[0]: the name '' is reserved or empty");
  t[0] = one("__metadata__");
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensors[0]: the name '__metadata__' is reserved or empty");
  t[0] = one("a");
  t[0].raw = a;
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensor 'a': give exactly one of f32 and raw");
  t[0] = one("a");
  t[0].dtype = 15;
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensor 'a': unknown dtype 15");
  t[0].dtype = TFC_ST_F16;
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensor 'a': f32 data is stored as F32 or BF16, not F16");
  t[0] = one("a");
  t[0].rank = 9;
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensor 'a': rank 9 is outside [0, 8]");
  t[0] = one("a");
  t[0].shape[0] = -2;
  expect(t, 1, nullptr, 0, TFC_ERR_BAD_ARGUMENT,
         p + ": tensor 'a': shape[0] = -2 is negative or too large");
  t[0] = one("a");
  ASSERT_EQ(tfc_st_write(p.c_str(), t, 1, nullptr, 0), TFC_OK);
  ASSERT_EQ(remove(p.c_str()), 0);
  EXPECT_EQ(tfc_st_write(nullptr, t, 1, nullptr, 0), TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_st_write: path is NULL");
  std::string nodir = dir.file("no/such/dir.safetensors");
  EXPECT_EQ(tfc_st_write(nodir.c_str(), t, 1, nullptr, 0),
            TFC_ERR_BAD_ARGUMENT);
  expectTmpMessage(lastError(), nodir + ": cannot create " + tmpPrefix(nodir),
                   ": No such file or directory");
  // The path is a directory: PATH.tmp.PID.N is written, the rename fails,
  // and the temporary file is removed.
  std::string sub = dir.file("sub");
  ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
  EXPECT_EQ(tfc_st_write(sub.c_str(), t, 1, nullptr, 0), TFC_ERR_BAD_ARGUMENT);
  expectTmpMessage(lastError(), sub + ": cannot rename " + tmpPrefix(sub),
                   " to it: Is a directory");
  EXPECT_EQ(temporaries(dir.path()), 0);
  // Sizes past what one file can index (2^63 bytes), caught before writing.
  tfc_st_write_tensor huge[3] = {};
  for (tfc_st_write_tensor &h : huge) {
    h.name = &"abc"[&h - huge];
    h.dtype = TFC_ST_F64;
    h.rank = 1;
    h.shape[0] = int64_t(1) << 58;
    h.raw = a;
  }
  EXPECT_EQ(tfc_st_write(p.c_str(), huge, 3, nullptr, 0), TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tensors too large for one file");
  float params[8] = {};
  EXPECT_EQ(tfc_save_safetensors(p.c_str(), params, kTable, 2, TFC_ST_F16,
                                 nullptr, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": tfc_save_safetensors: dtype 2 is neither F32 "
                             "nor BF16");
  EXPECT_EQ(tfc_save_safetensors(p.c_str(), nullptr, kTable, 2, TFC_ST_F32,
                                 nullptr, 0),
            TFC_ERR_NULL_POINTER);
  EXPECT_EQ(lastError(), "tfc_save_safetensors: params is NULL");
  EXPECT_EQ(tfc_save_safetensors(p.c_str(), params, kTable, -1, TFC_ST_F32,
                                 nullptr, 0),
            TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": num_tensors = -1 is negative");
  tfc_param_info bad = kTable[0];
  bad.numel = 5;
  EXPECT_EQ(
      tfc_save_safetensors(p.c_str(), params, &bad, 1, TFC_ST_F32, nullptr, 0),
      TFC_ERR_BAD_ARGUMENT);
  EXPECT_EQ(lastError(), p + ": table[0] (embed.tokens): rank 2, numel 5 and "
                             "offset 0 do not describe a tensor");
  EXPECT_EQ(readAll(p), "");
}

} // namespace
