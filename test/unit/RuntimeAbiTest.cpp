//===- RuntimeAbiTest.cpp - The compiler's view of the C ABI --------------===//
//
// abi/RuntimeAbi.h derives the LLVM-dialect types of the runtime functions
// generated code calls from their declarations in runtime.h: each one is
// checked here against the C prototype it must match, so a change on either
// side shows up as a failing line naming the function. abi/EntrySignature.h
// is checked on models the frontend builds, and against the gradient
// function tfc-derive-backward makes.
//
//===----------------------------------------------------------------------===//

#include "abi/RuntimeAbi.h"
#include "abi/EntrySignature.h"
#include "frontend/ModelBuilder.h"
#include "spec/Spec.h"
#include "tfc/Dialect/TfcDialect.h"
#include "tfc/Dialect/TfcRoles.h"
#include "transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tfc::abi;

namespace {

template <typename T> std::string str(const T &value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << value;
  return s;
}

struct RuntimeAbiTest : ::testing::Test {
  RuntimeAbiTest() {
    ctx.loadDialect<LLVM::LLVMDialect, func::FuncDialect, arith::ArithDialect,
                    mlir::tfc::TfcDialect>();
  }
  MLIRContext ctx;
};

TEST_F(RuntimeAbiTest, MapsCTypes) {
  using mlir::tfc::abi::detail::llvmTypeOf;
  EXPECT_EQ(str(llvmTypeOf<int32_t>(&ctx)), "i32");
  EXPECT_EQ(str(llvmTypeOf<int64_t>(&ctx)), "i64");
  EXPECT_EQ(str(llvmTypeOf<uint64_t>(&ctx)), "i64");
  EXPECT_EQ(str(llvmTypeOf<size_t>(&ctx)), "i64");
  EXPECT_EQ(str(llvmTypeOf<float>(&ctx)), "f32");
  EXPECT_EQ(str(llvmTypeOf<double>(&ctx)), "f64");
  EXPECT_EQ(str(llvmTypeOf<tfc_status>(&ctx)), "i32");
  EXPECT_EQ(str(llvmTypeOf<const char *>(&ctx)), "!llvm.ptr");
  EXPECT_EQ(str(llvmTypeOf<void **>(&ctx)), "!llvm.ptr");
  EXPECT_EQ(str(llvmTypeOf<tfc_task_fn>(&ctx)), "!llvm.ptr");
}

// One line per runtime function generated code calls, with its C prototype.
TEST_F(RuntimeAbiTest, RuntimeFunctionTypes) {
  // int32_t tfc_rt_error(int32_t status, const char *format, ...)
  EXPECT_EQ(runtime::tfc_rt_error.name, "tfc_rt_error");
  EXPECT_EQ(str(runtime::tfc_rt_error.llvmType(&ctx)),
            "!llvm.func<i32 (i32, ptr, ...)>");
  // int32_t tfc_rt_check_finite(int32_t status, const tfc_runtime *rt,
  //     const char *function, const char *what, const float *data,
  //     int64_t n, const char *names, const int64_t *ranges,
  //     int64_t num_tensors)
  EXPECT_EQ(runtime::tfc_rt_check_finite.name, "tfc_rt_check_finite");
  EXPECT_EQ(str(runtime::tfc_rt_check_finite.llvmType(&ctx)),
            "!llvm.func<i32 (i32, ptr, ptr, ptr, ptr, i64, ptr, ptr, i64)>");
  // int64_t tfc_rt_profile_begin(const tfc_runtime *rt)
  EXPECT_EQ(runtime::tfc_rt_profile_begin.name, "tfc_rt_profile_begin");
  EXPECT_EQ(str(runtime::tfc_rt_profile_begin.funcType(&ctx)),
            "(!llvm.ptr) -> i64");
  // void tfc_rt_profile_end(tfc_runtime *rt, const char *name,
  //     int64_t start)
  EXPECT_EQ(runtime::tfc_rt_profile_end.name, "tfc_rt_profile_end");
  EXPECT_EQ(str(runtime::tfc_rt_profile_end.llvmType(&ctx)),
            "!llvm.func<void (ptr, ptr, i64)>");
  // void tfc_rt_parallel_for(tfc_runtime *rt, int64_t n, tfc_task_fn fn,
  //     void *ctx)
  EXPECT_EQ(runtime::tfc_rt_parallel_for.name, "tfc_rt_parallel_for");
  EXPECT_EQ(str(runtime::tfc_rt_parallel_for.funcType(&ctx)),
            "(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr) -> ()");
  // typedef void (*tfc_task_fn)(void *ctx, int64_t begin, int64_t end)
  EXPECT_EQ(str(parallelTaskType(&ctx)), "(!llvm.ptr, i64, i64) -> ()");
  // void tfc_rt_fill(float *data, int64_t n, int32_t init_kind, float param,
  //     uint64_t seed, uint64_t stream)
  EXPECT_EQ(runtime::tfc_rt_fill.name, "tfc_rt_fill");
  EXPECT_EQ(str(runtime::tfc_rt_fill.funcType(&ctx)),
            "(!llvm.ptr, i64, i32, f32, i64, i64) -> ()");
  // void tfc_rt_fill_range(float *data, int64_t begin, int64_t end,
  //     int32_t init_kind, float param, uint64_t seed, uint64_t stream)
  EXPECT_EQ(runtime::tfc_rt_fill_range.name, "tfc_rt_fill_range");
  EXPECT_EQ(str(runtime::tfc_rt_fill_range.llvmType(&ctx)),
            "!llvm.func<void (ptr, i64, i64, i32, f32, i64, i64)>");
  // int32_t tfc_cuda_launch(tfc_cuda_module *module, const char *kernel,
  //     int64_t gx, int64_t gy, int64_t gz, int32_t bx, int32_t by,
  //     int32_t bz, int32_t shared_bytes, void *stream, void **args)
  EXPECT_EQ(runtime::tfc_cuda_launch.name, "tfc_cuda_launch");
  EXPECT_EQ(str(runtime::tfc_cuda_launch.funcType(&ctx)),
            "(!llvm.ptr, !llvm.ptr, i64, i64, i64, i32, i32, i32, i32, "
            "!llvm.ptr, !llvm.ptr) -> i32");
  // int32_t tfc_cuda_read(void *stream, void *dst, const void *src,
  //     size_t bytes)
  EXPECT_EQ(runtime::tfc_cuda_read.name, "tfc_cuda_read");
  EXPECT_EQ(str(runtime::tfc_cuda_read.funcType(&ctx)),
            "(!llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> i32");
}

TEST_F(RuntimeAbiTest, StatusCodesAndVersionComeFromRuntimeH) {
  EXPECT_EQ(kRuntimeAbiVersion, TFC_RUNTIME_ABI_VERSION);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  OpBuilder b = OpBuilder::atBlockBegin(module->getBody());
  Value status = statusConstant(b, module->getLoc(), TFC_ERR_WORKSPACE);
  EXPECT_EQ(str(*status.getDefiningOp()), "%c5_i32 = arith.constant 5 : i32");
}

TEST_F(RuntimeAbiTest, DeclaresEachFunctionOnce) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  LLVM::LLVMFuncOp first =
      declareRuntimeFunction(*module, runtime::tfc_rt_error);
  LLVM::LLVMFuncOp second =
      declareRuntimeFunction(*module, runtime::tfc_rt_error);
  func::FuncOp fill = declareRuntimeFunc(*module, runtime::tfc_rt_fill);
  EXPECT_EQ(first, second);
  EXPECT_TRUE(fill.isPrivate());
  EXPECT_EQ(std::distance(module->getBody()->begin(), module->getBody()->end()),
            2);
}

