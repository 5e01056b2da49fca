// ncnn through its C++ API (Net + Extractor), as runners/backends/ncnn_backend.py does in Python.
// One Net serves every stream (each inference makes its own Extractor): shared weights. On
// Vulkan, backends/ncnn_vulkan.cpp does what differs.
#include <cstring>
#include <fstream>
#include <sstream>

#include "../backend.h"
#include "../io_map.h"
#include "../measure.h"
#include "ncnn_param.h"
#include "ncnn_vulkan.h"
#include "net.h"

namespace eb {

std::vector<float> from_mat(const ncnn::Mat& mat, std::vector<int64_t>& shape) {
    switch (mat.dims) {
        case 1: shape = {mat.w}; break;
        case 2: shape = {mat.h, mat.w}; break;
        case 3: shape = {mat.c, mat.h, mat.w}; break;
        default: shape = {mat.c, mat.d, mat.h, mat.w}; break;
    }
    const size_t plane = static_cast<size_t>(mat.w) * mat.h * mat.d;
    std::vector<float> data(plane * static_cast<size_t>(mat.c));
    for (int q = 0; q < mat.c; ++q) std::memcpy(data.data() + q * plane, mat.channel(q).data, plane * sizeof(float));
    return data;
}

namespace {

// ncnn Mats carry no batch axis and pad each channel to cstep: copy channel by channel.
ncnn::Mat to_mat(const std::vector<float>& data, std::vector<int64_t> shape, const std::string& name) {
    if (shape.size() > 3 && shape[0] == 1) shape.erase(shape.begin());
    ncnn::Mat mat;
    switch (shape.size()) {
        case 1: mat.create(static_cast<int>(shape[0])); break;
        case 2: mat.create(static_cast<int>(shape[1]), static_cast<int>(shape[0])); break;
        case 3: mat.create(static_cast<int>(shape[2]), static_cast<int>(shape[1]), static_cast<int>(shape[0])); break;
        case 4:
            mat.create(static_cast<int>(shape[3]), static_cast<int>(shape[2]), static_cast<int>(shape[1]),
                       static_cast<int>(shape[0]));
            break;
        default:
            throw BackendError("unsupported", "ncnn takes inputs of 1 to 4 axes after the batch; '" + name + "' has " +
                                                  std::to_string(shape.size()));
    }
    if (mat.empty()) throw std::bad_alloc();
    const size_t plane = static_cast<size_t>(mat.w) * mat.h * mat.d;
    for (int q = 0; q < mat.c; ++q)
        std::memcpy(mat.channel(q).data, data.data() + q * plane, plane * sizeof(float));
    return mat;
}

class NcnnStream : public Stream {
public:
    NcnnStream(ncnn::Net& net, const IoMap& io, std::vector<std::pair<std::string, ncnn::Mat>> inputs)
        : net_(net), io_(io), inputs_(std::move(inputs)), results_(io.outputs.size()),
          copied_(io.outputs.size()), shapes_(io.outputs.size()) {}

    void copy_in() override {
        extractor_.reset(new ncnn::Extractor(net_.create_extractor()));
        for (const auto& input : inputs_)
            if (extractor_->input(input.first.c_str(), input.second) != 0)
                throw BackendError("inference", "ncnn has no input blob " + input.first);
    }

    void compute() override {
        for (size_t i = 0; i < io_.outputs.size(); ++i)
            if (extractor_->extract(io_.outputs[i].name.c_str(), results_[i]) != 0)
                throw BackendError("inference", "ncnn could not extract blob " + io_.outputs[i].name);
    }

    void copy_out() override {
        for (size_t i = 0; i < results_.size(); ++i) copied_[i] = from_mat(results_[i], shapes_[i]);
        extractor_.reset();
    }

    std::vector<Tensor> outputs() override {
        std::vector<Tensor> out;
        for (size_t i = 0; i < io_.outputs.size(); ++i) out.push_back(io_.outputs[i].to_onnx(copied_[i], shapes_[i]));
        return out;
    }

    // A stock ncnn build times no layer (that takes NCNN_BENCHMARK), but an Extractor out of
    // light mode keeps every blob it computed, so extracting each layer's first output in layer
    // order computes exactly that layer per call: its inputs are already there. Out of light
    // mode a layer that would run in place copies its input first.
    void run_profiled(std::vector<OpEvent>& events) override {
        ncnn::Extractor extractor = net_.create_extractor();
        extractor.set_light_mode(false);
        for (const auto& input : inputs_)
            if (extractor.input(input.first.c_str(), input.second) != 0)
                throw BackendError("inference", "ncnn has no input blob " + input.first);
        for (const ncnn::Layer* layer : net_.layers()) {
            if (layer->type == "Input" || layer->tops.empty()) continue;
            ncnn::Mat top;
            const int64_t t0 = now_ns();
            const int status = extractor.extract(layer->tops[0], top, 1);  // 1: left as computed
            const int64_t t1 = now_ns();
            if (status != 0) throw BackendError("inference", "ncnn could not compute layer " + layer->name);
            events.push_back(OpEvent{layer->name, layer->type, layout(top), t1 - t0});
        }
        for (size_t i = 0; i < io_.outputs.size(); ++i)
            if (extractor.extract(io_.outputs[i].name.c_str(), results_[i]) != 0)
                throw BackendError("inference", "ncnn could not extract blob " + io_.outputs[i].name);
        for (size_t i = 0; i < results_.size(); ++i) copied_[i] = from_mat(results_[i], shapes_[i]);
        results_.assign(results_.size(), ncnn::Mat());
    }

private:
    // What the layer's output says of the kernel that made it: ncnn's element packing (pack4 on
    // SSE and NEON, pack8 on AVX, pack16 on AVX-512) and the bits of each element.
    static std::string layout(const ncnn::Mat& top) {
        if (top.empty()) return "";
        return "pack" + std::to_string(top.elempack) + " " + (top.elembits() == 16 ? "16-bit" : "fp32");
    }

