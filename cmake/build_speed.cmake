# Build time on the 2-core CI machine (docs/hardening.md, "CI time"). nlohmann/json reaches nearly
# every translation unit (model/gpu_spec.h) and GoogleTest every test: both are precompiled once
# per group instead of parsed in every file. A precompiled header is reused only by targets compiled
# with the same flags, hence one for the static libraries (-fPIC) and one for the test executables
# (-fPIE). Not the app: its files spend their time generating CLI11's code, not parsing it (a CLI11
# PCH measured no gain). Not the fuzz targets (their own -fsanitize=fuzzer) nor CUDA sources.
option(FLASHTUNE_PCH "Precompiled headers for the host code (build time only)" ON)
option(FLASHTUNE_UNITY "Unity build of the host libraries and the app (build time only)" ON)

# Unity build: the files of a group compiled as one translation unit, so that the inline and
# template code they all instantiate is generated once per group instead of once per file. CLI11
# (Debian's 2.1 is header-only, every App member inline) costs ~14 CPU s of -O3 code generation in
# every file that uses it: the app's 16 files cost ~250 CPU s apart and ~50 s as one unit.
# nlohmann/json's parser and serializer do the same in the libraries (profile/: about half).
# Files of a group share one scope: two helpers of the same name and signature in anonymous
# namespaces collide (a compile error naming both). Hence the libraries' groups are listed by
# hand, with such files apart (the `fail` helpers of profile/ and model/); a file in no group is
# compiled alone, as are files with their own compile definitions (CMake's rule). The app is one
# unit of all its files (its files share no helper names; a new one joins it).
if(FLASHTUNE_UNITY)
  # flashtune_unity_groups(<target> GROUP <file>... [GROUP <file>...]...): files relative to the
  # target's source folder.
  function(flashtune_unity_groups target)
    if(NOT TARGET ${target})
      return()
    endif()
    get_target_property(dir ${target} SOURCE_DIR)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
    set(n 0)
    foreach(arg ${ARGN})
      if(arg STREQUAL "GROUP")
        math(EXPR n "${n} + 1")
      else()
        set_source_files_properties(${dir}/${arg} TARGET_DIRECTORY ${target}
          PROPERTIES UNITY_GROUP ${target}_${n})
      endif()
    endforeach()
  endfunction()

  # The CLI11 users: the app, and the fuzz target of its number check (app/cli_numbers.cpp).
  foreach(t flashtune fuzz_cli_numbers)
    if(TARGET ${t})
      set_target_properties(${t} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH UNITY_BUILD_BATCH_SIZE 0)
    endif()
  endforeach()
  flashtune_unity_groups(flashtune_model
    GROUP gpu_spec.cpp bank_sim.cpp occupancy.cpp geometry_analysis.cpp counts.cpp memory_traffic.cpp
          baselines.cpp predict.cpp
    GROUP block_schedule.cpp config_catalog.cpp prediction_json.cpp counter_check.cpp
          compiled_instructions.cpp compiled_instruction_table.cpp rank.cpp json_file.cpp
    GROUP workload_limits.cpp summary_stats.cpp)
  flashtune_unity_groups(flashtune_plots
    GROUP plot_profile.cpp plot_points.cpp accuracy.cpp gnuplot_runner.cpp drawer.cpp plot_set.cpp
          plot_accuracy.cpp
    GROUP plot_time_vs_n.cpp plot_heatmaps.cpp plot_roofline.cpp plot_bank_conflicts.cpp plot_pipes.cpp
          report.cpp plot_session.cpp)
  # Not sm_clock_reader.cpp: its class holds a type of its anonymous namespace, which gcc accepts
  # in a main file only (-Wsubobject-linkage in a unit).
  flashtune_unity_groups(flashtune_tuner_host GROUP npy.cpp sample_stats.cpp config_select.cpp)
  flashtune_unity_groups(flashtune_tune_core GROUP tune_plan.cpp tune_runner.cpp progress.cpp fake_backend.cpp tune_shard.cpp)
  flashtune_unity_groups(flashtune_profile
    GROUP profile.cpp profile_check.cpp output_file.cpp
    GROUP profile_journal.cpp profile_store.cpp profile_lock.cpp profile_merge.cpp
    GROUP workload_set.cpp profile_compare.cpp export.cpp)
endif()

# The tests' own files at a low optimisation level (the code under test keeps the build's level;
# the tests' run time is in it). gcc: -Og, about 20% less compile time than -O1 (hardening_test
# 14.3 against 10.7 CPU s) and a third of Release's -O3. The sanitizer build (clang, ASan + UBSan):
# -O0, half the compile time of instrumented -O1 (tuner_profile_test: 17 against 33 CPU s), except
# the tests that run long under ASan and slow down at -O0 (their own loops, or json code the linker
# takes from their -O0 object): the block-schedule simulation, the traits' shared-memory site walks,
# the fit and the shipped-profile checks (54, 9, 15 and 11 s of ASan run time at -O1; fit_test and
# shipped_profile_test ran about 1.5x longer at -O0). No fuzzer coverage in the tests either: only
# the fuzz targets and the libraries they link need it (~15% of an instrumented file's compile).
set(FLASHTUNE_TESTS_LOW "")   # the tests at the low level
set(FLASHTUNE_TESTS_O1 "")    # sanitizer build: the long-running ones at -O1
set(FLASHTUNE_SANITIZE_TESTS_AT_O1 model_block_schedule_test kernels_traits_test fit_test shipped_profile_test)
if(FLASHTUNE_BUILD_TESTS)
  get_property(test_targets DIRECTORY ${PROJECT_SOURCE_DIR}/tests PROPERTY BUILDSYSTEM_TARGETS)
  # tuner_npy_test first: a host test, so both the main and the host-only build have the
  # precompiled header's owner.
  list(REMOVE_ITEM test_targets tuner_npy_test)
  foreach(t tuner_npy_test ${test_targets})
    if(FLASHTUNE_SANITIZE AND t IN_LIST FLASHTUNE_SANITIZE_TESTS_AT_O1)
      list(APPEND FLASHTUNE_TESTS_O1 ${t})
      target_compile_options(${t} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
    else()
      list(APPEND FLASHTUNE_TESTS_LOW ${t})
      target_compile_options(${t} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:$<IF:$<BOOL:${FLASHTUNE_SANITIZE}>,-O0,-Og>>)
    endif()
    if(FLASHTUNE_FUZZ)
      get_target_property(options ${t} COMPILE_OPTIONS)
      if(options)
        list(REMOVE_ITEM options -fsanitize=fuzzer-no-link)
        set_target_properties(${t} PROPERTIES COMPILE_OPTIONS "${options}")
      endif()
    endif()
  endforeach()
endif()

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
  flashtune_share_pch(TARGETS ${FLASHTUNE_TESTS_LOW}
    HEADERS <gtest/gtest.h> <nlohmann/json.hpp> ${FLASHTUNE_PCH_STD})
  # Their own precompiled header: -O0 and -O1 predefine different macros (__OPTIMIZE__).
  flashtune_share_pch(TARGETS ${FLASHTUNE_TESTS_O1}
    HEADERS <gtest/gtest.h> <nlohmann/json.hpp> ${FLASHTUNE_PCH_STD})
endif()
