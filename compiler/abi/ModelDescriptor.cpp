//===- ModelDescriptor.cpp - NAME_model(): the model as data --------------===//

#include "abi/ModelDescriptor.h"
#include "abi/HeaderEmitter.h"
#include "abi/RuntimeAbi.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"

using namespace llvm;
using namespace tfc;
using namespace tfc::spec;
namespace abi = mlir::tfc::abi;

DescriptorTypes DescriptorTypes::get(LLVMContext &ctx) {
  auto *ptr = PointerType::get(ctx, 0);
  auto *i32 = Type::getInt32Ty(ctx), *i64 = Type::getInt64Ty(ctx);
  auto *f32 = Type::getFloatTy(ctx);
  auto named = [&](StringRef name, ArrayRef<Type *> fields) {
    if (StructType *existing = StructType::getTypeByName(ctx, name))
      return existing;
    return StructType::create(ctx, fields, name);
  };
  DescriptorTypes t;
  t.paramInfo = named(
      "tfc_param_info",
      {ptr, i64, i64, i32, ArrayType::get(i64, TFC_MAX_PARAM_RANK), i32, f32});
  t.arrayInfo =
      named("tfc_array_info",
            {ptr, i32, i32, i32, ArrayType::get(i64, TFC_MAX_ARRAY_RANK)});
  t.entryInfo = named("tfc_entry_info", {ptr, ptr, i32, ptr});
  SmallVector<Type *> model{i32, i32, ptr, ptr, i64, i32};
  model.append(9, i64); // d_model .. vocab
  model.append(5, i32); // has_embedding .. has_key_padding
  model.append({i64, i64, ptr, ptr, ptr, t.entryInfo, t.entryInfo, ptr, ptr,
                t.entryInfo, t.entryInfo});
  t.model = named("tfc_model", model);
  return t;
}

namespace {

/// Builds the constants and thunks of one model's descriptor.
class DescriptorBuilder {
public:
  DescriptorBuilder(Module &module, const Spec &spec,
                    const abi::EntrySignature &entries)
      : module(module), ctx(module.getContext()), spec(spec), entries(entries),
        types(DescriptorTypes::get(ctx)) {}

  bool build(const ParamLayout &layout, bool shared, std::string &error);

private:
  Constant *i32(int64_t v) {
    return ConstantInt::get(Type::getInt32Ty(ctx), v);
  }
  Constant *i64(int64_t v) {
    return ConstantInt::get(Type::getInt64Ty(ctx), v);
  }
  Constant *null() {
    return ConstantPointerNull::get(PointerType::get(ctx, 0));
  }
  /// A private NUL-terminated string, one global per distinct text.
  Constant *string(StringRef text);
  Constant *tensorTable(const std::vector<ParamTensor> &tensors);
  Constant *entryInfo(const std::optional<abi::EntryPoint> &entry,
                      std::string &error);
  Function *genericThunk(const abi::EntryPoint &entry, std::string &error);
  Function *workspaceSizeThunk(std::string &error);
  Function *typed(const std::string &name, std::string &error);
  Function *accessor(StringRef name, GlobalVariable *descriptor);

