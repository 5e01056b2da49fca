// The contract every framework backend of the native runner fulfils (as runners/backends/base.py
// for the Python runner). A backend file registers itself with a static RegisterBackend, so a
// binary holds exactly the backends whose files were compiled into it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "generative.h"
#include "json.h"

namespace eb {

// A failure with one of runners/protocol/__init__.py's error kinds.
class BackendError : public std::runtime_error {
public:
    BackendError(std::string kind, const std::string& message, std::string detail = "")
        : std::runtime_error(message), kind(std::move(kind)), detail(std::move(detail)) {}
    std::string kind;
    std::string detail;
};

struct TensorInfo {
    std::string name;
    std::vector<int64_t> shape;
    std::string dtype = "float32";
};

// A float32 tensor in the ONNX model's names and layout.
struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};

int64_t element_count(const std::vector<int64_t>& shape);

// One call of one layer, timed by the framework's own per-layer hook.
struct OpEvent {
    std::string name;
    std::string type;
    std::string impl;  // the kernel or device that ran it, where the framework says; else ""
    int64_t ns = 0;
};

// One inference on fixed inputs, in the three stages the framework's API separates (as
// runners/backends/base.py's Stream): run() is copy_in, compute, copy_out.
class Stream {
public:
    virtual ~Stream() = default;
    // Each throws BackendError("inference", ...) on failure.
    virtual void copy_in() = 0;
    virtual void compute() = 0;
    virtual void copy_out() = 0;
    void run() {
        copy_in();
        compute();
        copy_out();
    }
    // The last copy_out's outputs, in ONNX names and layout (outside any timed region).
    virtual std::vector<Tensor> outputs() = 0;
    // One whole inference with the framework's per-layer timer on: one event per layer call
    // appended to `events`. Backends without one throw BackendError("unsupported", why).
    virtual void run_profiled(std::vector<OpEvent>& events) {
        (void)events;
        throw BackendError("unsupported", "this backend has no per-layer timer");
    }
};

class Backend {
public:
    virtual ~Backend() = default;
    // The spec's compute backend ("cpu", or one of the entry's accelerators), set before load.
    void set_compute_backend(const std::string& name) { compute_backend_ = name; }
    // `options` are the spec's, with "streams": how many streams this load will serve at once
    // (1 for each load of --instances N separate; N for shared instances or concurrent streams).
    virtual void load(const std::string& model, int threads, const std::string& precision,
                      const Json& options) = 0;
    virtual std::vector<TensorInfo> model_inputs() = 0;
    virtual std::vector<std::string> output_names() = 0;
    // Feeds in ONNX layout, one per model input (same order as model_inputs()). Every stream of
    // one load shares its weights (--instances N shared); feeds of another shape than the
    // earlier streams' resize, where the artifact allows it.
    virtual std::unique_ptr<Stream> make_stream(const std::vector<Tensor>& feeds) = 0;
    // Per stage ("copy_in", "compute", "copy_out"), what the framework does in it: the result's
    // stages.boundaries, as the Python backend's BOUNDARIES.
    virtual Json boundaries() = 0;
    // Why one load cannot serve several instances at once ("" when make_stream can).
    virtual std::string no_shared_instances() { return ""; }
    // Let the next make_stream take over the earlier streams' state (a shape change resizes
    // the one session instead of making another); optional.
    virtual void reuse_streams() {}
    // Where run_profiled's times come from ("MNN runSessionWithCallBackInfo"), for the result.
    virtual std::string profile_source() { return ""; }
    // On an accelerator, after the first inference: what ran there, as the result's
    // "accelerator" object (the keys of edgebench/results/accelerator_part.py's AcceleratorRun);
    // null on the CPU.
    virtual Json accelerator_report() { return Json(); }

protected:
    std::string compute_backend_ = "cpu";
};

struct BackendEntry {
    std::string framework;
    std::string version;
    std::vector<std::string> precisions;
    std::function<std::unique_ptr<Backend>()> make;
    // The accelerators this build selects besides the CPU ("vulkan", "opencl").
    std::vector<std::string> accelerators = {};
    // A generative runtime (its cells carry a generation spec): makes its backend; `make` is
    // then unused.
    std::function<std::unique_ptr<GenerativeBackend>()> make_generative = {};
};

// The result's "accelerator" object with every AcceleratorRun key, those not given as null.
Json accelerator_object(const std::string& api);
// A framework asked for an accelerator that ran on the CPU instead (runners/protocol/__init__.py's
// "fallback" kind).
BackendError fallback_error(const std::string& framework, const std::string& backend, const std::string& words);

std::vector<BackendEntry>& backend_registry();

struct RegisterBackend {
    explicit RegisterBackend(BackendEntry entry) { backend_registry().push_back(std::move(entry)); }
};

}  // namespace eb
