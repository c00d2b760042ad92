# `cmake --install <build> [--prefix P]`: the flashtune command-line tool, the libraries and their
# headers, the shipped data, and a CMake package:
#   P/bin/flashtune
#   P/include/flashtune/{kernels,model,profile,dispatch}/*.h
#   P/lib/libflashtune_*.a, P/lib/cmake/flashtune/ (flashtune-config.cmake, version, targets)
#   P/share/flashtune/{configs/gpus,configs/workloads,configs/kernels,profiles,profiles/unseen,
#                      profiles/counters,plots/templates}
# share/flashtune mirrors the source tree's layout, so one data-folder rule (model/data_dir.h)
# serves both: the installed binary finds <its folder>/../share/flashtune. bin/ and share/ are
# therefore fixed rather than taken from GNUInstallDirs.
#
# find_package(flashtune CONFIG REQUIRED [COMPONENTS attention]) gives
#   flashtune::model      host-only (no CUDA): GPU specs, prediction, ranking, and the profile
#                         layer that reads profiles, the GPU's shipped one included
#   flashtune::profile    the profile layer alone (model_core below it)
#   flashtune::attention  attention_forward and the dispatcher over the compiled kernels (CUDA::cudart)
# and flashtune_DATA_DIR (the installed share/flashtune, for model::set_data_dir).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FLASHTUNE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/flashtune)
set(FLASHTUNE_INSTALL_DATADIR share/flashtune)

# Host-only targets. flashtune::model is the model with the profile layer that reads the shipped
# profiles (predict, rank, default_model_profile); flashtune_warnings is exported (empty outside
# the build) because static libraries carry their private link dependencies.
add_library(flashtune_host_api INTERFACE)
target_link_libraries(flashtune_host_api INTERFACE flashtune_model flashtune_profile)
add_library(flashtune::model ALIAS flashtune_host_api)
set_target_properties(flashtune_host_api PROPERTIES EXPORT_NAME model)
set_target_properties(flashtune_model PROPERTIES EXPORT_NAME model_core)
set_target_properties(flashtune_profile PROPERTIES EXPORT_NAME profile)
set_target_properties(flashtune_traits PROPERTIES EXPORT_NAME traits)
set_target_properties(flashtune_warnings PROPERTIES EXPORT_NAME warnings)
install(TARGETS flashtune_host_api flashtune_model flashtune_profile flashtune_traits flashtune_warnings
  EXPORT flashtune-model-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT flashtune-model-targets NAMESPACE flashtune:: DESTINATION ${FLASHTUNE_INSTALL_CMAKEDIR})

# Headers keep their source paths ("model/predict.h") under include/flashtune, which the targets
# put on the include path (as well as include/, for <flashtune/model/predict.h>).
foreach(dir kernels model profile dispatch)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashtune/${dir}
    FILES_MATCHING PATTERN "*.h" PATTERN "instances" EXCLUDE)
endforeach()

if(NOT FLASHTUNE_HOST_ONLY)
  # The attention call: the kernels and the dispatcher (over the model and the profile layer).
  set_target_properties(flashtune_kernels PROPERTIES EXPORT_NAME kernels)
  set_target_properties(flashtune_dispatch PROPERTIES EXPORT_NAME attention)
  install(TARGETS flashtune_kernels flashtune_dispatch
    EXPORT flashtune-attention-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT flashtune-attention-targets NAMESPACE flashtune:: DESTINATION ${FLASHTUNE_INSTALL_CMAKEDIR})
  add_library(flashtune::attention ALIAS flashtune_dispatch)

  # The command-line tool; the CUDA runtime and CUPTI found where they were linked from.
  set_target_properties(flashtune PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS flashtune RUNTIME DESTINATION bin)
endif()

# The shipped data: GPU specs, workload files, the compiled kernels' measured instruction table,
# measured profiles (no writer's locks or journals),
# plot templates.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/gpus ${PROJECT_SOURCE_DIR}/configs/workloads
  ${PROJECT_SOURCE_DIR}/configs/kernels
  DESTINATION ${FLASHTUNE_INSTALL_DATADIR}/configs FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/profiles DESTINATION ${FLASHTUNE_INSTALL_DATADIR}
  FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plots/templates DESTINATION ${FLASHTUNE_INSTALL_DATADIR}/plots)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/flashtune-config.cmake.in
  ${PROJECT_BINARY_DIR}/flashtune-config.cmake
  INSTALL_DESTINATION ${FLASHTUNE_INSTALL_CMAKEDIR}
  PATH_VARS FLASHTUNE_INSTALL_DATADIR)
# 0.x: a minor version may change the interface.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/flashtune-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/flashtune-config.cmake ${PROJECT_BINARY_DIR}/flashtune-config-version.cmake
  DESTINATION ${FLASHTUNE_INSTALL_CMAKEDIR})
