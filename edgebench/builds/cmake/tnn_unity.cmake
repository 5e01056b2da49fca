# Runs inside TNN's project() (CMAKE_PROJECT_TNN_INCLUDE) when edgebench builds TNN as a unity
# build. A few files clash with a neighbour in the same unity file (a file-level helper named as
# another file's variable; headers that leave macros behind), so each is compiled on its own.
# Source properties belong to the directory whose target compiles the file, and TNN adds the
# device directories after this runs: the ARM ones are set once the top directory is done.
set_source_files_properties(
  ${CMAKE_SOURCE_DIR}/source/tnn/optimizer/net_optimizer_insert_layout_reformat.cc
  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

function(edgebench_tnn_unity_skips)
  set(arm ${CMAKE_SOURCE_DIR}/source/tnn/device/arm)
  if(TNN_ARM_ENABLE)
    set_source_files_properties(${arm}/arm_mat_converter.cc
      DIRECTORY ${arm} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
  if(TNN_ARM82_ENABLE)
    set_source_files_properties(${arm}/acc/compute_arm82/arm_conv_fp16_layer_common.cc
      DIRECTORY ${arm}/acc/compute_arm82 PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    # half_utils.cc includes half_utils_inner.h before macro.h on purpose, to get the half
    # class as fp16_t; in a unity file that fixes fp16_t for the files after it too, and their
    # fp16 functions (InitRandom, half2uint8) no longer link with the ARM code's __fp16 ones.
    set_source_files_properties(${CMAKE_SOURCE_DIR}/source/tnn/utils/half_utils.cc
      DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL edgebench_tnn_unity_skips)
