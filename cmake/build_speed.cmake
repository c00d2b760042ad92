# Build time on the 2-core CI machine (docs/hardening.md, "CI time"). nlohmann/json reaches nearly
# every translation unit (model/gpu_spec.h) and GoogleTest every test: both are precompiled once
# per group instead of parsed in every file. A precompiled header is reused only by targets compiled
# with the same flags, hence one for the static libraries (-fPIC) and one for the test executables
# (-fPIE). Not the app: its files spend their time generating CLI11's code, not parsing it (a CLI11
# PCH measured no gain). Not the fuzz targets (their own -fsanitize=fuzzer) nor CUDA sources.
option(FLASHTUNE_PCH "Precompiled headers for the host code (build time only)" ON)
if(NOT FLASHTUNE_PCH)
  return()
endif()

set(FLASHTUNE_PCH_STD <algorithm> <cmath> <cstdint> <cstdio> <filesystem> <fstream> <functional> <map>
    <memory> <optional> <set> <sstream> <stdexcept> <string> <utility> <vector>)

# Gives the first existing target of `targets` a precompiled header of `headers` (C++ sources only)
# and lets the others reuse it.
function(flashtune_share_pch)
  cmake_parse_arguments(P "" "" "TARGETS;HEADERS" ${ARGN})
  set(owner "")
  foreach(t ${P_TARGETS})
    if(NOT TARGET ${t})
      continue()
    endif()
    if(owner STREQUAL "")
      set(owner ${t})
      list(TRANSFORM P_HEADERS PREPEND "$<$<COMPILE_LANGUAGE:CXX>:" OUTPUT_VARIABLE headers)
      list(TRANSFORM headers APPEND ">")
      target_precompile_headers(${t} PRIVATE ${headers})
    else()
      target_precompile_headers(${t} REUSE_FROM ${owner})
    endif()
  endforeach()
endfunction()

flashtune_share_pch(
  TARGETS flashtune_model flashtune_profile flashtune_plots flashtune_tuner_host flashtune_tune_core
          flashtune_fit flashtune_dispatch flashtune_tune
  HEADERS <nlohmann/json.hpp> ${FLASHTUNE_PCH_STD})

if(FLASHTUNE_BUILD_TESTS)
  get_property(test_targets DIRECTORY ${PROJECT_SOURCE_DIR}/tests PROPERTY BUILDSYSTEM_TARGETS)
  # tuner_npy_test first: a host test, so both the main and the host-only build have the owner.
  list(REMOVE_ITEM test_targets tuner_npy_test)
  # The tests' own files at -O1 (the code under test keeps the build's level): a third less compile
  # time than Release's -O3, the same run time.
  foreach(t tuner_npy_test ${test_targets})
    target_compile_options(${t} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
  endforeach()
  flashtune_share_pch(TARGETS tuner_npy_test ${test_targets}
    HEADERS <gtest/gtest.h> <nlohmann/json.hpp> ${FLASHTUNE_PCH_STD})
endif()
