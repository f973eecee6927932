//===- KernelBuilder.cpp - Loops and buffers that kernels emit ------------===//

#include "kernels/KernelBuilder.h"
#include "kernels/TargetKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::tfc;

/// Buffers start on cache-line boundaries: vector loads stay aligned and no
/// two buffers share a line between threads.
static constexpr int64_t kBufferAlignment = 64;

OpBuilder KernelBuilder::allocBuilder() {
  assert(allocPoint && "allocation point not set");
  OpBuilder builder(allocPoint);
  return builder;
}

Value KernelBuilder::currentOffset() {
  if (!offset)
    offset = buffersBase ? buffersBase : allocIndex(0);
  return offset;
}

void KernelBuilder::setSavedArena(Value savedArenaBytes) {
  if (offset || savedOffset)
    llvm::report_fatal_error("tfc-lower-to-loops: the saved arena must come "
                             "before any buffer");
  buffersBase = savedArenaBytes;
  savedOffset = allocIndex(0);
}

Value KernelBuilder::savedEnd() {
  assert(savedOffset && "no saved arena (setSavedArena)");
  return savedOffset;
}

void KernelBuilder::restartBuffers() {
  assert(buffersBase && "buffers restart after a saved arena");
  offset = buffersBase;
}

Value KernelBuilder::allocIndex(int64_t v) {
  OpBuilder ab = allocBuilder();
  return arith::ConstantIndexOp::create(ab, loc, v);
}

void KernelBuilder::atAllocationPoint(function_ref<void()> fn) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(allocPoint);
  fn();
}

void KernelBuilder::atAllocationPointIfDefined(ArrayRef<Value> operands,
                                               function_ref<void()> fn) {
  auto definedThere = [&](Value v) {
    Block *block = isa<BlockArgument>(v) ? cast<BlockArgument>(v).getOwner()
                                         : v.getDefiningOp()->getBlock();
    Operation *ancestor = block->findAncestorOpInBlock(*allocPoint);
    return ancestor && (isa<BlockArgument>(v) ||
                        v.getDefiningOp()->isBeforeInBlock(ancestor));
  };
  if (llvm::all_of(operands, definedThere))
    atAllocationPoint(fn);
  else
    fn();
}

SmallVector<Value>
KernelBuilder::shapeOf(ShapedType type,
                       function_ref<Value(unsigned)> dynamicDim) {
  SmallVector<Value> dims;
  for (unsigned i = 0; i < type.getRank(); ++i)
    dims.push_back(type.isDynamicDim(i) ? dynamicDim(i)
                                        : allocIndex(type.getDimSize(i)));
  return dims;
}

Value KernelBuilder::reserve(Value bytes, Reservation what) {
  OpBuilder ab = allocBuilder();
  // Saved values go to their arena when there is one.
  bool saved = savedOffset && what.kind == Reservation::Kind::Saved;
  Value &cursor = saved ? savedOffset : offset;
  Value start = saved ? savedOffset : currentOffset();
  // Round the size up so the next buffer starts aligned too.
  Value aligned = alignedBytes(bytes);
  cursor = arith::AddIOp::create(ab, loc, start, aligned);
  if (ledger) {
    what.bytes = aligned;
    ledger->record(std::move(what));
  }
  return start;
}

Value KernelBuilder::alignedBytes(Value bytes) {
  OpBuilder ab = allocBuilder();
  Value mask = arith::ConstantIndexOp::create(ab, loc, kBufferAlignment - 1);
  return arith::AndIOp::create(
      ab, loc, arith::AddIOp::create(ab, loc, bytes, mask),
      arith::ConstantIndexOp::create(ab, loc, ~(kBufferAlignment - 1)));
}

Value KernelBuilder::viewAt(Value byteOffset, Type elementType, Value numel) {
  auto type = MemRefType::get({ShapedType::kDynamic}, elementType);
  return memref::ViewOp::create(b, loc, type, workspace, byteOffset,
                                ValueRange{numel});
}

std::pair<Value, Value> KernelBuilder::sizeOf(Type elementType,
                                              ArrayRef<Value> dims) {
  OpBuilder ab = allocBuilder();
  Value numel = arith::ConstantIndexOp::create(ab, loc, 1);
  for (Value d : dims)
    numel = arith::MulIOp::create(ab, loc, numel, d);
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  Value bytes = arith::MulIOp::create(
      ab, loc, numel, arith::ConstantIndexOp::create(ab, loc, elementBytes));
  return {numel, bytes};
}

