# The tests of the host-only libraries (no CUDA, no flashtune binary): the ones the host-only
# sanitizer build (FLASHTUNE_HOST_ONLY, scripts/sanitize_host.sh) runs, and part of every build.

# Tuner: host-only unit tests (no GPU needed).
flashtune_add_test(tuner_npy_test SOURCES tuner_npy_test.cpp LIBS flashtune_tuner_host)
flashtune_add_test(tuner_sample_stats_test SOURCES tuner_sample_stats_test.cpp LIBS flashtune_tuner_host)

flashtune_add_test(tuner_config_select_test SOURCES tuner_config_select_test.cpp LIBS flashtune_tuner_host)

# Model (host-only, no GPU): counts, bank simulation, occupancy, spec loader, prediction; the
# model's view of a profile (profile/model_profile.h) and the fitted prediction read through it.
foreach(t model_bank_sim_test model_counts_test model_occupancy_test model_gpu_spec_test model_predict_test
          model_profile_test model_block_schedule_test)
  flashtune_add_test(${t} SOURCES ${t}.cpp LIBS flashtune_model)
  target_compile_definitions(${t} PRIVATE FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")
endforeach()
# The decode family's traits and model, and the model against the H100 split sweeps in docs/results.
flashtune_add_test(model_decode_test SOURCES model_decode_test.cpp LIBS flashtune_fit nlohmann_json::nlohmann_json)
target_compile_definitions(model_decode_test PRIVATE FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus"
  FLASHTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(model_predict_test PRIVATE flashtune_profile)
target_link_libraries(model_profile_test PRIVATE flashtune_profile)
# The data folder (model/data_dir.h) and the shipped profile found through it.
flashtune_add_test(model_data_dir_test SOURCES model_data_dir_test.cpp LIBS flashtune_model flashtune_profile)
target_compile_definitions(model_data_dir_test PRIVATE FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")

# Kernels' traits (host only); links the model for its bank-conflict simulation of the tensor-core
# fragment reads.
flashtune_add_test(kernels_traits_test SOURCES kernels_traits_test.cpp LIBS flashtune_traits flashtune_model)
# The traits' register estimates against the full build's ptxas report (host only).
flashtune_add_test(kernels_registers_test SOURCES kernels_registers_test.cpp
                   LIBS flashtune_model nlohmann_json::nlohmann_json)
target_compile_definitions(kernels_registers_test PRIVATE FLASHTUNE_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data"
  FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")

# Tuner: profile, workload files, plan, export (host) and the tune runner's resume with a fake
# backend (host; no GPU).
flashtune_add_test(tuner_profile_test SOURCES tuner_profile_test.cpp LIBS flashtune_tune_core)
target_compile_definitions(tuner_profile_test PRIVATE FLASHTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")
flashtune_add_test(tuner_tune_resume_test SOURCES tuner_tune_resume_test.cpp LIBS flashtune_tune_core)
# The profile's write path: the journal, the store and the writer's lock; shards and merge (host).
foreach(t tuner_journal_test tuner_merge_test)
  flashtune_add_test(${t} SOURCES ${t}.cpp LIBS flashtune_tune_core)
endforeach()
target_compile_definitions(tuner_merge_test PRIVATE FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")

# The coefficient fit (host-only) and `flashtune fit` from the outside.
flashtune_add_test(fit_test SOURCES fit_test.cpp LIBS flashtune_fit)
target_compile_definitions(fit_test PRIVATE FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")

flashtune_add_test(shipped_profile_test SOURCES shipped_profile_test.cpp LIBS flashtune_tune_core)
target_compile_definitions(shipped_profile_test PRIVATE FLASHTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# The model's counts against the shipped H200 profile's CUPTI counters, term by term (host-only).
flashtune_add_test(model_counter_check_test SOURCES model_counter_check_test.cpp LIBS flashtune_model flashtune_plots)
target_compile_definitions(model_counter_check_test PRIVATE
  FLASHTUNE_SHIPPED_H200_PROFILE="${PROJECT_SOURCE_DIR}/profiles/nvidia-h200.json")

# Hostile input against the loaders and writers: strict JSON, size limits, .npy lengths, the one
# profile value check, outputs that cannot destroy (host-only, so the sanitizer build runs it).
flashtune_add_test(hardening_test SOURCES hardening_test.cpp LIBS flashtune_tune_core flashtune_tuner_host flashtune_plots)
target_compile_definitions(hardening_test PRIVATE FLASHTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  FLASHTUNE_FIXTURE_PROFILE="${CMAKE_CURRENT_SOURCE_DIR}/data/fixture_profile.json")

# The compiled kernels' extra warp instructions: table reader, its fit, the shipped table.
flashtune_add_test(compiled_instructions_test SOURCES compiled_instructions_test.cpp LIBS flashtune_fit flashtune_plots)
target_compile_definitions(compiled_instructions_test PRIVATE
  FLASHTUNE_INSTRUCTION_PROFILE="${PROJECT_SOURCE_DIR}/profiles/counters/nvidia-h200-instructions.json")

# Issue 27 (Hardening II), host side: the JSON nesting limit, the profile's value-range table (and
# docs/profile-schema.md against it), spec sheet checks (host-only: the sanitizer build runs it).
flashtune_add_test(hardening_values_test SOURCES hardening_values_test.cpp LIBS flashtune_tune_core flashtune_plots)
target_compile_definitions(hardening_values_test PRIVATE FLASHTUNE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  FLASHTUNE_FIXTURE_PROFILE="${CMAKE_CURRENT_SOURCE_DIR}/data/fixture_profile.json"
  FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")

# Issue 27 (Hardening II), outputs, lock and journal: one output policy (devices, FIFOs, sockets,
# folders refused; the streams written through), a profile's journal and lock part of it, a lock
# that follows no link, journal lines through the value check, pending-journal notices, a signal
# while an output is staged (host-only, so the sanitizer build runs it).
flashtune_add_test(output_policy_test SOURCES output_policy_test.cpp LIBS flashtune_tune_core)

# Inference operands on the host: keys and grouped heads in the workload, limits, strides, counts,
# the DRAM rule, profile and workload-file schema 3 (host-only).
flashtune_add_test(model_inference_test SOURCES model_inference_test.cpp LIBS flashtune_tune_core)
target_compile_definitions(model_inference_test PRIVATE FLASHTUNE_TEST_GPU_DIR="${PROJECT_SOURCE_DIR}/configs/gpus")
