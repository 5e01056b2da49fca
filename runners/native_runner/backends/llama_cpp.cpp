// llama.cpp (libllama and ggml's CPU backend, linked statically): a generative runtime driven
// through its C API exactly as the Python runner's llama_cpp_backend.py drives it through
// llama-cpp-python. The prompt goes in as token ids in one llama_decode (chunks of n_batch past
// 2048 tokens), only its last position asking for logits; then one llama_decode per new token.
// Greedy is the first highest logit of the last position (numpy.argmax's tie rule); the KV
// cache's cells are cleared at the start of every generate. Batch sizes and flash attention are
// llama-bench's defaults, set here so a new default cannot drift the comparison. llama.cpp's
// log is kept, not printed: a failed load takes its reason from it, kv_cache_bytes its size.
#include <llama.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

#include "backend.h"

#ifndef EB_LLAMA_CPP_VERSION
#define EB_LLAMA_CPP_VERSION "unknown"
#endif

namespace eb {
namespace {

constexpr const char* kFramework = "llama.cpp";
constexpr int32_t kBatch = 2048;
constexpr int32_t kMicroBatch = 512;
constexpr size_t kLinesKept = 200;
constexpr const char* kKvSize = "llama_kv_cache: size = ";

// The process's one log sink (llama.cpp holds a single callback for the whole process).
struct LlamaLog {
    std::mutex lock;
    std::deque<std::string> lines, errors;
    ggml_log_level level = GGML_LOG_LEVEL_NONE;

    static void keep(ggml_log_level level, const char* text, void* self) {
        auto* log = static_cast<LlamaLog*>(self);
        std::lock_guard<std::mutex> hold(log->lock);
        if (level != GGML_LOG_LEVEL_CONT) log->level = level;
        std::string line = text ? text : "";
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
        if (line.empty()) return;
        log->lines.push_back(line);
        if (log->lines.size() > kLinesKept) log->lines.pop_front();
        if (log->level == GGML_LOG_LEVEL_ERROR) {
            log->errors.push_back(line);
            if (log->errors.size() > kLinesKept) log->errors.pop_front();
        }
    }

    void clear() {
        std::lock_guard<std::mutex> hold(lock);
        lines.clear();
        errors.clear();
    }

    // The first error logged (the cause), without llama.cpp's "function: " prefix.
    std::string reason() {
        std::lock_guard<std::mutex> hold(lock);
        if (errors.empty()) return "no reason logged";
        std::string line = errors.front();
        const size_t colon = line.find(": ");
        if (colon != std::string::npos && line.find(' ') > colon) line = line.substr(colon + 2);
        const std::string cause = "error loading model: ";
        const size_t at = line.find(cause);
        return at == std::string::npos ? line : line.substr(at + cause.size());
    }

    std::string detail() {
        std::lock_guard<std::mutex> hold(lock);
        std::string all;
        for (const auto& line : lines) all += line + "\n";
        return all;
    }

    // The K and V buffers' size as llama.cpp logged it making the context (to 0.01 MiB).
    int64_t kv_cache_bytes() {
        std::lock_guard<std::mutex> hold(lock);
        for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
            const size_t at = it->find(kKvSize);
            if (at == std::string::npos) continue;
            const double mib = std::strtod(it->c_str() + at + std::strlen(kKvSize), nullptr);
            return static_cast<int64_t>(mib * 1024 * 1024 + 0.5);
        }
        return -1;
    }
};

LlamaLog& process_log() {
    static LlamaLog* log = [] {
        auto* made = new LlamaLog();  // never freed: the callback may run until exit
        llama_log_set(&LlamaLog::keep, made);
        llama_backend_init();
        return made;
    }();
    return *log;
}

class LlamaCppBackend : public GenerativeBackend {
public:
    LlamaCppBackend() : log_(process_log()) {}

    ~LlamaCppBackend() override {
        if (has_batch_) llama_batch_free(batch_);
        if (ctx_) llama_free(ctx_);
        if (model_) llama_model_free(model_);
    }