Buffer KernelBuilder::allocate(Type elementType, ArrayRef<Value> dims,
                               StringRef label) {
  Reservation what;
  what.kind = currentOp ? Reservation::Kind::Scratch : Reservation::Kind::Other;
  what.op = currentOp;
  what.label = label.str();
  Buffer buffer = carve(elementType, dims, std::move(what));
  if (currentOp)
    scratchOf[currentOp].push_back(buffer);
  return buffer;
}

Buffer KernelBuilder::carve(Type elementType, ArrayRef<Value> dims,
                            Reservation what) {
  assert(currentPhase == Phase::Plan && "buffers are reserved by planning");
  OpBuilder ab = allocBuilder();
  auto [numel, bytes] = sizeOf(elementType, dims);
  what.dims.assign(dims.begin(), dims.end());
  what.elementType = elementType;
  Value start = reserve(bytes, std::move(what));
  Buffer buffer;
  buffer.dims.assign(dims.begin(), dims.end());
  auto type = MemRefType::get({ShapedType::kDynamic}, elementType);
  buffer.flat = memref::ViewOp::create(ab, loc, type, workspace, start,
                                       ValueRange{numel});
  return buffer;
}

void KernelBuilder::beginOp(Operation *op) {
  currentOp = op;
  scratchTaken = 0;
  kernelName = op->getName().stripDialect().str();
}

LogicalResult KernelBuilder::endOp() {
  Operation *op = currentOp;
  currentOp = nullptr;
  if (currentPhase != Phase::Emit)
    return success();
  auto it = scratchOf.find(op);
  size_t planned = it == scratchOf.end() ? 0 : it->second.size();
  if (scratchTaken != planned)
    return op->emitOpError("internal error: its lowering planned ")
           << planned << " scratch buffers but emitted " << scratchTaken;
  return success();
}

Buffer KernelBuilder::takeScratch() {
  assert(currentPhase == Phase::Emit && currentOp && "scratch of an op");
  SmallVector<Buffer, 2> &planned = scratchOf[currentOp];
  if (scratchTaken >= planned.size())
    llvm::report_fatal_error(llvm::Twine("tfc-lower-to-loops: '") +
                             currentOp->getName().getStringRef() +
                             "' emits more scratch buffers than it planned");
  return planned[scratchTaken++];
}

Value KernelBuilder::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

std::optional<int64_t> KernelBuilder::constantIndex(Value v) {
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

Value KernelBuilder::add(Value a, Value c) {
  if (constantIndex(a) == 0)
    return c;
  if (constantIndex(c) == 0)
    return a;
  return arith::AddIOp::create(b, loc, a, c);
}

Value KernelBuilder::sub(Value a, Value c) {
  if (constantIndex(c) == 0)
    return a;
  return arith::SubIOp::create(b, loc, a, c);
}

Value KernelBuilder::mul(Value a, Value c) {
  if (constantIndex(a) == 1)
    return c;
  if (constantIndex(c) == 1)
    return a;
  return arith::MulIOp::create(b, loc, a, c);
}

Value KernelBuilder::divUp(Value a, int64_t d) {
  if (auto c = constantIndex(a))
    return index((*c + d - 1) / d);
  return arith::CeilDivUIOp::create(b, loc, a, index(d));
}

Value KernelBuilder::minIdx(Value a, Value c) {
  return arith::MinSIOp::create(b, loc, a, c);
}

Value KernelBuilder::addf(Value a, Value c) {
  return arith::AddFOp::create(b, loc, a, c);
}

Value KernelBuilder::subf(Value a, Value c) {
  return arith::SubFOp::create(b, loc, a, c);
}

Value KernelBuilder::mulf(Value a, Value c) {
  return arith::MulFOp::create(b, loc, a, c);
}

Value KernelBuilder::indexToF32(Value index) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
}

Value KernelBuilder::maxIdx(Value a, Value c) {
  return arith::MaxSIOp::create(b, loc, a, c);
}

Value KernelBuilder::subOrZero(Value a, Value c) {
  return maxIdx(sub(a, c), index(0));
}

