//===- ModelDescriptorTest.cpp - The descriptor's C layout, and its reader ===//
//
// abi/ModelDescriptor.cpp writes tfc_model and the tables it points to as
// LLVM struct constants; C programs read them through tfc/runtime.h. Every
// field's offset under the host's data layout must equal offsetof in C, or
// a generic driver would read garbage. Then the runtime's descriptor
// helpers (tfc_model_check, tfc_entry_find_array, tfc_array_numel). And
// the parameter table with a rank-3 tensor as the header, the descriptor
// and the layout JSON write it.
//
//===----------------------------------------------------------------------===//

#include "abi/ModelDescriptor.h"
#include "abi/HeaderEmitter.h"
#include "target/ObjectEmitter.h"

#include "tfc/runtime.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <cstddef>
#include <gtest/gtest.h>
#include <vector>

namespace {

struct Field {
  const char *name;
  size_t offset;
};

/// Compares each element offset of `type` with `fields` (in order) and the
/// sizes.
void expectLayout(llvm::StructType *type, const llvm::DataLayout &layout,
                  size_t size, std::initializer_list<Field> fields) {
  const llvm::StructLayout *sl = layout.getStructLayout(type);
  ASSERT_EQ(type->getNumElements(), fields.size()) << type->getName().str();
  unsigned i = 0;
  for (const Field &f : fields)
    EXPECT_EQ(sl->getElementOffset(i++), f.offset)
        << type->getName().str() << "." << f.name;
  EXPECT_EQ(sl->getSizeInBytes(), size) << type->getName().str();
}

#define FIELD(type, name)                                                      \
  Field { #name, offsetof(type, name) }

TEST(ModelDescriptorTest, LlvmStructsMatchTheCLayout) {
  std::string error;
  auto machine = tfc::createHostTargetMachine({}, error);
  ASSERT_TRUE(machine) << error;
  llvm::DataLayout layout = machine->createDataLayout();
  llvm::LLVMContext ctx;
  tfc::DescriptorTypes t = tfc::DescriptorTypes::get(ctx);
  expectLayout(t.paramInfo, layout, sizeof(tfc_param_info),
               {FIELD(tfc_param_info, name), FIELD(tfc_param_info, offset),
                FIELD(tfc_param_info, numel), FIELD(tfc_param_info, rank),
                FIELD(tfc_param_info, shape), FIELD(tfc_param_info, init_kind),
                FIELD(tfc_param_info, init_param)});
  expectLayout(t.arrayInfo, layout, sizeof(tfc_array_info),
               {FIELD(tfc_array_info, name), FIELD(tfc_array_info, dtype),
                FIELD(tfc_array_info, access), FIELD(tfc_array_info, rank),
                FIELD(tfc_array_info, shape)});
  expectLayout(t.entryInfo, layout, sizeof(tfc_entry_info),
               {FIELD(tfc_entry_info, name), FIELD(tfc_entry_info, call),
                FIELD(tfc_entry_info, num_arrays),
                FIELD(tfc_entry_info, arrays)});
  expectLayout(
      t.model, layout, sizeof(tfc_model),
      {FIELD(tfc_model, version),        FIELD(tfc_model, abi_version),
       FIELD(tfc_model, name),           FIELD(tfc_model, tfc_version),
       FIELD(tfc_model, spec_hash),      FIELD(tfc_model, device),
       FIELD(tfc_model, d_model),        FIELD(tfc_model, n_heads),
       FIELD(tfc_model, n_kv_heads),     FIELD(tfc_model, head_dim),
       FIELD(tfc_model, d_ff),           FIELD(tfc_model, depth),
       FIELD(tfc_model, max_seq),        FIELD(tfc_model, max_batch),
       FIELD(tfc_model, vocab),          FIELD(tfc_model, has_embedding),
       FIELD(tfc_model, has_head),       FIELD(tfc_model, has_loss),
       FIELD(tfc_model, has_cross),      FIELD(tfc_model, has_key_padding),
       FIELD(tfc_model, param_count),    FIELD(tfc_model, num_tensors),
       FIELD(tfc_model, tensors),        FIELD(tfc_model, init),
       FIELD(tfc_model, workspace_size), FIELD(tfc_model, forward),
       FIELD(tfc_model, backward),       FIELD(tfc_model, kv_cache_size),
       FIELD(tfc_model, kv_cache_init),  FIELD(tfc_model, prefill),
       FIELD(tfc_model, decode)});
}

TEST(ModelDescriptorTest, CheckRefusesOtherVersionsByName) {
  tfc_model m{};
  EXPECT_EQ(tfc_model_check(nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_model_check: model is NULL");
  m.version = TFC_MODEL_VERSION;
  m.abi_version = TFC_RUNTIME_ABI_VERSION;
  m.name = "m";
  EXPECT_EQ(tfc_model_check(&m), TFC_OK);
  m.version = TFC_MODEL_VERSION + 1; // Newer writers only add fields.
  EXPECT_EQ(tfc_model_check(&m), TFC_OK);
  m.version = 0;
  EXPECT_EQ(tfc_model_check(&m), TFC_ERR_BAD_ARGUMENT);
  EXPECT_STREQ(tfc_last_error(),
               "tfc_model_check: model m has descriptor version 0, this "
               "runtime reads 1 or later (recompile it)");
  m.version = TFC_MODEL_VERSION;
  // ABI 2's tfc_param_info had two dimensions: its tables do not fit.
  m.abi_version = 2;
  EXPECT_EQ(tfc_model_check(&m), TFC_ERR_BAD_ARGUMENT);
  EXPECT_STREQ(tfc_last_error(), "tfc_model_check: model m calls runtime ABI "
                                 "2, this runtime is ABI 3 (recompile it)");
}

// A layout with a mixture-of-experts block's stacked tensors beside rank-1
// and rank-2 ones: NAME_tensors, the descriptor's table and the layout JSON
// hold every dimension, 1 past the rank (rank 1 and 2 as before ABI 3, with
// one more 1).
TEST(ModelDescriptorTest, ParamTablesHoldRank3Shapes) {
  static_assert(TFC_MAX_PARAM_RANK == 3);
  tfc::spec::Diagnostic diag;
  auto spec = tfc::spec::parseSpec("name = \"m\"\n[model]\nd_model = 8\n"
                                   "n_heads = 2\nd_ff = 16\ndepth = 1\n"
                                   "max_seq = 4\nmax_batch = 2\n",
                                   "m.toml", diag);
  ASSERT_TRUE(spec) << diag.str();
  tfc::ParamLayout layout;
  layout.leading = {
      {"norm.weight", 0, {8}, tfc::InitKind::Ones, 0.0f},
      {"router.weight", 8, {8, 2}, tfc::InitKind::Uniform, 0.5f},
      {"experts.w_up.weight", 24, {2, 8, 16}, tfc::InitKind::Normal, 0.25f},
      {"experts.w_up.bias", 280, {2, 16}, tfc::InitKind::Zeros, 0.0f}};
  layout.total = 312;
  using Shape = std::array<int64_t, TFC_MAX_PARAM_RANK>;
  const Shape want[] = {{8, 1, 1}, {8, 2, 1}, {2, 8, 16}, {2, 16, 1}};
  for (size_t i = 0; i < layout.leading.size(); ++i)
    EXPECT_EQ(tfc::paramInfoShape(layout.leading[i]), want[i]) << i;

  mlir::tfc::abi::EntrySignature entries;
  entries.model = "m";
  entries.init.name = "m_init";
  entries.workspaceSize.name = "m_workspace_size";
  entries.forward.name = "m_forward";
  std::string header = tfc::emitHeader(*spec, layout, entries);
  for (const char *row :
       {"  {\"norm.weight\", 0, 8, 1, {8, 1, 1}, 1, ",
        "  {\"router.weight\", 8, 16, 2, {8, 2, 1}, 2, ",
        "  {\"experts.w_up.weight\", 24, 256, 3, {2, 8, 16}, 3, ",
        "  {\"experts.w_up.bias\", 280, 32, 2, {2, 16, 1}, 0, "})
    EXPECT_NE(header.find(row), std::string::npos) << row << "\n" << header;

  // The descriptor of a module with stand-ins for the typed functions.
  llvm::LLVMContext ctx;
  llvm::Module module("m", ctx);
  auto *i32 = llvm::Type::getInt32Ty(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  auto define = [&](const char *name, llvm::Type *result,
                    llvm::ArrayRef<llvm::Type *> args) {
    auto *fn = llvm::Function::Create(
        llvm::FunctionType::get(result, args, false),
        llvm::GlobalValue::ExternalLinkage, name, module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
    b.CreateRet(llvm::ConstantInt::get(result, 0));
  };
  define("m_init", i32, {llvm::PointerType::get(ctx, 0), i64});
  define("m_workspace_size", i64, {i64, i64});
  define("m_forward", i32, {});
  std::string error;
  ASSERT_TRUE(
      tfc::emitModelDescriptor(module, *spec, layout, entries, false, error))
      << error;
  EXPECT_FALSE(llvm::verifyModule(module, &llvm::errs()));
  llvm::GlobalVariable *table = module.getNamedGlobal("m.model.tensors");
  ASSERT_NE(table, nullptr);
  llvm::Constant *rows = table->getInitializer();
  for (unsigned i = 0; i < 4; ++i) {
    llvm::Constant *row = rows->getAggregateElement(i);
    auto field = [&](unsigned k) {
      return llvm::cast<llvm::ConstantInt>(row->getAggregateElement(k))
          ->getSExtValue();
    };
    EXPECT_EQ(field(3), int64_t(layout.leading[i].shape.size())) << i;
    llvm::Constant *shape = row->getAggregateElement(4u);
    Shape got;
    for (unsigned d = 0; d < TFC_MAX_PARAM_RANK; ++d)
      got[d] = llvm::cast<llvm::ConstantInt>(shape->getAggregateElement(d))
                   ->getSExtValue();
    EXPECT_EQ(got, want[i]) << i;
  }

  // The JSON lists the dimensions of the rank, no padding.
  auto json = llvm::json::parse(tfc::emitLayoutJson(*spec, layout));
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *tensors = json->getAsObject()->getArray("tensors");
  ASSERT_NE(tensors, nullptr);
  ASSERT_EQ(tensors->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const llvm::json::Array *shape =
        (*tensors)[i].getAsObject()->getArray("shape");
    ASSERT_NE(shape, nullptr);
    std::vector<int64_t> dims;
    for (const llvm::json::Value &d : *shape)
      dims.push_back(*d.getAsInteger());
    EXPECT_EQ(dims, layout.leading[i].shape) << i;
  }
}

int32_t noCall(void *, void *const *, void *, int64_t, int64_t, int64_t,
               int64_t) {
  return TFC_OK;
}

TEST(ModelDescriptorTest, ArraysByNameAndTheirSizes) {
  tfc_array_info arrays[] = {
      {"tokens",
       TFC_DTYPE_I32,
       TFC_ACCESS_READ,
       2,
       {TFC_DIM_BATCH, TFC_DIM_SEQ, 0, 0}},
      {"enc",
       TFC_DTYPE_F32,
       TFC_ACCESS_READ,
       3,
       {TFC_DIM_BATCH, TFC_DIM_ENC_SEQ, 16, 0}},
      {"loss", TFC_DTYPE_F32, TFC_ACCESS_WRITE, 0, {0, 0, 0, 0}},
      {"kv_cache", TFC_DTYPE_OPAQUE, TFC_ACCESS_READ, 0, {0, 0, 0, 0}},
      {"huge", TFC_DTYPE_F32, TFC_ACCESS_WRITE, 3, {INT64_MAX / 2, 3, 1, 0}},
      {"odd", TFC_DTYPE_F32, TFC_ACCESS_WRITE, 1, {-7, 0, 0, 0}},
  };
  tfc_entry_info entry{"m_forward", noCall, 6, arrays};
  EXPECT_EQ(tfc_entry_find_array(&entry, "enc"), 1);
  EXPECT_EQ(tfc_entry_find_array(&entry, "logits"), -1);
  EXPECT_EQ(tfc_entry_find_array(&entry, nullptr), -1);
  EXPECT_EQ(tfc_entry_find_array(nullptr, "enc"), -1);
  tfc_entry_info absent{nullptr, nullptr, 0, nullptr};
  EXPECT_EQ(tfc_entry_find_array(&absent, "enc"), -1);

  EXPECT_EQ(tfc_array_numel(&arrays[0], 3, 5, 7), 15);
  EXPECT_EQ(tfc_array_numel(&arrays[1], 3, 5, 7), 3 * 7 * 16);
  EXPECT_EQ(tfc_array_numel(&arrays[2], 3, 5, 7), 1);
  EXPECT_EQ(tfc_array_numel(&arrays[3], 3, 5, 7), -1); // Opaque.
  EXPECT_EQ(tfc_array_numel(&arrays[4], 1, 1, 1), -1); // Past INT64_MAX.
  EXPECT_EQ(tfc_array_numel(&arrays[5], 1, 1, 1), -1); // Unknown symbol.
  EXPECT_EQ(tfc_array_numel(&arrays[0], -1, 5, 7), -1);
  EXPECT_EQ(tfc_array_numel(nullptr, 1, 1, 1), -1);
}

TEST(ModelDescriptorTest, OpenRefusesNullArguments) {
  const tfc_model *m = reinterpret_cast<const tfc_model *>(1);
  void *handle = &m;
  EXPECT_EQ(tfc_model_open(nullptr, &m, &handle), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_model_open: path is NULL");
  EXPECT_EQ(m, nullptr);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(tfc_model_open("x.so", nullptr, &handle), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_model_open: model is NULL");
  EXPECT_EQ(tfc_model_open("x.so", &m, nullptr), TFC_ERR_NULL_POINTER);
  EXPECT_STREQ(tfc_last_error(), "tfc_model_open: handle is NULL");
  EXPECT_EQ(tfc_model_close(nullptr), TFC_OK);
}

} // namespace
