# Runs inside MNN's project() (CMAKE_PROJECT_MNN_INCLUDE) when edgebench builds MNN as a unity
# build. The files below clash with a neighbour in the same unity file, so each is compiled on
# its own: every geometry file registers itself through a file-level `_create()`; the x86 SSE
# files and the CPU files that include their FunctionSummary.hpp or BinaryUtils.hpp repeat
# default arguments and helpers; two int8 files and two Express files define file-level names
# (a thread_local once_flag, tiling macros) that a neighbour also defines. Express is its own
# directory, added after this runs, so its files are set once the top directory is done.
set(_mnn_src ${CMAKE_SOURCE_DIR}/source)
file(GLOB _mnn_geometry ${_mnn_src}/geometry/*.cpp)
file(GLOB _mnn_sse ${_mnn_src}/backend/cpu/x86_x64/sse/*.cpp)
set_source_files_properties(${_mnn_geometry} ${_mnn_sse}
  ${_mnn_src}/backend/cpu/compute/CommonOptFunction.cpp
  ${_mnn_src}/backend/cpu/compute/ConvInt8TiledExecutor.cpp
  ${_mnn_src}/backend/cpu/x86_x64/avx/GemmInt8.cpp
  ${_mnn_src}/backend/cpu/CPUBinary.cpp
  ${_mnn_src}/backend/cpu/CPUBinaryInt8.cpp
  ${_mnn_src}/backend/cpu/x86_x64/FunctionDispatcher.cpp
  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

function(edgebench_mnn_unity_skips)
  set(express ${CMAKE_SOURCE_DIR}/express)
  set_source_files_properties(${express}/ExecutorScope.cpp ${express}/module/WhileModule.cpp
    DIRECTORY ${express} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL edgebench_mnn_unity_skips)

# The LLM engine's sources (transformers/llm/engine) share file-level helpers across files
# (llm.cpp, omni.cpp, the tokenizer's): its own target compiles each file on its own.
function(edgebench_mnn_llm_no_unity)
  if(TARGET llm)
    set_target_properties(llm PROPERTIES UNITY_BUILD OFF)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL edgebench_mnn_llm_no_unity)