::tfc::spec::Spec parseSpec(const std::string &text) {
  ::tfc::spec::Diagnostic diag;
  auto spec = ::tfc::spec::parseSpec(text, "test.toml", diag);
  EXPECT_TRUE(spec) << diag.str();
  return *spec;
}

std::vector<std::string> declarations(const EntryPoint &entry) {
  std::vector<std::string> result;
  for (const EntryArgument &arg : entry.arguments)
    result.push_back(arg.declaration());
  return result;
}

using Strings = std::vector<std::string>;

TEST_F(RuntimeAbiTest, EntryPointsOfALanguageModel) {
  ::tfc::spec::Spec spec = parseSpec(R"(
name = "lm"
[model]
d_model = 8
n_heads = 2
depth = 1
max_seq = 4
[embedding]
vocab = 16
[head]
loss = "cross_entropy"
)");
  OwningOpRef<ModuleOp> module = ::tfc::buildModel(ctx, spec);
  ASSERT_TRUE(module);
  EntrySignature s = describeEntryPoints(lookupModelFunction(*module),
                                         /*withBackward=*/true, /*cuda=*/false);
  EXPECT_EQ(s.forward.name, "lm_forward");
  EXPECT_EQ(
      declarations(s.forward),
      (Strings{"tfc_runtime *rt", "const float *params",
               "const int32_t *tokens", "const int32_t *targets",
               "float *logits", "float *loss", "void *workspace",
               "int64_t workspace_bytes", "int64_t batch", "int64_t seq"}));
  ASSERT_TRUE(s.backward);
  // With a loss: no output gradient, no input gradient (token ids).
  EXPECT_EQ(
      declarations(*s.backward),
      (Strings{"tfc_runtime *rt", "const float *params", "float *d_params",
               "void *workspace", "int64_t workspace_bytes", "int64_t batch",
               "int64_t seq"}));
  EXPECT_EQ(declarations(s.workspaceSize),
            (Strings{"int64_t batch", "int64_t seq"}));
  EXPECT_EQ(declarations(s.init), (Strings{"float *params", "uint64_t seed"}));
  EXPECT_TRUE(s.paramCount.arguments.empty());
}

