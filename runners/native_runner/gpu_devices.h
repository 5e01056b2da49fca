// The GPU device a framework's runtime will take, found through the API's own loader
// (libvulkan.so.1, libOpenCL.so.1) before the framework is asked: some runtimes take the first
// device without checking there is one, and none says which device it took. Only in a binary
// that links glibc shared (EB_LOADS_DRIVERS): a static glibc cannot load a driver.
#pragma once

#include <string>

namespace eb {

struct GpuDevice {
    std::string name, type, api_version, driver;  // type: "cpu" for a software device
    std::string extensions;                        // OpenCL's CL_DEVICE_EXTENSIONS
    bool software = false;
};

// The first Vulkan device; throws unsupported naming the packages when there is none.
GpuDevice first_vulkan_device();

// The first OpenCL device of GPU type (of any type with `any_type`), on the first platform
// (`first_platform_only`, MNN's rule) or on the first platform that has one (TNN's); throws
// unsupported naming the packages when there is none.
GpuDevice first_opencl_device(bool any_type, bool first_platform_only);

}  // namespace eb
