#include "ncnn_vulkan.h"

#if NCNN_VULKAN
#include <cstring>

#include "command.h"
#include "gpu.h"
#endif

namespace eb {
namespace ncnn_vulkan {

#if NCNN_VULKAN
namespace {

const char* const kNoDevice =
    "no Vulkan device on this machine: install mesa-vulkan-drivers libvulkan1 (software) or the GPU's driver";

std::string version_text(uint32_t version) {
    return std::to_string((version >> 22) & 0x7F) + "." + std::to_string((version >> 12) & 0x3FF) + "." +
           std::to_string(version & 0xFFF);
}

// A Vulkan query struct, zeroed, of `type`, chained to `next`.
template <typename T>
T vulkan_struct(VkStructureType type, void* next = nullptr) {
    T value;
    std::memset(&value, 0, sizeof(value));
    value.sType = type;
    value.pNext = next;
    return value;
}

// Bytes of device-local memory this process holds on the device, as VK_EXT_memory_budget's
// heapUsage counts them; -1 where the driver has no memory budget.
int64_t device_local_usage(const ncnn::GpuInfo& info) {
    if (!info.support_VK_EXT_memory_budget() || !ncnn::vkGetPhysicalDeviceMemoryProperties2KHR) return -1;
    auto budget = vulkan_struct<VkPhysicalDeviceMemoryBudgetPropertiesEXT>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT);
    auto properties = vulkan_struct<VkPhysicalDeviceMemoryProperties2KHR>(
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2_KHR, &budget);
    ncnn::vkGetPhysicalDeviceMemoryProperties2KHR(info.physicalDevice(), &properties);
    int64_t used = 0;
    const VkPhysicalDeviceMemoryProperties& memory = properties.memoryProperties;
    for (uint32_t i = 0; i < memory.memoryHeapCount && i < VK_MAX_MEMORY_HEAPS; ++i)
        if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) used += static_cast<int64_t>(budget.heapUsage[i]);
    return used;
}

// The driver's own words for itself (Mesa's "Mesa 22.3.6 (LLVM 15.0.6)"), else its version number.
std::string driver_text(const ncnn::GpuInfo& info) {
    if (info.support_VK_KHR_driver_properties() && ncnn::vkGetPhysicalDeviceProperties2KHR) {
        auto driver =
            vulkan_struct<VkPhysicalDeviceDriverPropertiesKHR>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES_KHR);
        auto properties =
            vulkan_struct<VkPhysicalDeviceProperties2KHR>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2_KHR, &driver);
        ncnn::vkGetPhysicalDeviceProperties2KHR(info.physicalDevice(), &properties);
        const std::string words(driver.driverInfo, strnlen(driver.driverInfo, VK_MAX_DRIVER_INFO_SIZE));
        if (!words.empty()) return words;
    }
    return version_text(info.driver_version());
}

// ncnn's GpuInfo::type() as the report's device_type.
std::string device_type(int type) {
    switch (type) {
        case 0: return "discrete";
        case 1: return "integrated";
        case 2: return "virtual";
        case 3: return "cpu";
        default: return "other";
    }
}

bool software_device(const std::string& name, int type) {
    if (type == 3) return true;  // a Vulkan driver that runs on the CPU (lavapipe, SwiftShader)
    for (const char* known : {"llvmpipe", "lavapipe", "SwiftShader"})
        if (name.find(known) != std::string::npos) return true;
    return false;
}

// A downloaded output as the host path of Extractor::extract leaves it: one element per lane,
// fp32.
ncnn::Mat unpacked_fp32(const ncnn::Mat& mat, const ncnn::Option& opt) {
    ncnn::Mat out = mat;
    if (out.elempack != 1) {
        ncnn::Mat flat;
        ncnn::convert_packing(out, flat, 1, opt);
        out = flat;
    }
    if (out.elembits() == 16) {
        ncnn::Mat wide;
        ncnn::cast_float16_to_float32(out, wide, opt);
        out = wide;
    }
    if (out.empty()) throw std::bad_alloc();
    return out;
}

