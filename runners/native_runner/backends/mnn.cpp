// MNN through its C++ Interpreter/Session API, as runners/backends/mnn_backend.py does in
// Python: one session per stream, NCHW ("Caffe") host tensors copied in and out around
// runSession.
#include <MNN/Interpreter.hpp>
#include <MNN/MNNDefine.h>
#include <MNN/Tensor.hpp>

#include <cstring>
#include <mutex>

#include "../backend.h"

namespace eb {
namespace {

class MnnStream : public Stream {
public:
    MnnStream(MNN::Interpreter& interpreter, MNN::Session* session, const std::vector<Tensor>& feeds)
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
            std::unique_ptr<MNN::Tensor> host(new MNN::Tensor(device, MNN::Tensor::CAFFE));
            if (static_cast<size_t>(host->elementSize()) != feed.data.size())
                throw BackendError("bad_spec", "input " + feed.name + " does not fit the model's shape");
            std::memcpy(host->host<float>(), feed.data.data(), feed.data.size() * sizeof(float));
            staged_.emplace_back(device, std::move(host));
        }
        for (const auto& output : interpreter_.getSessionOutputAll(session_)) {
            std::unique_ptr<MNN::Tensor> host(new MNN::Tensor(output.second, MNN::Tensor::CAFFE));
            fetch_.push_back({output.first, output.second, std::move(host)});
        }
    }

    void copy_in() override {
        for (auto& input : staged_) input.first->copyFromHostTensor(input.second.get());
    }

    void compute() override {
        const MNN::ErrorCode code = interpreter_.runSession(session_);
        if (code != MNN::NO_ERROR)
            throw BackendError("inference", "MNN runSession failed with error code " + std::to_string(code));
    }

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

private:
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

class MnnBackend : public Backend {
public:
    ~MnnBackend() override {
        if (interpreter_)
            for (MNN::Session* session : sessions_) interpreter_->releaseSession(session);
    }

    void load(const std::string& model, int threads, const std::string& precision, const Json&) override {
        interpreter_.reset(MNN::Interpreter::createFromFile(model.c_str()));
        if (!interpreter_) throw BackendError("model_load", "MNN could not read the model " + model);
        backend_config_.precision =
            precision == "fp16" ? MNN::BackendConfig::Precision_Low : MNN::BackendConfig::Precision_Normal;
        config_.type = MNN_FORWARD_CPU;
        config_.numThread = threads;
        config_.backendConfig = &backend_config_;
        main_ = new_session();
    }

    std::vector<TensorInfo> model_inputs() override {
        std::vector<TensorInfo> inputs;
        for (const auto& input : interpreter_->getSessionInputAll(main_)) {
            TensorInfo info;
            info.name = input.first;
            for (int d : input.second->shape()) info.shape.push_back(d);
            inputs.push_back(info);
        }
        return inputs;
    }

    std::vector<std::string> output_names() override {
        std::vector<std::string> names;
        for (const auto& output : interpreter_->getSessionOutputAll(main_)) names.push_back(output.first);
        return names;
    }

    Json boundaries() override {
        Json stages = Json::object();
        stages.set("copy_in", "Tensor::copyFromHostTensor of a host tensor into each session input");
        stages.set("compute", "Interpreter::runSession");
        stages.set("copy_out", "Tensor::copyToHostTensor of each output into a host tensor");
        return stages;
    }

    std::unique_ptr<Stream> make_stream(const std::vector<Tensor>& feeds) override {
        MNN::Session* session = main_used_ ? new_session() : main_;
        main_used_ = true;
        return std::unique_ptr<Stream>(new MnnStream(*interpreter_, session, feeds));
    }

private:
    MNN::Session* new_session() {
        MNN::Session* session = interpreter_->createSession(config_);
        if (!session) throw BackendError("model_load", "MNN could not create a session for the model");
        sessions_.push_back(session);
        return session;
    }

    std::unique_ptr<MNN::Interpreter> interpreter_;
    MNN::ScheduleConfig config_;
    MNN::BackendConfig backend_config_;
    std::vector<MNN::Session*> sessions_;
    MNN::Session* main_ = nullptr;
    bool main_used_ = false;
};

const RegisterBackend registered({"mnn", MNN::getVersion(), {"fp32", "fp16", "int8", "int8-weights"},
                                  [] { return std::unique_ptr<Backend>(new MnnBackend()); }});

}  // namespace
}  // namespace eb