  Module &module;
  LLVMContext &ctx;
  const Spec &spec;
  const abi::EntrySignature &entries;
  DescriptorTypes types;
  StringMap<Constant *> strings;
  int64_t paramCount = 0;
};

Constant *DescriptorBuilder::string(StringRef text) {
  auto [it, inserted] = strings.try_emplace(text, nullptr);
  if (inserted) {
    Constant *data = ConstantDataArray::getString(ctx, text);
    auto *global = new GlobalVariable(
        module, data->getType(), /*isConstant=*/true,
        GlobalValue::PrivateLinkage, data, spec.name + ".model.str");
    global->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
    global->setAlignment(Align(1));
    it->second = global;
  }
  return it->second;
}

/// The parameter table, its names in one blob (a depth-1000 model has tens
/// of thousands of tensors: one global, not one per name).
Constant *
DescriptorBuilder::tensorTable(const std::vector<ParamTensor> &tensors) {
  std::string blob;
  std::vector<uint64_t> nameOffsets;
  for (const ParamTensor &t : tensors) {
    nameOffsets.push_back(blob.size());
    blob += t.name;
    blob.push_back('\0');
  }
  Constant *names = ConstantDataArray::getString(ctx, blob, /*AddNull=*/false);
  auto *namesGlobal = new GlobalVariable(module, names->getType(), true,
                                         GlobalValue::PrivateLinkage, names,
                                         spec.name + ".model.tensor_names");
  namesGlobal->setAlignment(Align(1));
  std::vector<Constant *> rows;
  for (auto [t, offset] : llvm::zip_equal(tensors, nameOffsets)) {
    Constant *name = ConstantExpr::getInBoundsGetElementPtr(
        names->getType(), namesGlobal,
        ArrayRef<Constant *>{i64(0), i64(int64_t(offset))});
    std::vector<Constant *> dims;
    for (int64_t d : paramInfoShape(t)) // NAME_tensors' rows, 1 past the rank
      dims.push_back(i64(d));
    Constant *shape = ConstantArray::get(
        ArrayType::get(Type::getInt64Ty(ctx), TFC_MAX_PARAM_RANK), dims);
    rows.push_back(ConstantStruct::get(
        types.paramInfo,
        {name, i64(t.offset), i64(t.numel()), i32(int64_t(t.shape.size())),
         shape, i32(int32_t(t.init)),
         ConstantFP::get(Type::getFloatTy(ctx), double(t.initParam))}));
  }
  auto *tableType = ArrayType::get(types.paramInfo, rows.size());
  auto *table = new GlobalVariable(
      module, tableType, true, GlobalValue::PrivateLinkage,
      ConstantArray::get(tableType, rows), spec.name + ".model.tensors");
  return table;
}

Function *DescriptorBuilder::typed(const std::string &name,
                                   std::string &error) {
  Function *fn = module.getFunction(name);
  if (!fn || fn->isDeclaration()) {
    error = "the model descriptor needs " + name + ", which the module lacks";
    return nullptr;
  }
  return fn;
}

/// `i32 NAME_ENTRY.generic(ctx, arrays, workspace, workspace_bytes, batch,
/// seq, enc_seq)`: the typed call with arrays[i] as its i-th array.
Function *DescriptorBuilder::genericThunk(const abi::EntryPoint &entry,
                                          std::string &error) {
  Function *target = typed(entry.name, error);
  if (!target)
    return nullptr;
  auto *ptr = PointerType::get(ctx, 0);
  auto *int32 = Type::getInt32Ty(ctx), *int64 = Type::getInt64Ty(ctx);
  auto *type = FunctionType::get(
      int32, {ptr, ptr, ptr, int64, int64, int64, int64}, false);
  Function *fn = Function::Create(type, GlobalValue::InternalLinkage,
                                  entry.name + ".generic", module);
  Argument *context = fn->getArg(0), *arrays = fn->getArg(1),
           *workspace = fn->getArg(2), *bytes = fn->getArg(3);
  Value *sizes[] = {fn->getArg(4), fn->getArg(5), fn->getArg(6)};
  auto *entryBlock = BasicBlock::Create(ctx, "entry", fn);
  auto *bad = BasicBlock::Create(ctx, "null_arrays", fn);
  auto *call = BasicBlock::Create(ctx, "call", fn);
  IRBuilder<> b(entryBlock);
  b.CreateCondBr(b.CreateIsNull(arrays), bad, call);

  b.SetInsertPoint(bad);
  FunctionCallee rtError = module.getOrInsertFunction(
      abi::runtime::tfc_rt_error.name,
      FunctionType::get(int32, {int32, ptr}, /*isVarArg=*/true));
  b.CreateRet(b.CreateCall(
      rtError, {i32(TFC_ERR_NULL_POINTER),
                string((entry.name + ": arrays is NULL (generic call)"))}));

  b.SetInsertPoint(call);
  SmallVector<Value *> args;
  unsigned nextArray = 0;
  for (const abi::EntryArgument &arg : entry.arguments) {
    switch (arg.kind) {
    case abi::ArgumentKind::Context:
      args.push_back(context);
      break;
    case abi::ArgumentKind::Array: {
      Value *slot = b.CreateConstInBoundsGEP1_64(ptr, arrays, nextArray++);
      args.push_back(b.CreateLoad(ptr, slot, arg.name));
      break;
    }
    case abi::ArgumentKind::Workspace:
      args.push_back(workspace);
      break;
    case abi::ArgumentKind::WorkspaceBytes:
      args.push_back(bytes);
      break;
    case abi::ArgumentKind::Size:
      args.push_back(arg.name == "batch" ? sizes[0]
                     : arg.name == "seq" ? sizes[1]
                                         : sizes[2]);
      break;
    case abi::ArgumentKind::Seed:
    case abi::ArgumentKind::CacheBytes:
      error = "no generic form for " + entry.name;
      return nullptr;
    }
  }
  b.CreateRet(b.CreateCall(target, args));
  return fn;
}

/// `i64 NAME_workspace_size.generic(batch, seq, enc_seq)`.
Function *DescriptorBuilder::workspaceSizeThunk(std::string &error) {
  Function *target = typed(entries.workspaceSize.name, error);
  if (!target)
    return nullptr;
  auto *int64 = Type::getInt64Ty(ctx);
  auto *type = FunctionType::get(int64, {int64, int64, int64}, false);
  Function *fn =
      Function::Create(type, GlobalValue::InternalLinkage,
                       entries.workspaceSize.name + ".generic", module);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", fn));
  SmallVector<Value *> args{fn->getArg(0), fn->getArg(1)};
  if (entries.hasEncoder)
    args.push_back(fn->getArg(2));
  b.CreateRet(b.CreateCall(target, args));
  return fn;
}

/// tfc_entry_info of `entry`: all NULL / 0 when the model has none.
Constant *
DescriptorBuilder::entryInfo(const std::optional<abi::EntryPoint> &entry,
                             std::string &error) {
  if (!entry)
    return ConstantStruct::get(types.entryInfo,
                               {null(), null(), i32(0), null()});
  Function *thunk = genericThunk(*entry, error);
  if (!thunk)
    return nullptr;
  std::vector<Constant *> rows;
  for (const abi::EntryArgument *arg : entry->arrays()) {
    bool opaque = arg->name == "kv_cache";
    int32_t dtype = opaque                           ? TFC_DTYPE_OPAQUE
                    : arg->elementType.isInteger(32) ? TFC_DTYPE_I32
                                                     : TFC_DTYPE_F32;
    int32_t access = arg->name == "d_params" ? TFC_ACCESS_ACCUMULATE
                     : arg->written          ? TFC_ACCESS_WRITE
                                             : TFC_ACCESS_READ;
    // The flat parameter buffers are the layout's size (their memref type
    // leaves it open).
    SmallVector<int64_t, 4> shape(arg->shape);
    if (arg->name == "params" || arg->name == "d_params")
      shape = {paramCount};
    std::vector<Constant *> dims;
    for (int i = 0; i < TFC_MAX_ARRAY_RANK; ++i)
      dims.push_back(i64(i < int(shape.size()) ? shape[i] : 0));
    rows.push_back(ConstantStruct::get(
        types.arrayInfo,
        {string(arg->name), i32(dtype), i32(access), i32(int64_t(shape.size())),
         ConstantArray::get(
             ArrayType::get(Type::getInt64Ty(ctx), TFC_MAX_ARRAY_RANK),
             dims)}));
  }
  auto *arrayType = ArrayType::get(types.arrayInfo, rows.size());
  auto *arrays = new GlobalVariable(
      module, arrayType, true, GlobalValue::PrivateLinkage,
      ConstantArray::get(arrayType, rows), entry->name + ".arrays");
  return ConstantStruct::get(
      types.entryInfo,
      {string(entry->name), thunk, i32(int64_t(rows.size())), arrays});
}

/// `ptr NAME()`, returning the descriptor.
Function *DescriptorBuilder::accessor(StringRef name,
                                      GlobalVariable *descriptor) {
  auto *type = FunctionType::get(PointerType::get(ctx, 0), false);
  Function *fn =
      Function::Create(type, GlobalValue::ExternalLinkage, name, module);
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", fn));
  b.CreateRet(descriptor);
  return fn;
}

bool DescriptorBuilder::build(const ParamLayout &layout, bool shared,
                              std::string &error) {
  paramCount = layout.total;
  if (module.getFunction(spec.name + "_model")) {
    error = spec.name + "_model is already defined";
    return false;
  }
  Function *init = typed(entries.init.name, error);
  Function *workspaceSize = init ? workspaceSizeThunk(error) : nullptr;
  if (!workspaceSize)
    return false;
  Constant *forward = entryInfo(entries.forward, error);
  Constant *backward = forward ? entryInfo(entries.backward, error) : nullptr;
  Constant *prefill = backward ? entryInfo(entries.prefill, error) : nullptr;
  Constant *decode = prefill ? entryInfo(entries.decode, error) : nullptr;
  if (!decode)
    return false;
  Constant *kvSize = null(), *kvInit = null();
  if (entries.kvCacheSize) {
    kvSize = typed(entries.kvCacheSize->name, error);
    kvInit = kvSize ? typed(entries.kvCacheInit->name, error) : nullptr;
    if (!kvInit)
      return false;
  }
  std::vector<ParamTensor> tensors = layout.flatten();
  bool loss = spec.head && spec.head->loss == LossKind::CrossEntropy;
  std::vector<Constant *> fields{
      i32(TFC_MODEL_VERSION),
      i32(abi::kRuntimeAbiVersion),
      string(spec.name),
      string(TFC_VERSION),
      i64(int64_t(specHash(spec))),
      i32(entries.cuda ? TFC_DEVICE_CUDA : TFC_DEVICE_CPU),
      i64(spec.model.dModel),
      i64(spec.model.nHeads),
      i64(spec.attention.nKvHeads),
      i64(spec.attention.headDim),
      i64(spec.model.dFF),
      i64(spec.model.depth),
      i64(spec.model.maxSeq),
      i64(spec.model.maxBatch),
      i64(spec.embedding ? spec.embedding->vocab : 0),
      i32(spec.embedding.has_value()),
      i32(spec.head.has_value()),
      i32(loss),
      i32(spec.attention.cross),
      i32(spec.attention.keyPadding),
      i64(layout.total),
      i64(int64_t(tensors.size())),
      tensorTable(tensors),
      init,
      workspaceSize,
      forward,
      backward,
      kvSize,
      kvInit,
      prefill,
      decode};
  auto *descriptor = new GlobalVariable(
      module, types.model, /*isConstant=*/true, GlobalValue::InternalLinkage,
      ConstantStruct::get(types.model, fields), spec.name + ".model");
  descriptor->setAlignment(Align(8));
  accessor(spec.name + "_model", descriptor);
  if (shared)
    accessor("tfc_shared_model", descriptor);
  return true;
}

} // namespace

bool tfc::emitModelDescriptor(Module &module, const Spec &spec,
                              const ParamLayout &layout,
                              const abi::EntrySignature &entries, bool shared,
                              std::string &error) {
  return DescriptorBuilder(module, spec, entries).build(layout, shared, error);
}
