// MNN-LLM, MNN's LLM engine (transformers/llm/engine, compiled into the same static libMNN.a as
// the tensor backend), driven through its C++ API exactly as runners/backends/mnn_llm_backend.py
// drives it through the mnn wheel's MNN.llm: the model folder's config.json, with thread_num and
// max_all_tokens merged in by set_config before load (the folder is never written to); each
// generate starts with generate_init (an empty key/value cache), forwards the prompt's ids in one
// call (the engine looks up their embeddings), then one forward per new token. Greedy is the
// first highest logit of the last position (numpy.argmax's tie rule); end of sequence is never
// looked at. The engine reports no key/value cache size.
#include <MNN/MNNDefine.h>
#include <llm/llm.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "../backend.h"

namespace eb {
namespace {

constexpr const char* kFramework = "mnn-llm";
constexpr const char* kConfigFile = "config.json";
// The weight type edgebench's converter records in the folder; a folder MNN's own llmexport
// wrote has none.
constexpr const char* kWeightsFile = "edgebench_weights.json";
constexpr const char* kOwnFolder = "mnn-llm-model";

namespace llm = MNN::Transformer;

bool is_file(const std::string& path) {
    struct stat info;
    return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool is_dir(const std::string& path) {
    struct stat info;
    return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::string join(const std::string& folder, const std::string& name) {
    if (folder.empty()) return name;
    return folder.back() == '/' ? folder + name : folder + "/" + name;
}

std::string parent_of(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The JSON object in `path`; null where it is missing or not JSON.
Json read_json(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Json();
    std::stringstream text;
    text << in.rdbuf();
    try {
        return Json::parse(text.str());
    } catch (const std::exception&) {
        return Json();
    }
}

std::string string_at(const Json& config, const char* key, const std::string& fallback) {
    const Json* value = config.is_object() ? config.find(key) : nullptr;
    return value && value->is_string() ? value->as_string() : fallback;
}

// The config and the files it names that the engine cannot load without (llmconfig.hpp's
// defaults), as mnn_llm_backend.needed_files.
std::vector<std::string> needed_files(const std::string& config_path) {
    const Json config = read_json(config_path);
    if (!config.is_object()) return {config_path};
    const std::string base = string_at(config, "base_dir", parent_of(config_path));
    return {config_path, join(base, string_at(config, "llm_model", "llm.mnn")),
            join(base, string_at(config, "llm_weight", "llm.mnn.weight")),
            join(base, string_at(config, "tokenizer_file", "tokenizer.txt"))};
}

class MnnLlmBackend : public GenerativeBackend {
public:
    ~MnnLlmBackend() override {
        if (llm_) llm::Llm::destroy(llm_);
    }

    void load(const std::string& path, int threads, int64_t context_tokens) override {
        const std::string folder = is_dir(path) ? path : parent_of(path);
        const std::string config_path = join(folder, kConfigFile);
        for (const std::string& needed : needed_files(config_path)) {
            if (!is_file(needed))
                throw BackendError("model_load", std::string(kFramework) + " needs an MNN-LLM model folder; " + folder +
                                                     " has no " + base_name(needed) +
                                                     " (convert the GGUF with edgebench)");
        }
        weights_ = string_at(read_json(join(folder, kWeightsFile)), "weight_type", kOwnFolder);
        llm_ = llm::Llm::createLLM(config_path);
        if (!llm_) throw BackendError("model_load", std::string(kFramework) + " cannot read " + config_path);
        Json settings = Json::object();
        settings.set("thread_num", static_cast<int64_t>(threads));
        settings.set("max_all_tokens", context_tokens);
        llm_->set_config(settings.dump());
        const bool loaded = llm_->load();
        if (!loaded || llm_->getContext()->status != llm::LlmStatus::RUNNING)
            throw BackendError("model_load",
                               std::string(kFramework) + " cannot load " + folder + " (MNN's log above says why)");
    }

    std::string weight_type() override { return weights_; }

    void generate(const std::vector<int32_t>& prompt, int64_t new_tokens,
                  const std::function<void(int32_t)>& on_token) override {
        MNN::Express::VARP logits = prefill(prompt);
        for (int64_t produced = 0; produced < new_tokens; ++produced) {
            if (logits.get() == nullptr)
                throw BackendError("inference", std::string(kFramework) + " stopped after " + std::to_string(produced) +
                                                    " of " + std::to_string(new_tokens) + " tokens");
            const std::vector<float> last = last_row(logits);
            const auto token = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
            on_token(token);
            if (produced + 1 < new_tokens) logits = llm_->forward(std::vector<int>{token});
        }
    }

    std::vector<float> first_logits(const std::vector<int32_t>& prompt) override {
        MNN::Express::VARP logits = prefill(prompt);
        if (logits.get() == nullptr)
            throw BackendError("inference", std::string(kFramework) + " returned no logits for the prompt");
        return last_row(logits);
    }

private:
    // An empty cache, then the prompt's ids in one forward: the last position's logits.
    MNN::Express::VARP prefill(const std::vector<int32_t>& prompt) {
        if (!llm_) throw BackendError("inference", std::string(kFramework) + ": generate before load");
        if (prompt.empty())
            throw BackendError("inference", std::string(kFramework) + " needs a prompt of at least one token");
        llm_->generate_init();
        return llm_->forward(std::vector<int>(prompt.begin(), prompt.end()));
    }

    // The last position's row of `logits` ([..., vocab]).
    static std::vector<float> last_row(MNN::Express::VARP logits) {
        const MNN::Express::Variable::Info* info = logits->getInfo();
        const float* values = logits->readMap<float>();
        if (info == nullptr || values == nullptr || info->dim.empty() || info->size <= 0)
            throw BackendError("inference", std::string(kFramework) + " returned unreadable logits");
        const size_t vocab = static_cast<size_t>(info->dim.back());
        const size_t size = static_cast<size_t>(info->size);
        if (vocab == 0 || size < vocab)
            throw BackendError("inference", std::string(kFramework) + " returned logits of an odd shape");
        return {values + size - vocab, values + size};
    }

    llm::Llm* llm_ = nullptr;
    std::string weights_ = kOwnFolder;
};

const RegisterBackend registered({kFramework,
                                  MNN::getVersion(),
                                  {"f32", "f16", "q8_0", "q4_0"},
                                  nullptr,
                                  {},
                                  [] { return std::unique_ptr<GenerativeBackend>(new MnnLlmBackend()); }});

}  // namespace
}  // namespace eb
