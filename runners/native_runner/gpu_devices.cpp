#include "gpu_devices.h"

#include "backend.h"

#ifdef EB_LOADS_DRIVERS
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>
#endif

namespace eb {

#ifdef EB_LOADS_DRIVERS
namespace {

const char* const kVulkanPackages = "mesa-vulkan-drivers libvulkan1 (software: lavapipe), or the GPU vendor's driver";
const char* const kOpenclPackages = "ocl-icd-libopencl1 pocl-opencl-icd (software: pocl), or the GPU vendor's ICD";

std::string vulkan_version(uint32_t v) {
    return std::to_string(v >> 22 & 0x7F) + "." + std::to_string(v >> 12 & 0x3FF) + "." + std::to_string(v & 0xFFF);
}

bool software_name(const std::string& name) {
    for (const char* known : {"llvmpipe", "lavapipe", "SwiftShader", "pthread", "pocl"})
        if (name.find(known) != std::string::npos) return true;
    return false;
}

// A loaded library, closed when it goes.
struct Library {
    explicit Library(const char* name) : handle(dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}
    ~Library() {
        if (handle) dlclose(handle);
    }
    template <typename F>
    F symbol(const char* name) const {
        return reinterpret_cast<F>(dlsym(handle, name));
    }
    void* handle;
};

// The Vulkan calls and structs this needs, as the Vulkan specification lays them out (so no
// Vulkan header is needed to build the runner).
struct VkInstanceCreateInfo {
    int32_t type = 1;  // VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
    const void* next = nullptr;
    uint32_t flags = 0;
    const void* application = nullptr;
    uint32_t layer_count = 0;
    const char* const* layers = nullptr;
    uint32_t extension_count = 0;
    const char* const* extensions = nullptr;
};
using VkGetProc = void* (*)(void*, const char*);
using VkCreateInstance = int32_t (*)(const VkInstanceCreateInfo*, const void*, void**);
using VkDestroyInstance = void (*)(void*, const void*);
using VkEnumerateDevices = int32_t (*)(void*, uint32_t*, void**);
using VkGetProperties = void (*)(void*, void*);

// VkPhysicalDeviceProperties begins with apiVersion, driverVersion, vendorID, deviceID,
// deviceType and deviceName[256]; the buffer holds the whole struct with room to spare.
struct alignas(8) VkProperties {
    uint32_t api_version, driver_version, vendor_id, device_id, device_type;
    char name[256];
    unsigned char rest[4096];
};

const char* const kVulkanTypes[] = {"other", "integrated", "discrete", "virtual", "cpu"};

}  // namespace

GpuDevice first_vulkan_device() {
    const std::string none = std::string("no Vulkan device on this machine: install ") + kVulkanPackages;
    Library loader("libvulkan.so.1");
    if (!loader.handle) throw BackendError("unsupported", none + " (no Vulkan loader: " + dlerror() + ")");
    auto get_proc = loader.symbol<VkGetProc>("vkGetInstanceProcAddr");
    auto create = get_proc ? reinterpret_cast<VkCreateInstance>(get_proc(nullptr, "vkCreateInstance")) : nullptr;
    VkInstanceCreateInfo info;
    void* instance = nullptr;
    if (!create || create(&info, nullptr, &instance) != 0)
        throw BackendError("unsupported", none + " (the loader found no driver)");
    auto destroy = reinterpret_cast<VkDestroyInstance>(get_proc(instance, "vkDestroyInstance"));
    auto enumerate = reinterpret_cast<VkEnumerateDevices>(get_proc(instance, "vkEnumeratePhysicalDevices"));
    auto properties = reinterpret_cast<VkGetProperties>(get_proc(instance, "vkGetPhysicalDeviceProperties"));
    uint32_t count = 0;
    std::vector<void*> devices;
    if (enumerate && enumerate(instance, &count, nullptr) == 0 && count > 0) {
        devices.resize(count);
        if (enumerate(instance, &count, devices.data()) < 0) count = 0;
    }
    GpuDevice device;
    if (count > 0 && properties) {
        std::unique_ptr<VkProperties> read(new VkProperties());
        properties(devices[0], read.get());  // the one the frameworks' runtimes take
        device.name.assign(read->name, strnlen(read->name, sizeof(read->name)));
        device.type = read->device_type < 5 ? kVulkanTypes[read->device_type] : "other";
        device.api_version = vulkan_version(read->api_version);
        device.driver = vulkan_version(read->driver_version);
    }
    if (destroy) destroy(instance, nullptr);
    if (device.name.empty()) throw BackendError("unsupported", none);
    device.software = device.type == "cpu" || software_name(device.name);
    return device;
}

namespace {

// The OpenCL calls and constants this needs (cl.h's values).
using ClPlatforms = int32_t (*)(uint32_t, void**, uint32_t*);
using ClDevices = int32_t (*)(void*, uint64_t, uint32_t, void**, uint32_t*);
using ClDeviceInfo = int32_t (*)(void*, uint32_t, size_t, void*, size_t*);
constexpr uint64_t kClGpu = 1 << 2, kClCpu = 1 << 1, kClAll = 0xFFFFFFFF;
constexpr uint32_t kClType = 0x1000, kClName = 0x102B, kClDriver = 0x102D, kClVersion = 0x102F,
                   kClExtensions = 0x1030;

std::string cl_text(ClDeviceInfo info, void* device, uint32_t what) {
    size_t size = 0;
    if (info(device, what, 0, nullptr, &size) != 0 || size == 0) return "";
    std::string text(size, '\0');
    if (info(device, what, size, &text[0], nullptr) != 0) return "";
    return text.substr(0, text.find('\0'));
}

}  // namespace

GpuDevice first_opencl_device(bool any_type, bool first_platform_only) {
    const std::string none = any_type ? std::string("no OpenCL device on this machine: install ") + kOpenclPackages
                                      : std::string("no OpenCL GPU device on this machine: install ") +
                                            kOpenclPackages +
                                            " (a CPU-type device such as pocl's serves only a build with "
                                            "--gpu-devices any)";
    Library icd("libOpenCL.so.1");
    if (!icd.handle) throw BackendError("unsupported", none + " (no OpenCL ICD loader: " + dlerror() + ")");
    auto platforms = icd.symbol<ClPlatforms>("clGetPlatformIDs");
    auto devices = icd.symbol<ClDevices>("clGetDeviceIDs");
    auto info = icd.symbol<ClDeviceInfo>("clGetDeviceInfo");
    uint32_t count = 0;
    if (!platforms || !devices || !info || platforms(0, nullptr, &count) != 0 || count == 0)
        throw BackendError("unsupported", none + " (no OpenCL platform)");
    std::vector<void*> listed(count);
    platforms(count, listed.data(), nullptr);
    if (first_platform_only) listed.resize(1);
    void* found = nullptr;
    for (void* platform : listed) {
        uint32_t matching = 0;
        if (devices(platform, any_type ? kClAll : kClGpu, 1, &found, &matching) == 0 && matching > 0 && found) break;
        found = nullptr;
    }
    if (!found) throw BackendError("unsupported", none);
    uint64_t type = 0;
    info(found, kClType, sizeof(type), &type, nullptr);
    GpuDevice device;
    device.name = cl_text(info, found, kClName);
    device.type = type & kClGpu ? "gpu" : type & kClCpu ? "cpu" : "other";
    device.api_version = cl_text(info, found, kClVersion);
    device.driver = cl_text(info, found, kClDriver);
    device.extensions = cl_text(info, found, kClExtensions);
    device.software = device.type == "cpu" || software_name(device.name);
    return device;
}

#else  // a static binary: no driver can be loaded

GpuDevice first_vulkan_device() {
    throw BackendError("unsupported", "this edgebench-native is static and cannot load a Vulkan driver");
}
GpuDevice first_opencl_device(bool, bool) {
    throw BackendError("unsupported", "this edgebench-native is static and cannot load an OpenCL driver");
}

#endif

}  // namespace eb
