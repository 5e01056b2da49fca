// MNN through its C++ API. A load that serves one stream uses the Interpreter/Session API, as
// runners/backends/mnn_backend.py does in Python: NCHW ("Caffe") host tensors copied in and out
// around runSession, and runSessionWithCallBackInfo for per-op times. A load that serves several
// streams at once (--instances N shared, or --concurrency) uses MNN's Module API, its own way of
// sharing weights: Module::load once, and every further stream a Module::clone, which shares the
// loaded constants and has its own activations; each stream runs under an Executor of its own, as
// MNN requires of concurrent modules. On Vulkan or OpenCL (backends/mnn_gpu.cpp), one stream per
// load, on a session of that forward type.
#include <MNN/Interpreter.hpp>
#include <MNN/MNNDefine.h>
#include <MNN/Tensor.hpp>
#include <MNN/expr/Executor.hpp>
#include <MNN/expr/ExecutorScope.hpp>
#include <MNN/expr/ExprCreator.hpp>
#include <MNN/expr/Module.hpp>

#include <algorithm>
#include <cstring>
#include <map>

#include "../backend.h"
#include "../measure.h"
#include "mnn_gpu.h"

namespace eb {
namespace {

namespace expr = MNN::Express;

class MnnSessionStream : public Stream {
public:
    MnnSessionStream(MNN::Interpreter& interpreter, MNN::Session* session, const std::vector<Tensor>& feeds)
        : interpreter_(interpreter), session_(session) {
        const auto& inputs = interpreter_.getSessionInputAll(session_);
        for (const auto& feed : feeds) {
            auto found = inputs.find(feed.name);
            if (found == inputs.end()) throw BackendError("bad_spec", "MNN model has no input " + feed.name);
            std::vector<int> dims(feed.shape.begin(), feed.shape.end());
            if (found->second->shape() != dims) interpreter_.resizeTensor(found->second, dims);
        }
        interpreter_.resizeSession(session_);
        for (const auto& feed : feeds) {
            MNN::Tensor* device = interpreter_.getSessionInputAll(session_).at(feed.name);
            // The device tensor's own dimension type: a model MNNConvert made from a .tflite has
            // NHWC (TENSORFLOW) tensors, whose data a CAFFE host tensor would transpose.
            std::unique_ptr<MNN::Tensor> host(new MNN::Tensor(device, device->getDimensionType()));
            if (static_cast<size_t>(host->elementSize()) != feed.data.size())
                throw BackendError("bad_spec", "input " + feed.name + " does not fit the model's shape");
            std::memcpy(host->host<float>(), feed.data.data(), feed.data.size() * sizeof(float));
            staged_.emplace_back(device, std::move(host));
        }
        for (const auto& output : interpreter_.getSessionOutputAll(session_)) {
            std::unique_ptr<MNN::Tensor> host(new MNN::Tensor(output.second, output.second->getDimensionType()));
            fetch_.push_back({output.first, output.second, std::move(host)});
        }
    }

    void copy_in() override {
        for (auto& input : staged_) input.first->copyFromHostTensor(input.second.get());
    }

    void compute() override { check(interpreter_.runSession(session_), "runSession"); }

    void copy_out() override {
        for (auto& output : fetch_) output.device->copyToHostTensor(output.host.get());
    }

    std::vector<Tensor> outputs() override {
        std::vector<Tensor> out;
        for (const auto& output : fetch_) {
            Tensor tensor;
            tensor.name = output.name;
            for (int d : output.host->shape()) tensor.shape.push_back(d);
            const float* data = output.host->host<float>();
            tensor.data.assign(data, data + output.host->elementSize());
            out.push_back(std::move(tensor));
        }
        return out;
    }

    // Each op timed between MNN's callbacks around it (ops run one after another in a session).
    void run_profiled(std::vector<OpEvent>& events) override {
        copy_in();
        int64_t started = 0;
        MNN::TensorCallBackWithInfo before = [&started](const std::vector<MNN::Tensor*>&, const MNN::OperatorInfo*) {
            started = now_ns();
            return true;
        };
        MNN::TensorCallBackWithInfo after = [&started, &events](const std::vector<MNN::Tensor*>&,
                                                                const MNN::OperatorInfo* info) {
            events.push_back(OpEvent{info->name(), info->type(), "CPU", now_ns() - started});
            return true;
        };
        check(interpreter_.runSessionWithCallBackInfo(session_, before, after), "runSessionWithCallBackInfo");
        copy_out();
    }

private:
    static void check(MNN::ErrorCode code, const char* call) {
        if (code == MNN::NO_ERROR) return;
        // resizeSession reports success even when the shapes cannot work; running says so.
        const std::string why = code == MNN::COMPUTE_SIZE_ERROR ? " (the model cannot take these input shapes)" : "";
        throw BackendError("inference", std::string("MNN ") + call + " failed with error code " +
                                            std::to_string(code) + why);
    }

