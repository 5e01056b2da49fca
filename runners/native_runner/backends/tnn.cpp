// TNN through its C++ API (TNN + Instance): the .tnnproto and .tnnmodel edgebench writes, on the
// X86 device on x86_64 and the ARM device on aarch64. TNN has no Python runtime, so this is the
// only runner backend that runs TNN files (the other way is TNN's own TNNTest tool).
//
// One TNN object holds the parsed model; every stream is an Instance created from it (TNN's own
// way to serve several networks from one model: the instances share the interpreted weights,
// each keeps its device's packed copy and its own blobs). Feeds and outputs are NCHW float Mats
// on the CPU that TNN converts to and from its blob layout (NC4HW4 and fp16 on ARM). The model's
// input and output names are the ONNX names: edgebench's writer keeps them, so no io.json. On
// OpenCL (the x86_64 build), the instance runs on TNN's OPENCL device and the Mats stay on the
// CPU: TNN uploads and downloads them.
#include <tnn/core/common.h>
#include <tnn/core/instance.h>
#include <tnn/core/mat.h>
#include <tnn/core/tnn.h>
#include <tnn/interpreter/net_structure.h>  // LayerInfo, which ForwardWithCallback hands out
#include <tnn/utils/cpu_utils.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "../backend.h"
#include "../gpu_devices.h"

#ifndef EB_TNN_VERSION
#define EB_TNN_VERSION "unknown"
#endif

