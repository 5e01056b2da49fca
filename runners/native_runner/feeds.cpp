#include "feeds.h"

#include <cstring>
#include <map>

#include "npz.h"
#include "seeded.h"

namespace eb {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
}

std::string base_name(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::vector<TensorInfo> resolve_inputs(const Json& requested, const std::vector<TensorInfo>& model_inputs) {
    if (!requested.is_array()) return model_inputs;
    std::vector<TensorInfo> resolved = model_inputs;
    for (const auto& item : requested.items()) {
        const Json* name = item.find("name");
        const Json* shape = item.find("shape");
        if (!name || !name->is_string() || !shape || !shape->is_array())
            throw BackendError("bad_spec", "each spec input needs a name and a shape");
        bool known = false;
        for (auto& input : resolved)
            if (input.name == name->as_string()) {
                known = true;
                input.shape.clear();
                for (const auto& d : shape->items()) input.shape.push_back(d.as_int());
                if (const Json* dtype = item.find("dtype"); dtype && dtype->is_string()) input.dtype = dtype->as_string();
            }
        if (!known) {
            std::string names;
            for (const auto& input : model_inputs) names += (names.empty() ? "" : ", ") + input.name;
            throw BackendError("bad_spec", "input '" + name->as_string() + "' is not an input of the model (it has " + names + ")");
        }
    }
    return resolved;
}

void check_fixed_shapes(const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& model_inputs,
                        const std::string& model_path) {
    for (const auto& wanted : inputs)
        for (const auto& have : model_inputs) {
            if (have.name != wanted.name || have.shape.empty() || have.shape.size() != wanted.shape.size()) continue;
            for (size_t i = 0; i < have.shape.size(); ++i)
                if (have.shape[i] > 0 && have.shape[i] != wanted.shape[i])
                    throw BackendError("bad_spec", base_name(model_path) + " has a fixed input " + wanted.name +
                                                       " of shape " + shape_text(have.shape) + ", not " +
                                                       shape_text(wanted.shape) +
                                                       ": convert it for that shape, or use a dynamic artifact "
                                                       "(--shape-mode dynamic)");
        }
}

std::vector<Tensor> make_feeds(const std::vector<TensorInfo>& inputs, uint64_t seed,
                               const std::string& input_file, Json& described) {
    std::map<std::string, NpyArray> file;
    if (!input_file.empty()) {
        try {
            file = read_npz(input_file);
        } catch (const std::exception& exc) {
            throw BackendError("bad_spec", std::string("cannot read the inputs file: ") + exc.what());
        }
    }
    std::vector<Tensor> feeds;
    described = Json::array();
    for (const auto& input : inputs) {
        for (int64_t d : input.shape)
            if (d < 0) throw BackendError("bad_spec", "input '" + input.name + "' has dynamic dimensions; give a concrete shape");
        if (input.dtype != "float32")
            throw BackendError("unsupported", "input '" + input.name + "' is " + input.dtype +
                                                  "; the native runner feeds float32 inputs only");
        Tensor feed{input.name, input.shape, std::vector<float>(static_cast<size_t>(element_count(input.shape)))};
        Json entry = Json::object();
        entry.set("name", input.name);
        entry.set("shape", Json::array_of(input.shape));
        entry.set("dtype", input.dtype);
        if (!input_file.empty()) {
            auto found = file.find(input.name);
            if (found == file.end())
                throw BackendError("bad_spec", "the inputs file has no array for input '" + input.name + "'");
            const NpyArray& array = found->second;
            if (array.descr != "<f4" || array.data.size() != feed.data.size() * sizeof(float))
                throw BackendError("bad_spec", "the inputs file's '" + input.name + "' is " + array.descr +
                                                   " with " + std::to_string(array.data.size()) +
                                                   " bytes; the model wants float32 of its shape");
            std::memcpy(feed.data.data(), array.data.data(), array.data.size());
            entry.set("source", "file");
        } else {
            seeded_floats(seed, input.name, feed.data.data(), feed.data.size());
        }
        described.push(entry);
        feeds.push_back(std::move(feed));
    }
    return feeds;
}

}  // namespace eb
