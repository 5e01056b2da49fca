# Runs before TNN's project() (CMAKE_PROJECT_TNN_INCLUDE_BEFORE) when edgebench builds TNN with
# its OpenCL device.
#
# The OpenCL device is left out of the unity build: its files define file-level helpers of the
# same names.
#
# With EDGEBENCH_ANY_OPENCL_DEVICE (`--gpu-devices any`, for tests on a machine without a GPU):
# TNN's OpenCL runtime asks every platform for CL_DEVICE_TYPE_GPU devices only, so a CPU-type
# device (pocl) never serves it. Its opencl_runtime.cc is then compiled with a header forced in
# first that includes TNN's runtime header and makes that constant CL_DEVICE_TYPE_ALL. No
# source file is changed; the record of a cell on such a device says software.
option(EDGEBENCH_ANY_OPENCL_DEVICE "TNN's OpenCL takes a device of any type" OFF)
if(EDGEBENCH_ANY_OPENCL_DEVICE)
  file(WRITE ${CMAKE_BINARY_DIR}/edgebench_any_opencl_device.h
    "#include \"tnn/device/opencl/opencl_runtime.h\"\n"
    "#undef CL_DEVICE_TYPE_GPU\n"
    "#define CL_DEVICE_TYPE_GPU CL_DEVICE_TYPE_ALL\n")
endif()

function(edgebench_tnn_gpu)
  if(NOT TARGET TNNOpenCL)
    return()
  endif()
  set_target_properties(TNNOpenCL PROPERTIES UNITY_BUILD OFF)
  if(EDGEBENCH_ANY_OPENCL_DEVICE)
    set(opencl ${CMAKE_SOURCE_DIR}/source/tnn/device/opencl)
    set_source_files_properties(${opencl}/opencl_runtime.cc DIRECTORY ${opencl}
      PROPERTIES COMPILE_OPTIONS "-include;${CMAKE_BINARY_DIR}/edgebench_any_opencl_device.h")
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL edgebench_tnn_gpu)
