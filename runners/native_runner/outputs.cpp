#include "outputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "npz.h"

namespace eb {

Json summarize_outputs(const std::vector<Tensor>& outputs, size_t sample_size) {
    Json summary = Json::array();
    for (const auto& tensor : outputs) {
        Json entry = Json::object();
        entry.set("name", tensor.name);
        entry.set("shape", Json::array_of(tensor.shape));
        entry.set("dtype", "float32");
        const std::vector<float>& flat = tensor.data;
        if (!flat.empty()) {
            std::vector<double> finite;
            finite.reserve(flat.size());
            for (float v : flat)
                if (std::isfinite(v)) finite.push_back(v);
            entry.set("nonfinite", static_cast<int64_t>(flat.size() - finite.size()));
            if (!finite.empty()) {
                double sum = 0, lo = finite[0], hi = finite[0], squares = 0;
                for (double v : finite) {
                    sum += v;
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                    squares += v * v;
                }
                const double mean = sum / static_cast<double>(finite.size());
                double var = 0;
                for (double v : finite) var += (v - mean) * (v - mean);
                entry.set("mean", mean);
                entry.set("std", std::sqrt(var / static_cast<double>(finite.size())));
                entry.set("min", lo);
                entry.set("max", hi);
                entry.set("l2", std::sqrt(squares));
            }
            // argmax ignores non-finite values; top5 orders by value, descending, stable.
            size_t argmax = 0;
            double best = -INFINITY;
            for (size_t i = 0; i < flat.size(); ++i)
                if (std::isfinite(flat[i]) && flat[i] > best) {
                    best = flat[i];
                    argmax = i;
                }
            entry.set("argmax", static_cast<int64_t>(argmax));
            std::vector<size_t> order(flat.size());
            std::iota(order.begin(), order.end(), 0);
            const size_t top = std::min<size_t>(5, order.size());
            std::partial_sort(order.begin(), order.begin() + static_cast<long>(top), order.end(),
                              [&](size_t a, size_t b) {
                                  const float x = flat[a], y = flat[b];
                                  if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
                                  return x > y || (x == y && a < b);
                              });
            Json top5 = Json::array();
            for (size_t i = 0; i < top; ++i) top5.push(static_cast<int64_t>(order[i]));
            entry.set("top5", top5);
            const size_t step = std::max<size_t>(1, flat.size() / sample_size);
            entry.set("sample_stride", static_cast<int64_t>(step));
            Json sample = Json::array();
            for (size_t i = 0, taken = 0; i < flat.size() && taken < sample_size; i += step, ++taken)
                sample.push(static_cast<double>(flat[i]));
            entry.set("sample", sample);
        }
        summary.push(entry);
    }
    return summary;
}

void make_parent_folders(const std::string& path) {
    size_t slash = path.rfind('/');
    if (slash != std::string::npos && slash > 0) {
        // mkdir -p of the folder
        for (size_t at = 1; at <= slash; ++at)
            if (at == slash || path[at] == '/') mkdir(path.substr(0, at).c_str(), 0755);
    }
}

void save_outputs(const std::string& path, const std::vector<Tensor>& outputs) {
    make_parent_folders(path);
    std::vector<std::string> names;
    std::vector<std::pair<std::string, NpyArray>> arrays;
    for (const auto& tensor : outputs) names.push_back(tensor.name);
    arrays.emplace_back("__names__", unicode_array(names));
    for (size_t i = 0; i < outputs.size(); ++i) {
        NpyArray array;
        array.descr = "<f4";
        array.shape = outputs[i].shape;
        array.data.resize(outputs[i].data.size() * sizeof(float));
        std::memcpy(array.data.data(), outputs[i].data.data(), array.data.size());
        arrays.emplace_back("output_" + std::to_string(i), std::move(array));
    }
    write_npz(path, arrays);
}

}  // namespace eb