    ncnn::Net& net_;
    const IoMap& io_;
    std::vector<std::pair<std::string, ncnn::Mat>> inputs_;
    std::unique_ptr<ncnn::Extractor> extractor_;
    std::vector<ncnn::Mat> results_;
    std::vector<std::vector<float>> copied_;
    std::vector<std::vector<int64_t>> shapes_;
};

class NcnnBackend : public Backend {
public:
    void load(const std::string& model, int threads, const std::string& precision, const Json&) override {
        if (!IoMap::beside(model, io_))
            throw BackendError("model_load", "ncnn needs io.json beside " + model +
                                                 " (blob names and shapes); convert with edgebench");
        const bool fp16 = precision == "fp16";
        // Explicit: ncnn's own defaults keep activations in fp16 on many CPUs, which would make
        // an "fp32" cell silently half precision.
        net_.opt.use_fp16_storage = fp16;
        net_.opt.use_fp16_arithmetic = fp16;
        net_.opt.use_fp16_packed = fp16;
        net_.opt.use_bf16_storage = false;
        // int8: the layers edgebench wrote with int8_scale_term run ncnn's int8 kernels.
        net_.opt.use_int8_inference = precision == "int8";
        net_.opt.num_threads = threads;
        if (on_vulkan()) memory_before_ = ncnn_vulkan::prepare(net_, precision);
        const std::string param = param_text(model);
        // Net::load_param skips a layer whose own load_param fails, then dereferences the gap.
        const std::string unread = ncnn_param::unreadable_layers(param);
        if (!unread.empty())
            throw BackendError("model_load", "ncnn " NCNN_VERSION_STRING " could not read layer " + unread + " of " +
                                                 model + " (ncnn's reason is on stderr); the pnnx that wrote it "
                                                 "may write for a newer ncnn than edgebench-native links");
        if (net_.load_param_mem(param.c_str()) != 0) throw BackendError("model_load", "ncnn could not parse " + model);
        if (on_vulkan()) ncnn_vulkan::check_kept(net_);
        std::string weights = model.substr(0, model.rfind('.')) + ".bin";
        FILE* probe = std::fopen(weights.c_str(), "rb");
        if (probe) {
            std::fclose(probe);
            if (net_.load_model(weights.c_str()) != 0)
                throw BackendError("model_load", "ncnn could not load weights " + weights);
        }
    }

    std::vector<TensorInfo> model_inputs() override {
        std::vector<TensorInfo> inputs;
        for (const auto& t : io_.inputs) inputs.push_back({t.onnx_name, t.onnx_shape, "float32"});
        return inputs;
    }

    std::vector<std::string> output_names() override {
        std::vector<std::string> names;
        for (const auto& t : io_.outputs) names.push_back(t.onnx_name);
        return names;
    }

    Json boundaries() override {
        if (on_vulkan()) return ncnn_vulkan::boundaries();
        Json stages = Json::object();
        stages.set("copy_in", "Net::create_extractor and Extractor::input of Mats made once (no copy)");
        stages.set("compute", "Extractor::extract of every output: ncnn computes the layers lazily in extract");
        stages.set("copy_out", "a copy of each output Mat's channels into a plain buffer");
        return stages;
    }

    std::string profile_source() override {
        return "ncnn Extractor::extract of each layer's first output in layer order, light mode off, timed per call";
    }

    std::unique_ptr<Stream> make_stream(const std::vector<Tensor>& feeds) override {
        std::vector<std::pair<std::string, ncnn::Mat>> inputs;
        for (size_t i = 0; i < io_.inputs.size() && i < feeds.size(); ++i) {
            std::vector<int64_t> shape;
            std::vector<float> data = io_.inputs[i].to_artifact(feeds[i], shape);
            inputs.emplace_back(io_.inputs[i].name, to_mat(data, shape, io_.inputs[i].onnx_name));
        }
        if (on_vulkan()) return ncnn_vulkan::make_stream(net_, io_, std::move(inputs));
        return std::unique_ptr<Stream>(new NcnnStream(net_, io_, std::move(inputs)));
    }

    Json accelerator_report() override { return on_vulkan() ? ncnn_vulkan::report(net_, memory_before_) : Json(); }

private:
    bool on_vulkan() const { return compute_backend_ == "vulkan"; }

    // The param file as this ncnn reads it (ncnn_param.h).
    static std::string param_text(const std::string& model) {
        std::ifstream in(model, std::ios::binary);
        if (!in) throw BackendError("model_load", "ncnn could not read " + model);
        std::ostringstream text;
        text << in.rdbuf();
#if NCNN_BATCH
        return text.str();
#else
        return ncnn_param::without_batch(text.str());
#endif
    }

    ncnn::Net net_;
    IoMap io_;
    int64_t memory_before_ = -1;  // device memory before the load, on Vulkan
};

const RegisterBackend registered({"ncnn", NCNN_VERSION_STRING, {"fp32", "fp16", "int8"},
                                  [] { return std::unique_ptr<Backend>(new NcnnBackend()); },
                                  ncnn_vulkan::accelerators()});

}  // namespace
}  // namespace eb