    struct Fetch {
        std::string name;
        MNN::Tensor* device;
        std::unique_ptr<MNN::Tensor> host;
    };
    MNN::Interpreter& interpreter_;
    MNN::Session* session_;
    std::vector<std::pair<MNN::Tensor*, std::unique_ptr<MNN::Tensor>>> staged_;
    std::vector<Fetch> fetch_;
};

// One stream of a Module: its own module (the loaded one or a clone) and its own Executor.
class MnnModuleStream : public Stream {
public:
    MnnModuleStream(std::shared_ptr<expr::Module> module, std::shared_ptr<expr::Executor> executor,
                    const std::vector<Tensor>& feeds, std::vector<std::string> output_names)
        : module_(std::move(module)), executor_(std::move(executor)), output_names_(std::move(output_names)) {
        expr::ExecutorScope scope(executor_);
        for (const std::string& name : module_->getInfo()->inputNames) {
            auto feed = std::find_if(feeds.begin(), feeds.end(), [&name](const Tensor& t) { return t.name == name; });
            if (feed == feeds.end()) throw BackendError("bad_spec", "no feed for the MNN model's input " + name);
            std::vector<int> dims(feed->shape.begin(), feed->shape.end());
            inputs_.push_back(expr::_Input(dims, expr::NCHW, halide_type_of<float>()));
            feeds_.push_back(feed->data);
        }
        const auto& order = module_->getInfo()->outputNames;
        for (const std::string& name : output_names_)
            position_.push_back(static_cast<size_t>(std::find(order.begin(), order.end(), name) - order.begin()));
    }

    void copy_in() override {
        expr::ExecutorScope scope(executor_);
        for (size_t i = 0; i < inputs_.size(); ++i) {
            float* into = inputs_[i]->writeMap<float>();
            if (!into) throw BackendError("inference", "MNN could not map the input of " + module_->getInfo()->inputNames[i]);
            std::memcpy(into, feeds_[i].data(), feeds_[i].size() * sizeof(float));
        }
    }

    void compute() override {
        expr::ExecutorScope scope(executor_);
        results_ = module_->onForward(inputs_);
        if (results_.size() != module_->getInfo()->outputNames.size())
            throw BackendError("inference", "MNN Module::onForward failed (the model cannot take these input shapes?)");
    }

    void copy_out() override {
        expr::ExecutorScope scope(executor_);
        copied_.clear();
        for (size_t j = 0; j < output_names_.size(); ++j) {
            expr::VARP value = results_.at(position_[j]);
            if (value->getInfo()->order == expr::NC4HW4) value = expr::_Convert(value, expr::NCHW);
            const float* data = value->readMap<float>();
            if (!data) throw BackendError("inference", "MNN could not read the output " + output_names_[j]);
            Tensor tensor;
            tensor.name = output_names_[j];
            for (int d : value->getInfo()->dim) tensor.shape.push_back(d);
            tensor.data.assign(data, data + value->getInfo()->size);
            copied_.push_back(std::move(tensor));
        }
        results_.clear();
    }

    std::vector<Tensor> outputs() override { return copied_; }

private:
    std::shared_ptr<expr::Module> module_;
    std::shared_ptr<expr::Executor> executor_;
    std::vector<std::string> output_names_;  // in the result's order
    std::vector<size_t> position_;           // each one's place among the module's outputs
    std::vector<expr::VARP> inputs_;
    std::vector<std::vector<float>> feeds_;  // in the module's input order
    std::vector<expr::VARP> results_;
    std::vector<Tensor> copied_;
};

class MnnBackend : public Backend {
public:
    ~MnnBackend() override {
        if (interpreter_)
            for (MNN::Session* session : sessions_) interpreter_->releaseSession(session);
    }

    void load(const std::string& model, int threads, const std::string& precision, const Json& options) override {
        backend_config_.precision =
            precision == "fp16" ? MNN::BackendConfig::Precision_Low : MNN::BackendConfig::Precision_Normal;
        config_.type = MNN_FORWARD_CPU;
        config_.numThread = threads;
        config_.backendConfig = &backend_config_;
        const Json* streams = options.find("streams");
        const bool several = streams && streams->is_int() && streams->as_int() > 1;
        if (on_gpu()) select_gpu(precision, several);
        if (several) {
            load_module(model);
            return;
        }
        interpreter_.reset(MNN::Interpreter::createFromFile(model.c_str()));
        if (!interpreter_) throw BackendError("model_load", "MNN could not read the model " + model);
        main_ = new_session();
    }