// One inference as three submissions to the device: the uploads, the layers, the downloads.
class VulkanStream : public Stream {
public:
    VulkanStream(ncnn::Net& net, const IoMap& io, NamedMats inputs)
        : net_(net), io_(io), device_(net.vulkan_device()), inputs_(std::move(inputs)),
          uploaded_(inputs_.size()), computed_(io.outputs.size()), copied_(io.outputs.size()),
          shapes_(io.outputs.size()) {
        blob_allocator_ = device_->acquire_blob_allocator();
        staging_allocator_ = device_->acquire_staging_allocator();
        opt_ = net.opt;
        opt_.blob_vkallocator = blob_allocator_;
        opt_.workspace_vkallocator = blob_allocator_;
        opt_.staging_vkallocator = staging_allocator_;
    }

    ~VulkanStream() override {
        release();
        device_->reclaim_blob_allocator(blob_allocator_);
        device_->reclaim_staging_allocator(staging_allocator_);
    }

    void copy_in() override {
        release();
        command_.reset(new ncnn::VkCompute(device_));
        for (size_t i = 0; i < inputs_.size(); ++i) command_->record_upload(inputs_[i].second, uploaded_[i], opt_);
        submit("upload the inputs");
        extractor_.reset(new ncnn::Extractor(net_.create_extractor()));
        extractor_->set_blob_vkallocator(blob_allocator_);
        extractor_->set_workspace_vkallocator(blob_allocator_);
        extractor_->set_staging_vkallocator(staging_allocator_);
        for (size_t i = 0; i < inputs_.size(); ++i)
            if (extractor_->input(inputs_[i].first.c_str(), uploaded_[i]) != 0)
                throw BackendError("inference", "ncnn has no input blob " + inputs_[i].first);
    }

    void compute() override {
        for (size_t i = 0; i < io_.outputs.size(); ++i)
            if (extractor_->extract(io_.outputs[i].name.c_str(), computed_[i], *command_) != 0)
                throw BackendError("inference", "ncnn could not extract blob " + io_.outputs[i].name);
        submit("run the layers");
    }

    void copy_out() override {
        std::vector<ncnn::Mat> downloaded(computed_.size());
        for (size_t i = 0; i < computed_.size(); ++i) command_->record_download(computed_[i], downloaded[i], opt_);
        submit("download the outputs");
        for (size_t i = 0; i < downloaded.size(); ++i) copied_[i] = from_mat(unpacked_fp32(downloaded[i], opt_), shapes_[i]);
        release();
    }

    std::vector<Tensor> outputs() override {
        std::vector<Tensor> out;
        for (size_t i = 0; i < io_.outputs.size(); ++i) out.push_back(io_.outputs[i].to_onnx(copied_[i], shapes_[i]));
        return out;
    }

private:
    void submit(const char* what) {
        if (command_->submit_and_wait() != 0) throw BackendError("inference", std::string("Vulkan failed to ") + what);
        command_->reset();
    }

    // The device memory of one inference goes back to the allocators' pools.
    void release() {
        extractor_.reset();
        command_.reset();
        for (auto& mat : uploaded_) mat.release();
        for (auto& mat : computed_) mat.release();
    }

    ncnn::Net& net_;
    const IoMap& io_;
    const ncnn::VulkanDevice* device_;
    NamedMats inputs_;
    ncnn::VkAllocator* blob_allocator_ = nullptr;
    ncnn::VkAllocator* staging_allocator_ = nullptr;
    ncnn::Option opt_;
    std::unique_ptr<ncnn::VkCompute> command_;
    std::unique_ptr<ncnn::Extractor> extractor_;
    std::vector<ncnn::VkMat> uploaded_, computed_;
    std::vector<std::vector<float>> copied_;
    std::vector<std::vector<int64_t>> shapes_;
};

}  // namespace

