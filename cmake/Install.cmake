# cmake --install build --prefix P: bin/{tfc,tfc-opt,tfc-train}, the
# runtime libraries in lib/ (libtfc_runtime.a and .so, libtfc_safetensors.a),
# include/tfc/*.h, the CMake package lib/cmake/tfc/ and lib/pkgconfig/tfc.pc.
include(CMakePackageConfigHelpers)

# Installed programs find the MLIR/LLVM they were linked with (outside the
# prefix) and the prefix's own libtfc_runtime.so.
set_target_properties(tfc tfc-opt tfc-train PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}"
  INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS tfc EXPORT tfcTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tfc-opt tfc-train
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tfc_runtime tfc_runtime_shared tfc_safetensors
  EXPORT tfcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tfc
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(tfc_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tfc)
install(EXPORT tfcTargets NAMESPACE tfc:: DESTINATION ${tfc_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tfcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/tfcConfig.cmake
  INSTALL_DESTINATION ${tfc_cmake_dir})
# 0.x: a minor version changes the ABI (TFC_RUNTIME_ABI_VERSION).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/tfcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tfcConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/tfcConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/TfcAddModel.cmake
  DESTINATION ${tfc_cmake_dir})

configure_file(${CMAKE_CURRENT_LIST_DIR}/tfc.pc.in
  ${PROJECT_BINARY_DIR}/cmake/tfc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tfc.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
