#include "mnn_gpu.h"

#include "../backend.h"

#if defined(EB_MNN_VULKAN) || defined(EB_MNN_OPENCL)
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#endif

namespace eb {
namespace mnn_gpu {

#if defined(EB_MNN_VULKAN) || defined(EB_MNN_OPENCL)
namespace {

const char* const kVulkanPackages = "mesa-vulkan-drivers libvulkan1 (software: lavapipe), or the GPU vendor's driver";
const char* const kOpenclPackages = "ocl-icd-libopencl1 pocl-opencl-icd (software: pocl), or the GPU vendor's ICD";

std::string vulkan_version(uint32_t v) {
    return std::to_string(v >> 22 & 0x7F) + "." + std::to_string(v >> 12 & 0x3FF) + "." + std::to_string(v & 0xFFF);
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

Device first_vulkan_device() {
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
    Device device;
    if (count > 0 && properties) {
        std::unique_ptr<VkProperties> read(new VkProperties());
        properties(devices[0], read.get());  // MNN takes the first device
        device.name.assign(read->name, strnlen(read->name, sizeof(read->name)));
        device.type = read->device_type < 5 ? kVulkanTypes[read->device_type] : "other";
        device.api_version = vulkan_version(read->api_version);
        device.driver = vulkan_version(read->driver_version);
    }
    if (destroy) destroy(instance, nullptr);
    if (device.name.empty()) throw BackendError("unsupported", none);
    return device;
}

// The OpenCL calls and constants this needs (cl.h's values).
using ClPlatforms = int32_t (*)(uint32_t, void**, uint32_t*);
using ClDevices = int32_t (*)(void*, uint64_t, uint32_t, void**, uint32_t*);
using ClDeviceInfo = int32_t (*)(void*, uint32_t, size_t, void*, size_t*);
constexpr uint64_t kClGpu = 1 << 2, kClCpu = 1 << 1, kClAll = 0xFFFFFFFF;
constexpr uint32_t kClType = 0x1000, kClName = 0x102B, kClDriver = 0x102D, kClVersion = 0x102F;

std::string cl_text(ClDeviceInfo info, void* device, uint32_t what) {
    char text[512] = {0};
    if (info(device, what, sizeof(text) - 1, text, nullptr) != 0) return "";
    return std::string(text);
}

// MNN takes the first platform's devices of GPU type (of any type in a --gpu-devices any build).
Device first_opencl_device() {
#ifdef EB_MNN_ANY_GPU_DEVICE
    const uint64_t wanted = kClAll;
    const std::string none = std::string("no OpenCL device on this machine: install ") + kOpenclPackages;
#else
    const uint64_t wanted = kClGpu;
    const std::string none = std::string("no OpenCL GPU device on this machine: install ") + kOpenclPackages +
                             " (a CPU-type device such as pocl's serves only a build with --gpu-devices any)";
#endif
    Library icd("libOpenCL.so.1");
    if (!icd.handle) throw BackendError("unsupported", none + " (no OpenCL ICD loader: " + dlerror() + ")");
    auto platforms = icd.symbol<ClPlatforms>("clGetPlatformIDs");
    auto devices = icd.symbol<ClDevices>("clGetDeviceIDs");
    auto info = icd.symbol<ClDeviceInfo>("clGetDeviceInfo");
    void* platform = nullptr;
    uint32_t count = 0;
    if (!platforms || !devices || !info || platforms(1, &platform, &count) != 0 || count == 0)
        throw BackendError("unsupported", none + " (no OpenCL platform)");
    void* found = nullptr;
    if (devices(platform, wanted, 1, &found, &count) != 0 || count == 0 || !found)
        throw BackendError("unsupported", none);
    uint64_t type = 0;
    info(found, kClType, sizeof(type), &type, nullptr);
    Device device;
    device.name = cl_text(info, found, kClName);
    device.type = type & kClGpu ? "gpu" : type & kClCpu ? "cpu" : "other";
    device.api_version = cl_text(info, found, kClVersion);
    device.driver = cl_text(info, found, kClDriver);
    return device;
}

bool software_name(const std::string& name) {
    for (const char* known : {"llvmpipe", "lavapipe", "SwiftShader", "pthread", "pocl"})
        if (name.find(known) != std::string::npos) return true;
    return false;
}

}  // namespace

std::vector<std::string> accelerators() {
    std::vector<std::string> names;
#ifdef EB_MNN_VULKAN
    names.push_back("vulkan");
#endif
#ifdef EB_MNN_OPENCL
    names.push_back("opencl");
#endif
    return names;
}

Device find_device(const std::string& backend) {
    Device device = backend == "vulkan" ? first_vulkan_device() : first_opencl_device();
    device.software = device.type == "cpu" || software_name(device.name);
    return device;
}

MNNForwardType forward_type(const std::string& backend) {
    return backend == "vulkan" ? MNN_FORWARD_VULKAN : MNN_FORWARD_OPENCL;
}

void check_session(MNN::Interpreter& interpreter, MNN::Session* session, const std::string& backend) {
    int types[256] = {0};  // one per pipeline of the session
    interpreter.getSessionInfo(session, MNN::Interpreter::BACKENDS, types);
    if (types[0] == forward_type(backend)) return;
    const bool cpu = types[0] == MNN_FORWARD_CPU || types[0] == MNN_FORWARD_CPU_EXTENSION;
    throw fallback_error("mnn", backend,
                         "MNN could not start its " + backend + " runtime and made the session on " +
                             (cpu ? std::string("the CPU") : "another backend") + " (forward type " +
                             std::to_string(types[0]) + "; MNN's own lines are on stderr; its " + backend +
                             " runtime loads " + (backend == "vulkan" ? "libvulkan.so" : "libOpenCL.so") +
                             ", which the API's -dev package provides)");
}

Json report(const Device& device, const std::string& backend, const std::string& precision) {
    Json report = accelerator_object(backend == "vulkan" ? "Vulkan" : "OpenCL");
    report.set("device", device.name);
    report.set("device_type", device.type);
    report.set("software", device.software);
    report.set("driver", device.driver);
    report.set("api_version", device.api_version);
    // Precision_High keeps fp32 on MNN's GPU backends; Low is fp16 only where the device has it.
    report.set("precision", precision == "fp32" ? Json("fp32") : Json());
    report.set("device_memory_unavailable",
               "MNN's session memory (getSessionInfo MEMORY) does not split the device's share from the host's");
    report.set("stages_note",
               "runSession can return with work still queued on the device and copyToHostTensor waits for it: "
               "compute and copy_out split where the queue ends, not where the device's compute does");
    return report;
}

#else  // MNN without its GPU backends

std::vector<std::string> accelerators() { return {}; }
Device find_device(const std::string&) { throw BackendError("unsupported", "MNN was built without GPU backends"); }
MNNForwardType forward_type(const std::string&) { return MNN_FORWARD_CPU; }
void check_session(MNN::Interpreter&, MNN::Session*, const std::string&) {}
Json report(const Device&, const std::string&, const std::string&) { return Json(); }

#endif

}  // namespace mnn_gpu
}  // namespace eb
