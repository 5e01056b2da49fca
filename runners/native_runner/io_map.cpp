#include "io_map.h"

#include "process.h"

namespace eb {

int64_t element_count(const std::vector<int64_t>& shape) {
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    return total;
}

std::vector<float> transpose(const std::vector<float>& data, const std::vector<int64_t>& shape,
                             const std::vector<int>& perm) {
    const size_t rank = shape.size();
    std::vector<int64_t> out_shape(rank), in_strides(rank, 1);
    for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * shape[i];
    for (size_t i = 0; i < rank; ++i) out_shape[i] = shape[static_cast<size_t>(perm[i])];
    std::vector<float> out(data.size());
    std::vector<int64_t> index(rank, 0);
    for (size_t n = 0; n < out.size(); ++n) {
        int64_t source = 0;
        for (size_t i = 0; i < rank; ++i) source += index[i] * in_strides[static_cast<size_t>(perm[i])];
        out[n] = data[static_cast<size_t>(source)];
        for (size_t i = rank; i-- > 0;) {
            if (++index[i] < out_shape[i]) break;
            index[i] = 0;
        }
    }
    return out;
}

bool fit_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& value_shape,
               std::vector<int64_t>& fitted) {
    if (shape.empty()) return false;
    const int64_t size = element_count(value_shape);
    int64_t known = 1;
    std::vector<size_t> unknown;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] < 0) unknown.push_back(i);
        else known *= shape[i];
    }
    fitted = shape;
    if (unknown.empty()) return size == known;
    if (unknown.size() == 1) {
        if (known <= 0 || size % known) return false;
        fitted[unknown[0]] = size / known;
        return true;
    }
    if (value_shape.size() > shape.size()) return false;
    const size_t missing = shape.size() - value_shape.size();
    for (size_t i = 0; i < missing; ++i)
        if (shape[i] != 1) return false;
    for (size_t i = 0; i < shape.size(); ++i) {
        fitted[i] = i < missing ? 1 : value_shape[i - missing];
        if (shape[i] >= 0 && shape[i] != fitted[i]) return false;
    }
    return true;
}

std::vector<float> TensorMap::to_artifact(const Tensor& value, std::vector<int64_t>& shape_out) const {
    std::vector<float> data = value.data;
    shape_out = value.shape;
    if (!perm.empty() && perm.size() == value.shape.size()) {
        data = transpose(data, value.shape, perm);
        std::vector<int64_t> permuted;
        for (int axis : perm) permuted.push_back(value.shape[static_cast<size_t>(axis)]);
        shape_out = permuted;
    }
    std::vector<int64_t> fitted;
    if (fit_shape(shape, shape_out, fitted)) shape_out = fitted;
    return data;
}

Tensor TensorMap::to_onnx(std::vector<float> data, const std::vector<int64_t>& shape_in) const {
    Tensor out{onnx_name, shape_in, std::move(data)};
    const int64_t size = static_cast<int64_t>(out.data.size());
    if (!perm.empty()) {
        if (out.shape.size() != perm.size() && size == element_count(shape)) out.shape = shape;
        if (out.shape.size() == perm.size()) {
            std::vector<int> inverse(perm.size());
            for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int>(i);
            std::vector<int64_t> back;
            for (int axis : inverse) back.push_back(out.shape[static_cast<size_t>(axis)]);
            out.data = transpose(out.data, out.shape, inverse);
            out.shape = back;
        }
    }
    std::vector<int64_t> fitted;
    if (fit_shape(onnx_shape, out.shape, fitted)) out.shape = fitted;
    return out;
}

namespace {

std::vector<int64_t> ints(const Json* value) {
    std::vector<int64_t> out;
    if (value && value->is_array())
        for (const auto& item : value->items()) out.push_back(item.as_int());
    return out;
}

TensorMap tensor_map(const Json& entry) {
    TensorMap map;
    const Json* onnx_name = entry.find("onnx_name");
    const Json* name = entry.find("name");
    map.onnx_name = onnx_name && onnx_name->is_string() ? onnx_name->as_string()
                    : name && name->is_string()         ? name->as_string() : "";
    map.name = name && name->is_string() ? name->as_string() : map.onnx_name;
    map.onnx_shape = ints(entry.find("onnx_shape"));
    if (map.onnx_shape.empty()) map.onnx_shape = ints(entry.find("shape"));
    map.shape = ints(entry.find("shape"));
    if (map.shape.empty()) map.shape = map.onnx_shape;
    for (int64_t axis : ints(entry.find("perm"))) map.perm.push_back(static_cast<int>(axis));
    return map;
}

}  // namespace

bool IoMap::beside(const std::string& model_path, IoMap& out) {
    size_t slash = model_path.rfind('/');
    std::string folder = slash == std::string::npos ? "." : model_path.substr(0, slash);
    std::string path = folder + "/io.json";
    std::string text = read_text(path, 16 << 20);
    if (text.empty()) return false;
    try {
        Json data = Json::parse(text);
        if (const Json* inputs = data.find("inputs"))
            for (const auto& entry : inputs->items()) out.inputs.push_back(tensor_map(entry));
        if (const Json* outputs = data.find("outputs"))
            for (const auto& entry : outputs->items()) out.outputs.push_back(tensor_map(entry));
    } catch (const JsonError& exc) {
        throw BackendError("model_load", "cannot read " + path + ": " + exc.what());
    }
    return true;
}

}  // namespace eb
