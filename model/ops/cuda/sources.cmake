# The CUDA backend's sources, named once: the plugin (model/ops/CMakeLists.txt) and its host
# emulator (tests/model/cuda/emulator) compile exactly these. Headers are not listed.
set(TRANSERVE_CUDA_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/attention.cu
  ${CMAKE_CURRENT_LIST_DIR}/caching_allocator.cu
  ${CMAKE_CURRENT_LIST_DIR}/cuda_status.cu
  ${CMAKE_CURRENT_LIST_DIR}/embedding.cu
  ${CMAKE_CURRENT_LIST_DIR}/kv_cache.cu
  ${CMAKE_CURRENT_LIST_DIR}/layer_norm.cu
  ${CMAKE_CURRENT_LIST_DIR}/linear.cu
  ${CMAKE_CURRENT_LIST_DIR}/plugin.cu
  ${CMAKE_CURRENT_LIST_DIR}/stream.cu
  ${CMAKE_CURRENT_LIST_DIR}/top_k.cu)
