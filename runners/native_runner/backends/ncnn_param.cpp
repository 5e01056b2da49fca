// See ncnn_param.h. A param file is a magic line, a "layers blobs" line, then one line per layer:
// type name bottom_count top_count bottoms... tops... key=value..., where a string value is
// quoted (a shape expression: `6="1,1,//(96,0n),0n"`, a list written w first).
#include "ncnn_param.h"

#include <cctype>
#include <memory>
#include <sstream>
#include <vector>

#include "../backend.h"
#include "datareader.h"
#include "layer.h"
#include "paramdict.h"

namespace eb {
namespace ncnn_param {
namespace {

const int kNoAxis = 233;  // ncnn's "not given" for the batch axes

// A ParamDict read from one layer line's key=value text, as Net::load_param reads it.
class LineParams : public ncnn::ParamDict {
public:
    int read(const std::string& params) {
        const unsigned char* mem = reinterpret_cast<const unsigned char*>(params.c_str());
        ncnn::DataReaderFromMemory reader(mem);
        return load_param(reader);
    }
};

// The whitespace-separated tokens of one line; a quoted value stays one token.
std::vector<std::string> tokens_of(const std::string& line) {
    std::vector<std::string> tokens;
    std::string token;
    bool quoted = false;
    for (char ch : line) {
        if (ch == '"') quoted = !quoted;
        if (!quoted && std::isspace(static_cast<unsigned char>(ch))) {
            if (!token.empty()) tokens.push_back(token);
            token.clear();
        } else {
            token += ch;
        }
    }
    if (!token.empty()) tokens.push_back(token);
    return tokens;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// A layer line's parts.
struct LayerLine {
    std::vector<std::string> head;                            // type, name, counts and blobs
    std::vector<std::pair<std::string, std::string>> params;  // key, value as written

    static bool parse(const std::string& line, LayerLine& out) {
        const std::vector<std::string> tokens = tokens_of(line);
        if (tokens.size() < 4) return false;
        size_t blobs = 0;
        try {
            blobs = static_cast<size_t>(std::stoi(tokens[2]) + std::stoi(tokens[3]));
        } catch (const std::exception&) {
            return false;
        }
        if (tokens.size() < 4 + blobs) return false;
        out.head.assign(tokens.begin(), tokens.begin() + static_cast<long>(4 + blobs));
        for (size_t i = 4 + blobs; i < tokens.size(); ++i) {
            const size_t eq = tokens[i].find('=');
            if (eq == std::string::npos) return false;
            out.params.emplace_back(tokens[i].substr(0, eq), tokens[i].substr(eq + 1));
        }
        return true;
    }

    const std::string* find(const std::string& key) const {
        for (const auto& param : params)
            if (param.first == key) return &param.second;
        return nullptr;
    }

    int integer(const std::string& key, int otherwise) const {
        const std::string* value = find(key);
        return value ? std::stoi(*value) : otherwise;
    }

    void erase(const std::string& key) {
        for (size_t i = 0; i < params.size(); ++i)
            if (params[i].first == key) params.erase(params.begin() + static_cast<long>(i--));
    }

    void set(const std::string& key, const std::string& value) {
        erase(key);
        params.emplace_back(key, value);
    }

    std::string label() const { return head[0] + " " + head[1]; }

    std::string text() const {
        std::string line;
        for (const auto& token : head) line += (line.empty() ? "" : " ") + token;
        for (const auto& param : params) line += " " + param.first + "=" + param.second;
        return line;
    }
};

bool batch_token(const std::string& token) {
    return token.size() == 2 && std::isdigit(static_cast<unsigned char>(token[0])) && token[1] == 'n';
}

// `expression` with each blob's batch (`0n` .. `9n`) as 1.
std::string batch_as_one(const std::string& expression) {
    std::string out, token;
    auto flush = [&] {
        out += batch_token(token) ? "1" : token;
        token.clear();
    };
    for (char ch : expression) {
        if (ch == '(' || ch == ')' || ch == ',') {
            flush();
            out += ch;
        } else {
            token += ch;
        }
    }
    flush();
    return out;
}

// The items of a list expression, split at its top-level commas.
std::vector<std::string> list_items(const std::string& expression) {
    std::vector<std::string> items(1);
    int depth = 0;
    for (char ch : expression) {
        depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
        if (ch == ',' && depth == 0)
            items.emplace_back();
        else
            items.back() += ch;
    }
    return items;
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
    return out;
}

std::string unquoted(const std::string& value) {
    return value.size() >= 2 && value.front() == '"' && value.back() == '"' ? value.substr(1, value.size() - 2) : value;
}

BackendError cannot(const LayerLine& layer, const std::string& why) {
    return BackendError("unsupported", "ncnn " + layer.label() + ": " + why +
                                           "; this model.param was written for an ncnn with NCNN_BATCH, which "
                                           "edgebench-native's ncnn is not (run ncnn with the Python runner)");
}

// A batch entry that is 1 when the batch is: a batch token, 1, or -1 (the rest is all of it).
bool plain_batch(const std::string& item) { return batch_token(item) || item == "1" || item == "-1"; }

// The params of a w-first shape of n axes (ncnn's Reshape: 0 w, 1 h, 11 d, 2 c).
std::vector<std::string> shape_keys(size_t n) {
    if (n == 4) return {"0", "1", "11", "2"};
    std::vector<std::string> keys = {"0", "1", "2"};
    keys.resize(n < 3 ? n : 3);
    return keys;
}

// The w-first shape of a Reshape without an expression.
std::vector<std::string> fixed_shape(const LayerLine& layer) {
    size_t n = 0;
    for (const char* key : {"0", "1", "2", "11"}) n += layer.find(key) ? 1 : 0;
    std::vector<std::string> shape;
    for (const auto& key : shape_keys(n)) shape.push_back(layer.find(key) ? *layer.find(key) : "0");
    return shape;
}

void set_fixed_shape(LayerLine& layer, const std::vector<std::string>& shape) {
    for (const auto& key : shape_keys(4)) layer.erase(key);
    const std::vector<std::string> keys = shape_keys(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) layer.set(keys[i], shape[i]);
}

// A Reshape written for NCNN_BATCH, as a batch-1 Reshape. Its shape (expression or params) lists
// the output axes w first, the batch at the logical (outermost-first) index 13 among them.
void reshape_without_batch(LayerLine& layer) {
    const int output_axis = layer.integer("13", kNoAxis);
    const bool had_axes = layer.find("12") || layer.find("13");
    const std::string* expression = layer.find("6");
    std::vector<std::string> shape = expression ? list_items(unquoted(*expression)) : fixed_shape(layer);
    if (output_axis != kNoAxis) {
        const int dims = static_cast<int>(shape.size());
        const int axis = output_axis < 0 ? output_axis + dims : output_axis;
        if (axis < 0 || axis >= dims || dims < 2) throw cannot(layer, "its output batch axis is outside its shape");
        const std::string batch = shape[static_cast<size_t>(dims - 1 - axis)];
        if (!plain_batch(batch)) throw cannot(layer, "its batch size is the expression " + batch);
        shape.erase(shape.begin() + (dims - 1 - axis));
    }
    for (auto& item : shape) {
        item = batch_as_one(item);
        // 0 copies the input's size at the same axis, which counts the batch here and not there
        if (had_axes && item == "0") throw cannot(layer, "its shape copies an input axis (0) across the batch");
    }
    layer.erase("12");
    layer.erase("13");
    if (expression)
        layer.set("6", "\"" + joined(shape) + "\"");
    else
        set_fixed_shape(layer, shape);
}

}  // namespace

std::string without_batch(const std::string& text) {
    std::vector<std::string> lines = lines_of(text);
    for (size_t i = 2; i < lines.size(); ++i) {
        LayerLine layer;
        if (!LayerLine::parse(lines[i], layer)) continue;
        bool changed = false;
        if (layer.head[0] == "Reshape" && (layer.find("12") || layer.find("13"))) {
            reshape_without_batch(layer);
            changed = true;
        }
        for (auto& param : layer.params) {
            if (param.second.empty() || param.second[0] != '"') continue;
            const std::string one = "\"" + batch_as_one(unquoted(param.second)) + "\"";
            changed = changed || one != param.second;
            param.second = one;
        }
        if (changed) lines[i] = layer.text();
    }
    std::string out;
    for (const auto& line : lines) out += line + "\n";
    return out;
}

std::string unreadable_layers(const std::string& text) {
    std::string unread;
    const std::vector<std::string> lines = lines_of(text);
    for (size_t i = 2; i < lines.size(); ++i) {
        LayerLine line;
        if (!LayerLine::parse(lines[i], line)) continue;  // Net::load_param refuses it cleanly
        std::unique_ptr<ncnn::Layer> layer(ncnn::create_layer(line.head[0].c_str()));
        if (!layer) continue;  // an unknown type: likewise
        std::string params;
        for (const auto& param : line.params) params += param.first + "=" + param.second + " ";
        LineParams pd;
        if (pd.read(params) != 0 || layer->load_param(pd) != 0)
            unread += (unread.empty() ? "" : ", ") + line.label();
    }
    return unread;
}

}  // namespace ncnn_param
}  // namespace eb
