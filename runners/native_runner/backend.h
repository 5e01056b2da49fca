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

#include "json.h"

namespace eb {

// A failure with one of runners/protocol.py's error kinds.
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

class Stream {
public:
    virtual ~Stream() = default;
    // One inference on the stream's fixed inputs. Throws BackendError("inference", ...).
    virtual void run() = 0;
    // The last run's outputs, in ONNX names and layout (outside any timed region).
    virtual std::vector<Tensor> outputs() = 0;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual void load(const std::string& model, int threads, const std::string& precision,
                      const Json& options) = 0;
    virtual std::vector<TensorInfo> model_inputs() = 0;
    virtual std::vector<std::string> output_names() = 0;
    // Feeds in ONNX layout, one per model input (same order as model_inputs()).
    virtual std::unique_ptr<Stream> make_stream(const std::vector<Tensor>& feeds) = 0;
};

struct BackendEntry {
    std::string framework;
    std::string version;
    std::vector<std::string> precisions;
    std::function<std::unique_ptr<Backend>()> make;
};

std::vector<BackendEntry>& backend_registry();

struct RegisterBackend {
    explicit RegisterBackend(BackendEntry entry) { backend_registry().push_back(std::move(entry)); }
};

}  // namespace eb