std::vector<std::string> accelerators() { return {"vulkan"}; }

int64_t prepare(ncnn::Net& net, const std::string& precision) {
    if (precision == "int8")
        throw BackendError("unsupported",
                           "ncnn has no int8 Vulkan path: an int8 layer turns Vulkan off for the model (run int8 on cpu)");
    if (ncnn::get_gpu_count() == 0) throw BackendError("unsupported", kNoDevice);
    net.opt.use_vulkan_compute = true;
    return device_local_usage(ncnn::get_gpu_info(ncnn::get_default_gpu_index()));
}

void check_kept(const ncnn::Net& net) {
    if (net.opt.use_vulkan_compute && net.vulkan_device()) return;
    throw fallback_error("ncnn", "vulkan",
                         "use_vulkan_compute was off after load_param (ncnn found no usable Vulkan device; its "
                         "messages are on stderr)");
}

std::unique_ptr<Stream> make_stream(ncnn::Net& net, const IoMap& io, NamedMats inputs) {
    return std::unique_ptr<Stream>(new VulkanStream(net, io, std::move(inputs)));
}

Json boundaries() {
    Json stages = Json::object();
    stages.set("copy_in", "VkCompute::record_upload of each input, submitted and waited for, then Extractor::input");
    stages.set("compute", "Extractor::extract of each output into a VkMat, the layers submitted and waited for");
    stages.set("copy_out",
               "VkCompute::record_download of each output, submitted and waited for, then unpacked to fp32 on the host");
    return stages;
}

Json report(const ncnn::Net& net, int64_t memory_before) {
    const ncnn::GpuInfo& info = net.vulkan_device()->info;
    const std::string name = info.device_name();
    Json report = accelerator_object("Vulkan");
    report.set("device", name);
    report.set("device_type", device_type(info.type()));
    report.set("software", software_device(name, info.type()));
    report.set("driver", driver_text(info));
    report.set("api_version", version_text(info.api_version()));
    const ncnn::Option& opt = net.opt;
    report.set("precision", opt.use_fp16_storage || opt.use_fp16_packed || opt.use_fp16_arithmetic ? "fp16" : "fp32");
    int64_t delegated = 0, total = 0;
    for (const ncnn::Layer* layer : net.layers()) {
        if (layer->type == "Input") continue;
        ++total;
        delegated += layer->support_vulkan ? 1 : 0;
    }
    report.set("delegated_ops", delegated);
    report.set("total_ops", total);
    const int64_t memory_after = device_local_usage(info);
    if (memory_before >= 0 && memory_after >= 0)
        report.set("device_memory_mb", static_cast<double>(memory_after - memory_before) / (1024.0 * 1024.0));
    else
        report.set("device_memory_unavailable",
                   name + " has no VK_EXT_memory_budget: its driver does not count the process's device memory");
    report.set("stages_note",
               "the stages are the device's own: copy_in uploads the inputs, compute runs the layers, copy_out "
               "downloads the outputs, each submitted and waited for (a layer without a Vulkan kernel adds a "
               "download and an upload inside compute)");
    return report;
}

#else  // a build without NCNN_VULKAN: the cell refuses "vulkan" before any of these is called

std::vector<std::string> accelerators() { return {}; }
int64_t prepare(ncnn::Net&, const std::string&) { throw BackendError("unsupported", "ncnn was built without Vulkan"); }
void check_kept(const ncnn::Net&) {}
std::unique_ptr<Stream> make_stream(ncnn::Net&, const IoMap&, NamedMats) {
    throw BackendError("unsupported", "ncnn was built without Vulkan");
}
Json boundaries() { return Json::object(); }
Json report(const ncnn::Net&, int64_t) { return Json(); }

#endif

}  // namespace ncnn_vulkan
}  // namespace eb
