//===- CudaToolkitTest.cpp - Where tfc finds ptxas and libdevice ----------===//
//
// findCudaToolkit's order (CudaToolkit.h), on toolkits made up in a
// temporary directory: --ptxas, $PATH, the default root for ptxas;
// --cuda-path, $CUDA_HOME, ptxas's toolkit, the default root for libdevice.
//
//===----------------------------------------------------------------------===//

#include "target/CudaToolkit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace tfc;
using namespace llvm;

namespace {

class CudaToolkitTest : public ::testing::Test {
protected:
  void SetUp() override {
    SmallString<256> dir;
    ASSERT_FALSE(sys::fs::createUniqueDirectory("tfc-cuda-toolkit", dir));
    root = std::string(dir);
  }
  void TearDown() override { sys::fs::remove_directories(root); }

  /// ROOT/NAME, created (as a directory).
  std::string dir(StringRef name) {
    SmallString<256> path(root);
    sys::path::append(path, name);
    EXPECT_FALSE(sys::fs::create_directories(path));
    return std::string(path);
  }
  /// TOOLKIT/bin/ptxas, an executable.
  std::string addPtxas(StringRef toolkit) {
    SmallString<256> path(toolkit);
    sys::path::append(path, "bin");
    EXPECT_FALSE(sys::fs::create_directories(path));
    sys::path::append(path, "ptxas");
    write(path, "#!/bin/sh\n");
    EXPECT_FALSE(sys::fs::setPermissions(
        path, sys::fs::all_exe | sys::fs::owner_read | sys::fs::owner_write));
    return std::string(path);
  }
  void addLibdevice(StringRef toolkit) {
    SmallString<256> path(toolkit);
    sys::path::append(path, "nvvm", "libdevice");
    EXPECT_FALSE(sys::fs::create_directories(path));
    sys::path::append(path, "libdevice.10.bc");
    write(path, "BC");
  }
  void write(StringRef path, StringRef text) {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec) << ec.message();
    os << text;
  }
  /// A search of this machine's defaults replaced by empty places.
  CudaToolkitSearch emptySearch() {
    CudaToolkitSearch search;
    search.programPaths = {dir("empty-path")};
    search.defaultRoot = root + "/no-default";
    return search;
  }
  CudaToolkit find(const CudaToolkitSearch &search) {
    Expected<CudaToolkit> toolkit = findCudaToolkit(search);
    EXPECT_TRUE(bool(toolkit)) << toString(toolkit.takeError());
    return toolkit ? *toolkit : CudaToolkit();
  }

  std::string root;
};

TEST_F(CudaToolkitTest, NothingFound) {
  CudaToolkit toolkit = find(emptySearch());
  EXPECT_EQ(toolkit.ptxas, "");
  EXPECT_EQ(toolkit.root, "");
}

TEST_F(CudaToolkitTest, PtxasOnThePathBeforeTheDefaultRoot) {
  CudaToolkitSearch search = emptySearch();
  std::string onPath = dir("path-toolkit");
  std::string ptxas = addPtxas(onPath);
  search.programPaths = {onPath + "/bin"};
  search.defaultRoot = dir("default");
  addPtxas(search.defaultRoot);
  EXPECT_EQ(find(search).ptxas, ptxas);

  search.programPaths = {dir("empty-path")};
  EXPECT_EQ(find(search).ptxas, search.defaultRoot + "/bin/ptxas");
}

TEST_F(CudaToolkitTest, ExplicitPtxasMustBeExecutable) {
  CudaToolkitSearch search = emptySearch();
  search.ptxas = root + "/no-such-ptxas";
  Expected<CudaToolkit> toolkit = findCudaToolkit(search);
  ASSERT_FALSE(bool(toolkit));
  EXPECT_EQ(toString(toolkit.takeError()),
            "--ptxas '" + search.ptxas + "' is not an executable file");

  search.ptxas = addPtxas(dir("explicit"));
  EXPECT_EQ(find(search).ptxas, search.ptxas);
}

TEST_F(CudaToolkitTest, NoneEmbedsThePtxOnlyButStillFindsTheToolkit) {
  CudaToolkitSearch search = emptySearch();
  std::string onPath = dir("path-toolkit");
  addPtxas(onPath);
  addLibdevice(onPath);
  search.programPaths = {onPath + "/bin"};
  search.ptxas = "none";
  CudaToolkit toolkit = find(search);
  EXPECT_EQ(toolkit.ptxas, "");
  EXPECT_EQ(toolkit.root, onPath); // The PTX does not depend on --ptxas.
}

TEST_F(CudaToolkitTest, LibdeviceSearchOrder) {
  CudaToolkitSearch search = emptySearch();
  std::string home = dir("home"), ofPtxas = dir("of-ptxas");
  search.defaultRoot = dir("default");
  search.ptxas = addPtxas(ofPtxas);
  search.cudaHome = home;

  // Each place counts only with libdevice in it.
  EXPECT_EQ(find(search).root, "");
  addLibdevice(search.defaultRoot);
  EXPECT_EQ(find(search).root, search.defaultRoot);
  addLibdevice(ofPtxas);
  EXPECT_EQ(find(search).root, ofPtxas);
  addLibdevice(home);
  EXPECT_EQ(find(search).root, home);

  // --cuda-path is taken as given, libdevice or not.
  search.toolkitPath = root + "/given";
  EXPECT_EQ(find(search).root, root + "/given");
}

} // namespace