TEST_F(RuntimeAbiTest, EntryPointsOfACrossAttentionBlockOnCuda) {
  ::tfc::spec::Spec spec = parseSpec(R"(
name = "dec"
[model]
d_model = 8
n_heads = 2
depth = 1
max_seq = 4
[attention]
cross = true
)");
  OwningOpRef<ModuleOp> module = ::tfc::buildModel(ctx, spec);
  ASSERT_TRUE(module);
  EntrySignature s = describeEntryPoints(lookupModelFunction(*module),
                                         /*withBackward=*/true, /*cuda=*/true);
  EXPECT_TRUE(s.hasEncoder);
  EXPECT_EQ(declarations(s.forward),
            (Strings{"void *stream", "const float *params", "const float *x",
                     "const float *enc", "float *y", "void *workspace",
                     "int64_t workspace_bytes", "int64_t batch", "int64_t seq",
                     "int64_t enc_seq"}));
  EXPECT_EQ(declarations(*s.backward),
            (Strings{"void *stream", "const float *params", "const float *d_y",
                     "float *d_x", "float *d_enc", "float *d_params",
                     "void *workspace", "int64_t workspace_bytes",
                     "int64_t batch", "int64_t seq", "int64_t enc_seq"}));
  EXPECT_EQ(s.forward.sizes().size(), 3u);
  EXPECT_EQ(s.forward.arrays()[2]->comment, "[batch, enc_seq, d_model]");
}

// Each backward array names the value of @NAME_grad that tfc-derive-backward
// gives that role, and each forward array the model's.
TEST_F(RuntimeAbiTest, ArraySourcesMatchTheFunctionsTheyLower) {
  ::tfc::spec::Spec spec = parseSpec(R"(
name = "dec"
[model]
d_model = 8
n_heads = 2
depth = 1
max_seq = 4
[attention]
cross = true
)");
  OwningOpRef<ModuleOp> module = ::tfc::buildModel(ctx, spec);
  ASSERT_TRUE(module);
  func::FuncOp model = lookupModelFunction(*module);
  EntrySignature s = describeEntryPoints(model, true, false);
  PassManager pm(&ctx);
  pm.addPass(mlir::tfc::createTfcDeriveBackward());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto grad = module->lookupSymbol<func::FuncOp>("dec_grad");
  ASSERT_TRUE(grad);
  auto roleAt = [](func::FuncOp f, const ArraySource &source) {
    return source.kind == ArraySource::Argument
               ? mlir::tfc::getArgRole(f, source.index)
               : mlir::tfc::getResultRole(f, source.index);
  };
  for (const EntryArgument *arg : s.forward.arrays())
    EXPECT_EQ(roleAt(model, *arg->source), arg->name);
  for (const EntryArgument *arg : s.backward->arrays())
    EXPECT_EQ(roleAt(grad, *arg->source), arg->name);
}

} // namespace
