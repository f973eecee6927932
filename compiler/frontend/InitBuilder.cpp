//===- InitBuilder.cpp - NAME_init and NAME_param_count ---------*- C++ -*-===//

#include "frontend/InitBuilder.h"
#include "abi/RuntimeAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ::tfc;
namespace abi = mlir::tfc::abi;

void ::tfc::buildInitFunctions(ModuleOp module, const std::string &name,
                               const ParamLayout &layout) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<LLVM::LLVMDialect, arith::ArithDialect, scf::SCFDialect,
                   func::FuncDialect>();
  Location loc = module.getLoc();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto i64 = b.getI64Type(), i32 = b.getI32Type();
  auto ptr = LLVM::LLVMPointerType::get(ctx);

  auto count = func::FuncOp::create(b, loc, name + "_param_count",
                                    b.getFunctionType({}, {i64}));
  {
    OpBuilder fb = OpBuilder::atBlockBegin(count.addEntryBlock());
    func::ReturnOp::create(
        fb, loc,
        ValueRange{arith::ConstantIntOp::create(fb, loc, layout.total, 64)});
  }

  func::FuncOp fill =
      abi::declareRuntimeFunc(module, abi::runtime::tfc_rt_fill);
  auto init = func::FuncOp::create(b, loc, name + "_init",
                                   b.getFunctionType({ptr, i64}, {i32}));
  Block *entry = init.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockBegin(entry);
  Value params = entry->getArgument(0), seed = entry->getArgument(1);
  auto c64 = [&](int64_t v) -> Value {
    return arith::ConstantIntOp::create(fb, loc, v, 64);
  };
  Value isNull = LLVM::ICmpOp::create(fb, loc, LLVM::ICmpPredicate::eq, params,
                                      LLVM::ZeroOp::create(fb, loc, ptr));
  auto ifNull = scf::IfOp::create(fb, loc, TypeRange{i32}, isNull, true);
  fb.setInsertionPointToStart(&ifNull.getThenRegion().front());
  {
    // tfc_rt_error(TFC_ERR_NULL_POINTER, "NAME_init: params is NULL").
    abi::declareRuntimeFunction(module, abi::runtime::tfc_rt_error);
    std::string message = name + "_init: params is NULL";
    message.push_back('\0');
    Value format = LLVM::createGlobalString(loc, fb, name + "_init.str0",
                                            message, LLVM::Linkage::Internal);
    Value status = abi::statusConstant(fb, loc, TFC_ERR_NULL_POINTER);
    scf::YieldOp::create(fb, loc,
                         abi::callRuntimeFunction(fb, loc,
                                                  abi::runtime::tfc_rt_error,
                                                  ValueRange{status, format})
                             .getResult());
  }
  fb.setInsertionPointToStart(&ifNull.getElseRegion().front());

  auto fillTensor = [&](const ParamTensor &t, Value offset, Value stream) {
    Value at = LLVM::GEPOp::create(fb, loc, ptr, fb.getF32Type(), params,
                                   ValueRange{offset});
    Value kind = arith::ConstantIntOp::create(fb, loc, int32_t(t.init), 32);
    Value param =
        arith::ConstantOp::create(fb, loc, fb.getF32FloatAttr(t.initParam));
    func::CallOp::create(
        fb, loc, fill,
        ValueRange{at, c64(t.numel()), kind, param, seed, stream});
  };
  // A hyper-connection tensor's marked entries (ParamLayout.h InitMarks),
  // at `home` (an i64 value): stores after the fill.
  auto setMarks = [&](const ParamTensor &t, Value offset, Value home) {
    for (const InitMarks &m : t.marks) {
      Value value = LLVM::ConstantOp::create(fb, loc, fb.getF32Type(),
                                             fb.getF32FloatAttr(m.value));
      Value first = arith::AddIOp::create(
          fb, loc, arith::AddIOp::create(fb, loc, offset, c64(m.first)),
          arith::MulIOp::create(fb, loc, home, c64(m.homeStride)));
      for (int64_t k = 0; k < m.count; ++k) {
        Value index = arith::AddIOp::create(fb, loc, first, c64(k * m.step));
        Value at = LLVM::GEPOp::create(fb, loc, ptr, fb.getF32Type(), params,
                                       ValueRange{index});
        LLVM::StoreOp::create(fb, loc, value, at);
      }
    }
  };
  int64_t stream = 0;
  for (const ParamTensor &t : layout.leading)
    fillTensor(t, c64(t.offset), c64(stream++));
  int64_t perBlock = layout.block.size();
  int64_t firstBlockStream = stream;
  Value lo = arith::ConstantIndexOp::create(fb, loc, 0);
  Value hi = arith::ConstantIndexOp::create(fb, loc, layout.depth);
  Value one = arith::ConstantIndexOp::create(fb, loc, 1);
  scf::ForOp::create(
      fb, loc, lo, hi, one, ValueRange{},
      [&](OpBuilder &nb, Location, Value iv, ValueRange) {
        OpBuilder::InsertionGuard guard(fb);
        fb.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value layer = arith::IndexCastOp::create(fb, loc, i64, iv);
        Value base = arith::AddIOp::create(
            fb, loc, c64(layout.blockBase),
            arith::MulIOp::create(fb, loc, layer, c64(layout.blockStride)));
        Value firstStream = arith::AddIOp::create(
            fb, loc, c64(firstBlockStream),
            arith::MulIOp::create(fb, loc, layer, c64(perBlock)));
        for (auto [j, t] : llvm::enumerate(layout.block)) {
          Value offset = arith::AddIOp::create(fb, loc, base, c64(t.offset));
          fillTensor(t, offset,
                     arith::AddIOp::create(fb, loc, firstStream, c64(j)));
          if (t.marks.empty())
            continue;
          // (S layer + j) mod n.
          Value home = arith::RemUIOp::create(
              fb, loc,
              arith::AddIOp::create(
                  fb, loc,
                  arith::MulIOp::create(fb, loc, layer, c64(layout.sublayers)),
                  c64(t.sublayer)),
              c64(layout.streams));
          setMarks(t, offset, home);
        }
        scf::YieldOp::create(fb, loc);
      });
  stream += perBlock * layout.depth;
  for (const ParamTensor &t : layout.trailing)
    fillTensor(t, c64(t.offset), c64(stream++));
  scf::YieldOp::create(fb, loc, abi::statusConstant(fb, loc, TFC_OK));
  fb.setInsertionPointAfter(ifNull);
  func::ReturnOp::create(fb, loc, ifNull.getResult(0));
}