    void load(const std::string& path, int threads, int64_t context_tokens) override {
        log_.clear();  // the reason and KV size read next are this load's
        llama_model_params model_params = llama_model_default_params();
        model_params.n_gpu_layers = 0;
        model_ = llama_model_load_from_file(path.c_str(), model_params);
        if (!model_)
            throw BackendError("model_load", std::string(kFramework) + " cannot load " + path + ": " + log_.reason(),
                               log_.detail());
        llama_context_params params = llama_context_default_params();
        params.n_ctx = static_cast<uint32_t>(context_tokens);
        params.n_batch = kBatch;
        params.n_ubatch = kMicroBatch;
        params.n_threads = threads;
        params.n_threads_batch = threads;
        params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
        ctx_ = llama_init_from_model(model_, params);
        if (!ctx_)
            throw BackendError("model_load", std::string(kFramework) + " cannot make a " +
                                                 std::to_string(context_tokens) + "-token context for " + path + ": " +
                                                 log_.reason(),
                               log_.detail());
        kv_bytes_ = log_.kv_cache_bytes();
        n_vocab_ = llama_vocab_n_tokens(llama_model_get_vocab(model_));
        n_batch_ = static_cast<int32_t>(llama_n_batch(ctx_));
        batch_ = llama_batch_init(n_batch_, 0, 1);
        has_batch_ = true;
        for (int32_t i = 0; i < n_batch_; ++i) {
            batch_.n_seq_id[i] = 1;
            batch_.seq_id[i][0] = 0;
        }
    }

    std::string weight_type() override {
        const int ftype = static_cast<int>(llama_model_ftype(model_)) & ~static_cast<int>(LLAMA_FTYPE_GUESSED);
        switch (ftype) {
            case LLAMA_FTYPE_ALL_F32: return "f32";
            case LLAMA_FTYPE_MOSTLY_F16: return "f16";
            case LLAMA_FTYPE_MOSTLY_Q4_0: return "q4_0";
            case LLAMA_FTYPE_MOSTLY_Q8_0: return "q8_0";
            default: break;
        }
        const char* name = llama_ftype_name(static_cast<llama_ftype>(ftype));
        if (!name) return "ftype-" + std::to_string(ftype);
        std::string lower = name;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
        return lower;
    }

    void generate(const std::vector<int32_t>& prompt, int64_t new_tokens,
                  const std::function<void(int32_t)>& on_token) override {
        prefill(prompt);
        int32_t token = greedy();
        on_token(token);
        int32_t position = static_cast<int32_t>(prompt.size());
        for (int64_t i = 1; i < new_tokens; ++i) {
            batch_.token[0] = token;
            batch_.pos[0] = position++;
            batch_.logits[0] = 1;
            batch_.n_tokens = 1;
            decode();
            token = greedy();
            on_token(token);
        }
    }

    std::vector<float> first_logits(const std::vector<int32_t>& prompt) override {
        prefill(prompt);
        const float* logits = last_logits();
        return {logits, logits + n_vocab_};
    }

    int64_t kv_cache_bytes() override { return kv_bytes_; }

private:
    // Empty the KV cache's cells (as llama-bench: zeroing the buffers would time a memset),
    // then feed `prompt` in chunks of n_batch, only the last position computing logits.
    void prefill(const std::vector<int32_t>& prompt) {
        if (prompt.empty()) throw BackendError("inference", std::string(kFramework) + " needs a prompt of at least one token");
        llama_memory_clear(llama_get_memory(ctx_), false);
        const auto total = static_cast<int32_t>(prompt.size());
        for (int32_t start = 0; start < total; start += n_batch_) {
            const int32_t n = std::min(n_batch_, total - start);
            for (int32_t i = 0; i < n; ++i) {
                batch_.token[i] = prompt[static_cast<size_t>(start + i)];
                batch_.pos[i] = start + i;
                batch_.logits[i] = 0;
            }
            batch_.logits[n - 1] = start + n == total ? 1 : 0;
            batch_.n_tokens = n;
            decode();
        }
    }

    void decode() {
        const int32_t status = llama_decode(ctx_, batch_);
        if (status != 0)
            throw BackendError("inference", "llama_decode returned " + std::to_string(status) + ": " + log_.reason(),
                               log_.detail());
    }

    const float* last_logits() {
        const float* logits = llama_get_logits_ith(ctx_, -1);
        if (!logits) throw BackendError("inference", "llama_get_logits_ith gave no logits: " + log_.reason());
        return logits;
    }

    int32_t greedy() {
        const float* logits = last_logits();
        return static_cast<int32_t>(std::max_element(logits, logits + n_vocab_) - logits);
    }

    LlamaLog& log_;
    llama_model* model_ = nullptr;
    llama_context* ctx_ = nullptr;
    llama_batch batch_{};
    bool has_batch_ = false;
    int32_t n_vocab_ = 0, n_batch_ = 0;
    int64_t kv_bytes_ = -1;
};

const RegisterBackend registered({kFramework,
                                  EB_LLAMA_CPP_VERSION,
                                  {"f32", "f16", "q8_0", "q4_0"},
                                  nullptr,
                                  {},
                                  [] { return std::unique_ptr<GenerativeBackend>(new LlamaCppBackend()); }});

}  // namespace
}  // namespace eb
