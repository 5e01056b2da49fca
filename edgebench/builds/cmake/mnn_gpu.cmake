# Runs before MNN's project() (CMAKE_PROJECT_MNN_INCLUDE_BEFORE) when edgebench builds MNN with
# its Vulkan or OpenCL backend.
#
# The GPU backends are left out of the unity build: their execution files each define a
# file-level `gResistor` (and Vulkan's resize and ROI pooling a `GpuParam`) that clash in one
# unity file.
#
# With EDGEBENCH_ANY_OPENCL_DEVICE (`--gpu-devices any`, for tests on a machine without a GPU):
# MNN's OpenCL runtime asks the platform for CL_DEVICE_TYPE_GPU devices only, so a CPU-type
# device (pocl) never serves an OpenCL session. Its OpenCLRuntime.cpp is then compiled with a
# header forced in first that includes MNN's OpenCL wrapper and makes that constant
# CL_DEVICE_TYPE_ALL, so the runtime takes the platform's first device of any type. No source
# file is changed; the record of a cell on such a device says software.
option(EDGEBENCH_ANY_OPENCL_DEVICE "MNN's OpenCL takes a device of any type" OFF)
if(EDGEBENCH_ANY_OPENCL_DEVICE)
  file(WRITE ${CMAKE_BINARY_DIR}/edgebench_any_opencl_device.h
    "#include \"backend/opencl/core/runtime/OpenCLWrapper.hpp\"\n"
    "#undef CL_DEVICE_TYPE_GPU\n"
    "#define CL_DEVICE_TYPE_GPU CL_DEVICE_TYPE_ALL\n")
endif()

function(edgebench_mnn_gpu)
  foreach(target MNN_Vulkan MNN_CL)
    if(TARGET ${target})
      set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
    endif()
  endforeach()
  if(EDGEBENCH_ANY_OPENCL_DEVICE AND TARGET MNN_CL)
    set(opencl ${CMAKE_SOURCE_DIR}/source/backend/opencl)
    set_source_files_properties(${opencl}/core/runtime/OpenCLRuntime.cpp DIRECTORY ${opencl}
      PROPERTIES COMPILE_OPTIONS "-include;${CMAKE_BINARY_DIR}/edgebench_any_opencl_device.h")
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL edgebench_mnn_gpu)