namespace eb {
namespace {

#if defined(__aarch64__)
constexpr TNN_NS::DeviceType kDevice = TNN_NS::DEVICE_ARM;
constexpr const char* kDeviceName = "ARM";
#else
constexpr TNN_NS::DeviceType kDevice = TNN_NS::DEVICE_X86;
constexpr const char* kDeviceName = "X86";
#endif

constexpr const char* kProtoSuffix = ".tnnproto";
constexpr unsigned long kMagicV2 = 4206624772UL;  // input lines carry rank and data type

std::string read_file(const std::string& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw BackendError("model_load", std::string("cannot read the TNN ") + what + " " + path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void check(TNN_NS::Status status, const char* kind, const std::string& what) {
    if (status != TNN_NS::TNN_OK) throw BackendError(kind, what + ": " + status.description());
}

std::vector<std::string> words(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string word; in >> word;) out.push_back(word);
    return out;
}

// The inputs (in file order, with shapes and types) and outputs the .tnnproto declares; TNN's
// own maps are sorted by name, and the runner needs the model's order. The records are what
// TNN's ModelInterpreter reads: quotes and newlines dropped, then split at commas.
struct ProtoIo {
    std::vector<TensorInfo> inputs;
    std::vector<std::string> outputs;
};

ProtoIo parse_proto_io(const std::vector<std::string>& records, const std::string& path) {
    const bool v2 = std::stoul(words(records[0]).at(3)) == kMagicV2;
    ProtoIo io;
    std::istringstream inputs(records[1]);
    for (std::string part; std::getline(inputs, part, ':');) {
        const std::vector<std::string> w = words(part);
        if (w.empty()) continue;
        TensorInfo info;
        info.name = w[0];
        const size_t rank = v2 && w.size() > 1 ? std::stoul(w[1]) : 4;
        const size_t first = v2 ? 2 : 1;
        if (w.size() < first + rank)
            throw BackendError("model_load", path + ": input " + w[0] + " has fewer dims than its rank");
        for (size_t i = 0; i < rank; ++i) info.shape.push_back(std::stoll(w[first + i]));
        const std::string type = v2 && w.size() > first + rank ? w[first + rank] : "0";
        info.dtype = type == "0" ? "float32" : type == "1" ? "float16" : type == "3" ? "int32" : "int8";
        io.inputs.push_back(info);
    }
    io.outputs = words(records[3]);
    return io;
}

ProtoIo read_proto_io(const std::string& proto, const std::string& path) {
    const std::string unreadable = path + " is not a .tnnproto edgebench can read; convert the model again with "
                                          "`edgebench convert MODEL --to tnn`";
    std::string flat;
    for (char c : proto)
        if (c != '"' && c != '\n') flat += c;
    std::vector<std::string> records;
    std::istringstream split(flat);
    for (std::string record; std::getline(split, record, ',');) records.push_back(record);
    if (records.size() < 5) throw BackendError("model_load", unreadable + " (too few records)");
    ProtoIo io;
    try {
        io = parse_proto_io(records, path);
    } catch (const std::logic_error&) {  // std::stoul and .at() on a header that is not one
        throw BackendError("model_load", unreadable + " (its header or input line is malformed)");
    }
    if (io.inputs.empty() || io.outputs.empty())
        throw BackendError("model_load", path + " declares no inputs or no outputs");
    return io;
}

TNN_NS::DimsVector dims_of(const std::vector<int64_t>& shape) {
    return TNN_NS::DimsVector(shape.begin(), shape.end());
}

const char* precision_of(TNN_NS::DataType type) {
    switch (type) {
        case TNN_NS::DATA_TYPE_HALF: return "fp16";
        case TNN_NS::DATA_TYPE_BFP16: return "bf16";
        case TNN_NS::DATA_TYPE_INT8: return "int8";
        default: return "fp32";
    }
}

class TnnStream : public Stream {
public:
    TnnStream(std::shared_ptr<TNN_NS::Instance> instance, const ProtoIo& io, const std::vector<Tensor>& feeds)
        : instance_(std::move(instance)), io_(io), feeds_(feeds), results_(io.outputs.size()) {
        for (auto& feed : feeds_)
            mats_.push_back(std::make_shared<TNN_NS::Mat>(TNN_NS::DEVICE_NAIVE, TNN_NS::NCHW_FLOAT, dims_of(feed.shape),
                                                          feed.data.data()));
    }

    void copy_in() override {
        for (size_t i = 0; i < feeds_.size(); ++i)
            check(instance_->SetInputMat(mats_[i], TNN_NS::MatConvertParam(), feeds_[i].name), "inference",
                  "TNN could not take input " + feeds_[i].name);
    }

    void compute() override { check(instance_->Forward(), "inference", "TNN Forward failed"); }

    void copy_out() override {
        for (size_t i = 0; i < io_.outputs.size(); ++i) {
            std::shared_ptr<TNN_NS::Mat> mat;
            check(instance_->GetOutputMat(mat, TNN_NS::MatConvertParam(), io_.outputs[i], TNN_NS::DEVICE_NAIVE,
                                          TNN_NS::NCHW_FLOAT),
                  "inference", "TNN could not give output " + io_.outputs[i]);
            Tensor& out = results_[i];
            out.name = io_.outputs[i];
            const TNN_NS::DimsVector dims = mat->GetDims();  // a copy on each call
            out.shape.assign(dims.begin(), dims.end());
            const float* data = static_cast<const float*>(mat->GetData());
            out.data.assign(data, data + element_count(out.shape));
        }
    }

    std::vector<Tensor> outputs() override { return results_; }

    // The wall time between each layer's before and after callbacks; TNN synchronises the
    // device before calling after.
    void run_profiled(std::vector<OpEvent>& events) override {
        copy_in();
        std::chrono::steady_clock::time_point started;
        auto before = [&](std::vector<TNN_NS::Blob*>&, TNN_NS::LayerInfo*) { started = std::chrono::steady_clock::now(); };
        auto after = [&](std::vector<TNN_NS::Blob*>& outputs, TNN_NS::LayerInfo* info) {
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
            OpEvent event;
            event.name = info ? info->name : "?";
            event.type = info ? info->type_str : "?";
            event.impl = std::string(kDeviceName) + " " +
                         (outputs.empty() ? "fp32" : precision_of(outputs[0]->GetBlobDesc().data_type));
            event.ns = ns.count();
            events.push_back(std::move(event));
        };
        check(instance_->ForwardWithCallback(before, after), "inference", "TNN ForwardWithCallback failed");
        copy_out();
    }

private:
    std::shared_ptr<TNN_NS::Instance> instance_;
    const ProtoIo& io_;
    std::vector<Tensor> feeds_;  // the Mats point into these
    std::vector<std::shared_ptr<TNN_NS::Mat>> mats_;
    std::vector<Tensor> results_;
};

class TnnBackend : public Backend {
public:
    void load(const std::string& model, int threads, const std::string& precision, const Json&) override {
        const size_t suffix = model.size() >= std::strlen(kProtoSuffix) ? model.size() - std::strlen(kProtoSuffix) : 0;
        if (model.compare(suffix, std::string::npos, kProtoSuffix) != 0)
            throw BackendError("model_load", "TNN takes the .tnnproto (with its .tnnmodel beside it), not " + model);
        TNN_NS::ModelConfig model_config;
        model_config.model_type = TNN_NS::MODEL_TYPE_TNN;
        const std::string proto = read_file(model, "model");
        model_config.params = {proto, read_file(model.substr(0, suffix) + ".tnnmodel", "weights")};
        io_ = read_proto_io(proto, model);
        check(net_.Init(model_config), "model_load", "TNN could not read " + model);
        if (precision == "fp16" && !TNN_NS::CpuUtils::CpuSupportFp16())
            throw BackendError("unsupported", "this CPU has no fp16 arithmetic (ARMv8.2 asimdhp), so TNN would run "
                                              "fp16 layers in fp32; measure fp32 here");
        // ARM: NORMAL runs every layer TNN has an fp16 kernel for in fp16 (LOW would be bfloat16);
        // HIGH keeps fp32 everywhere (on OpenCL too).
        config_.device_type = kDevice;
        config_.precision = precision == "fp16" ? TNN_NS::PRECISION_NORMAL : TNN_NS::PRECISION_HIGH;
        if (on_opencl()) {
#ifdef EB_TNN_ANY_GPU_DEVICE
            device_ = first_opencl_device(true, false);  // TNN looks at every platform
#else
            device_ = first_opencl_device(false, false);
#endif
            // Every TNN OpenCL program enables half precision (its base.inc); on a device without
            // it they do not build, and TNN then crashes in its own clean-up.
            if (device_.extensions.find("cl_khr_fp16") == std::string::npos)
                throw BackendError("unsupported", "TNN's OpenCL programs need half precision (cl_khr_fp16), which " +
                                                      device_.name + " lacks: they do not build there");
            config_.device_type = TNN_NS::DEVICE_OPENCL;
        }
        threads_ = threads;
        main_ = new_instance();
    }

    Json accelerator_report() override {
        if (!on_opencl()) return Json();
        Json report = accelerator_object("OpenCL");
        report.set("device", device_.name);
        report.set("device_type", device_.type);
        report.set("software", device_.software);
        report.set("driver", device_.driver);
        report.set("api_version", device_.api_version);
        report.set("precision", config_.precision == TNN_NS::PRECISION_HIGH ? Json("fp32") : Json());
        report.set("device_memory_unavailable", "TNN does not say what an instance holds on the device");
        report.set("stages_note",
                   "Instance::Forward enqueues the layers and GetOutputMat waits for them before the download: "
                   "compute and copy_out split where the queue ends, not where the device's compute does");
        return report;
    }

    std::vector<TensorInfo> model_inputs() override { return io_.inputs; }

    std::vector<std::string> output_names() override { return io_.outputs; }

    Json boundaries() override {
        Json stages = Json::object();
        stages.set("copy_in", "Instance::SetInputMat of an NCHW float Mat over each feed (TNN converts it into the "
                              "input blob's layout and precision)");
        stages.set("compute", "Instance::Forward");
        stages.set("copy_out", "Instance::GetOutputMat of each output as an NCHW float Mat, copied into a plain buffer");
        return stages;
    }

    std::unique_ptr<Stream> make_stream(const std::vector<Tensor>& feeds) override {
        for (const auto& feed : feeds)
            for (const auto& input : io_.inputs)
                if (feed.name == input.name && feed.shape != input.shape)
                    throw BackendError("unsupported",
                                       "edgebench writes TNN files at fixed input shapes (its writer folds the "
                                       "graph at them), so TNN cannot resize '" + input.name + "'; convert the "
                                       "model at the other shape");
        std::shared_ptr<TNN_NS::Instance> instance = main_used_ ? new_instance() : main_;
        main_used_ = true;
        return std::unique_ptr<Stream>(new TnnStream(instance, io_, feeds));
    }

    std::string profile_source() override {
        return "TNN Instance::ForwardWithCallback (wall time from each layer's before to its after callback)";
    }

private:
    std::shared_ptr<TNN_NS::Instance> new_instance() {
        TNN_NS::Status status;
        TNN_NS::InputShapesMap shapes;
        for (const auto& input : io_.inputs) shapes[input.name] = dims_of(input.shape);
        std::shared_ptr<TNN_NS::Instance> instance = net_.CreateInst(config_, status, shapes);
        if ((status != TNN_NS::TNN_OK || !instance) && on_opencl())
            throw BackendError("unsupported", "TNN could not run the model on its OPENCL device (" + device_.name +
                                                  "; TNN loads libOpenCL.so, which ocl-icd-opencl-dev provides): " +
                                                  status.description());
        if (status != TNN_NS::TNN_OK || !instance) {
            const std::string said = status.description();
            // TNN's words when a layer type has no kernel (no layout) on the device.
            if (said.find("empty implemented_layouts") != std::string::npos)
                throw BackendError("unsupported", std::string("a layer of this model has no kernel on TNN's ") +
                                                      kDeviceName + " device (Erf, for one, runs only on TNN's " +
                                                      "CPU, X86 and CUDA devices); TNN says: " + said);
            throw BackendError("model_load",
                               std::string("TNN could not create an instance on its ") + kDeviceName + " device: " + said);
        }
        if (!on_opencl())
            check(instance->SetCpuNumThreads(threads_), "model_load",
                  "TNN could not use " + std::to_string(threads_) + " threads");
        return instance;
    }

    bool on_opencl() const { return compute_backend_ == "opencl"; }

    TNN_NS::TNN net_;
    TNN_NS::NetworkConfig config_;
    ProtoIo io_;
    int threads_ = 1;
    std::shared_ptr<TNN_NS::Instance> main_;
    bool main_used_ = false;
    GpuDevice device_;  // on OpenCL
};

#if defined(__aarch64__)
const std::vector<std::string> kPrecisions = {"fp32", "fp16"};
#else
const std::vector<std::string> kPrecisions = {"fp32"};
#endif

#ifdef EB_TNN_OPENCL
const std::vector<std::string> kAccelerators = {"opencl"};
#else
const std::vector<std::string> kAccelerators = {};
#endif

const RegisterBackend registered({"tnn", EB_TNN_VERSION, kPrecisions,
                                  [] { return std::unique_ptr<Backend>(new TnnBackend()); }, kAccelerators});

}  // namespace
}  // namespace eb
