// io.json beside a converted artifact (runners/protocol/io_map.py documents it): per input and
// output the ONNX name and shape, the artifact's name and shape, and an optional axis order.
#pragma once

#include <string>
#include <vector>

#include "backend.h"

namespace eb {

struct TensorMap {
    std::string onnx_name;
    std::vector<int64_t> onnx_shape;
    std::string name;
    std::vector<int64_t> shape;
    std::vector<int> perm;  // empty: none

    // ONNX-layout values -> the artifact's layout (transposed by perm); shape: the artifact's.
    std::vector<float> to_artifact(const Tensor& value, std::vector<int64_t>& shape_out) const;
    // The artifact's values with their shape -> an ONNX-layout tensor named onnx_name.
    Tensor to_onnx(std::vector<float> data, const std::vector<int64_t>& shape) const;
};

struct IoMap {
    std::vector<TensorMap> inputs;
    std::vector<TensorMap> outputs;
    // The io.json in the model's folder; false when there is none. Throws BackendError when it
    // cannot be read.
    static bool beside(const std::string& model_path, IoMap& out);
};

// `shape` made concrete for a value of `value_shape` (runners/protocol/io_map.py's _fit): fixed
// dims must hold the value's element count; one -1 takes what is left of it; several take the
// value's own dims, the value lacking only leading 1s of `shape` (ncnn blobs have no batch).
bool fit_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& value_shape,
               std::vector<int64_t>& fitted);

std::vector<float> transpose(const std::vector<float>& data, const std::vector<int64_t>& shape,
                             const std::vector<int>& perm);

}  // namespace eb
