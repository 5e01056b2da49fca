#include "mnn_gpu.h"

#include "../backend.h"
#include "../gpu_devices.h"

namespace eb {
namespace mnn_gpu {

#if defined(EB_MNN_VULKAN) || defined(EB_MNN_OPENCL)

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

GpuDevice find_device(const std::string& backend) {
#ifdef EB_MNN_ANY_GPU_DEVICE
    const bool any_type = true;
#else
    const bool any_type = false;
#endif
    // MNN's OpenCL runtime looks at the first platform only.
    return backend == "vulkan" ? first_vulkan_device() : first_opencl_device(any_type, true);
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

Json report(const GpuDevice& device, const std::string& backend, const std::string& precision) {
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
GpuDevice find_device(const std::string&) { throw BackendError("unsupported", "MNN was built without GPU backends"); }
MNNForwardType forward_type(const std::string&) { return MNN_FORWARD_CPU; }
void check_session(MNN::Interpreter&, MNN::Session*, const std::string&) {}
Json report(const GpuDevice&, const std::string&, const std::string&) { return Json(); }

#endif

}  // namespace mnn_gpu
}  // namespace eb
