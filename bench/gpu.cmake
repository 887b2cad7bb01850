# GPU benchmarks of the cuda backend against NVIDIA's driver called directly (issue 7).
# Runs on a GPU machine (scripts/gpu-run.sh); without CUDAMUX_BENCH_NVIDIA_DRIVER only the
# cudamux side runs. Run: bin/cudamux_bench_gpu
add_executable(cudamux_bench_gpu ${CMAKE_CURRENT_LIST_DIR}/bench_gpu.cpp)
target_include_directories(cudamux_bench_gpu PRIVATE ${PROJECT_SOURCE_DIR}/api/include)
target_link_libraries(cudamux_bench_gpu PRIVATE cuda_driver cudamux_nvrtc benchmark::benchmark
                      ${CMAKE_DL_LIBS})
add_dependencies(cudamux_bench_gpu cudamux_cuda)