    std::vector<TensorInfo> model_inputs() override {
        std::vector<TensorInfo> inputs;
        if (module_) {
            const auto* info = module_->getInfo();
            for (size_t i = 0; i < info->inputNames.size(); ++i) {
                TensorInfo input;
                input.name = info->inputNames[i];
                for (int d : info->inputs[i].dim) input.shape.push_back(d);
                inputs.push_back(input);
            }
            std::sort(inputs.begin(), inputs.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
            return inputs;
        }
        for (const auto& input : interpreter_->getSessionInputAll(main_)) {
            TensorInfo info;
            info.name = input.first;
            for (int d : input.second->shape()) info.shape.push_back(d);
            inputs.push_back(info);
        }
        return inputs;
    }

    // By name, as the Session API's maps (and so the Python runner) order them.
    std::vector<std::string> output_names() override {
        std::vector<std::string> names;
        if (module_) {
            names = module_->getInfo()->outputNames;
            std::sort(names.begin(), names.end());
            return names;
        }
        for (const auto& output : interpreter_->getSessionOutputAll(main_)) names.push_back(output.first);
        return names;
    }

    Json boundaries() override {
        Json stages = Json::object();
        if (module_) {
            stages.set("copy_in", "a copy of each input into its input VARP's host memory (VARP::writeMap)");
            stages.set("compute", "Module::onForward: the inputs taken into the module's session, then its run");
            stages.set("copy_out", "VARP::readMap of each output (converted to NCHW where MNN keeps NC4HW4), copied out");
            return stages;
        }
        stages.set("copy_in", "Tensor::copyFromHostTensor of a host tensor into each session input");
        stages.set("compute", "Interpreter::runSession");
        stages.set("copy_out", "Tensor::copyToHostTensor of each output into a host tensor");
        return stages;
    }

    std::unique_ptr<Stream> make_stream(const std::vector<Tensor>& feeds) override {
        const bool first = !main_used_;
        main_used_ = true;
        if (module_) return module_stream(first, feeds);
        MNN::Session* session = first ? main_ : new_session();
        return std::unique_ptr<Stream>(new MnnSessionStream(*interpreter_, session, feeds));
    }

    // The next stream resizes the first session (or runs the loaded module) instead of adding one.
    void reuse_streams() override { main_used_ = false; }

    std::string profile_source() override {
        return "MNN Interpreter::runSessionWithCallBackInfo: each op timed between its before and after callbacks";
    }

    Json accelerator_report() override {
        return on_gpu() ? mnn_gpu::report(device_, compute_backend_, precision_) : Json();
    }

private:
    bool on_gpu() const { return compute_backend_ != "cpu"; }

    // A session on MNN's Vulkan or OpenCL runtime, once the device it will take is found. On a
    // GPU, numThread is MNN's GPU mode: 4, MNN_GPU_TUNING_WIDE, its default; Precision_High
    // keeps fp32 there (Normal may be fp16).
    void select_gpu(const std::string& precision, bool several) {
        if (several)
            throw BackendError("unsupported", "edgebench-native runs MNN on " + compute_backend_ +
                                                  " one stream per load (--instances N separate): several "
                                                  "streams on one load use MNN's Module API, which it runs "
                                                  "on the CPU");
        device_ = mnn_gpu::find_device(compute_backend_);
        precision_ = precision;
        config_.type = mnn_gpu::forward_type(compute_backend_);
        config_.backupType = MNN_FORWARD_CPU;
        config_.numThread = 4;
        if (precision == "fp32") backend_config_.precision = MNN::BackendConfig::Precision_High;
    }

    void load_module(const std::string& model) {
        runtime_.reset(expr::Executor::RuntimeManager::createRuntimeManager(config_));
        expr::Module::Config config;
        config.shapeMutable = true;  // a shape change resizes the module
        module_.reset(expr::Module::load({}, {}, model.c_str(), runtime_, &config));
        if (!module_) throw BackendError("model_load", "MNN could not load the model " + model + " as a Module");
    }

    // The first stream runs the loaded module; every other one a clone of it, which shares the
    // loaded weights. Each is made, and later run, under an Executor of its own.
    std::unique_ptr<Stream> module_stream(bool first, const std::vector<Tensor>& feeds) {
        MNN::BackendConfig executor_config;
        std::shared_ptr<expr::Executor> executor = expr::Executor::newExecutor(MNN_FORWARD_CPU, executor_config, 1);
        std::shared_ptr<expr::Module> module = module_;
        if (!first) {
            expr::ExecutorScope scope(executor);
            module.reset(expr::Module::clone(module_.get()));
            if (!module) throw BackendError("model_load", "MNN could not clone the loaded Module for another stream");
        }
        return std::unique_ptr<Stream>(new MnnModuleStream(module, executor, feeds, output_names()));
    }

    MNN::Session* new_session() {
        MNN::Session* session = interpreter_->createSession(config_);
        if (!session) throw BackendError("model_load", "MNN could not create a session for the model");
        sessions_.push_back(session);
        if (on_gpu()) mnn_gpu::check_session(*interpreter_, session, compute_backend_);
        return session;
    }

    MNN::ScheduleConfig config_;
    MNN::BackendConfig backend_config_;
    std::unique_ptr<MNN::Interpreter> interpreter_;
    std::vector<MNN::Session*> sessions_;
    MNN::Session* main_ = nullptr;
    std::shared_ptr<expr::Executor::RuntimeManager> runtime_;
    std::shared_ptr<expr::Module> module_;
    bool main_used_ = false;
    GpuDevice device_;  // on a GPU backend
    std::string precision_;
};

const RegisterBackend registered({"mnn", MNN::getVersion(), {"fp32", "fp16", "int8", "int8-weights"},
                                  [] { return std::unique_ptr<Backend>(new MnnBackend()); },
                                  mnn_gpu::accelerators()});

}  // namespace
}  // namespace eb