Value KernelBuilder::product(ArrayRef<Value> values) {
  Value result = index(1);
  for (Value v : values)
    result = mul(result, v);
  return result;
}

Value KernelBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}

Value KernelBuilder::roundToBf16(Value x) {
  Type i32 = b.getI32Type();
  auto vec = dyn_cast<VectorType>(x.getType());
  Type bitsType = vec ? Type(vec.clone(i32)) : i32;
  auto splat = [&](uint32_t v) -> Value {
    auto attr = b.getI32IntegerAttr(int32_t(v));
    if (!vec)
      return arith::ConstantOp::create(b, loc, attr);
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(cast<ShapedType>(bitsType), attr));
  };
  // bits + 0x7fff + (bit 16 of bits): rounds the low half to nearest, ties
  // to the even upper half; then the low half is cleared.
  Value bits = arith::BitcastOp::create(b, loc, bitsType, x);
  Value odd = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, splat(16)), splat(1));
  Value rounded = arith::AddIOp::create(
      b, loc, bits, arith::AddIOp::create(b, loc, odd, splat(0x7fff)));
  rounded = arith::AndIOp::create(b, loc, rounded, splat(0xffff0000u));
  Value result = arith::BitcastOp::create(b, loc, x.getType(), rounded);
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  return arith::SelectOp::create(b, loc, isNaN, x, result);
}

void KernelBuilder::parallelFor(Value n, function_ref<void(Value)> body) {
  auto loop = scf::ParallelOp::create(
      b, loc, ValueRange{index(0)}, ValueRange{n}, ValueRange{index(1)},
      [&](OpBuilder &nested, Location, ValueRange ivs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        body(ivs[0]);
      });
  if (!kernelName.empty())
    loop->setAttr("tfc.kernel", b.getStringAttr(kernelName));
}

void KernelBuilder::forLoop(Value lo, Value hi,
                            function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, index(1), ValueRange{},
                     [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

SmallVector<Value> KernelBuilder::forLoop(
    Value lo, Value hi, ValueRange init,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(
      b, loc, lo, hi, index(1), init,
      [&](OpBuilder &nested, Location, Value iv, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        SmallVector<Value> next = body(iv, args);
        scf::YieldOp::create(b, loc, next);
      });
  return SmallVector<Value>(loop.getResults());
}

Value KernelBuilder::load(Value flat, Value idx) {
  return memref::LoadOp::create(b, loc, flat, ValueRange{idx});
}

void KernelBuilder::store(Value value, Value flat, Value idx) {
  memref::StoreOp::create(b, loc, value, flat, ValueRange{idx});
}

void KernelBuilder::gpuLaunch(
    ArrayRef<Value> grid, int64_t threads, ArrayRef<MemRefType> shared,
    function_ref<void(const GpuIds &, ValueRange)> body) {
  assert(kernels().launchesGpuKernels && !grid.empty() && grid.size() <= 3 &&
         "bad GPU launch");
  // One grid dimension: y and z stop at 65535 blocks, x at 2^31 - 1, and a
  // matmul's row tiles or attention's batch x heads can pass 65535.
  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, product(grid), one, one, index(threads), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/
      SmallVector<Type>(shared.begin(), shared.end()));
  if (!kernelName.empty())
    launch->setAttr("tfc.kernel", b.getStringAttr(kernelName));
  OpBuilder::InsertionGuard guard(b);
  Block &entry = launch.getBody().front();
  b.setInsertionPointToStart(&entry);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&entry);
  // The logical block (x fastest, the order blocks are scheduled in).
  GpuIds ids{{launch.getBlockIds().x, index(0), index(0)},
             launch.getThreadIds().x};
  Value rest = ids.block[0];
  for (size_t d = 0; d + 1 < grid.size(); ++d) {
    ids.block[d] = arith::RemUIOp::create(b, loc, rest, grid[d]);
    rest = arith::DivUIOp::create(b, loc, rest, grid[d]);
  }
  ids.block[grid.size() - 1] = rest;
  body(ids, launch.getWorkgroupAttributions());
}

MemRefType KernelBuilder::sharedArray(Type elementType, int64_t n) {
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  return MemRefType::get({n}, elementType, MemRefLayoutAttrInterface(),
                         workgroup);
}
