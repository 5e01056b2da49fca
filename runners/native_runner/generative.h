// A generative cell (runners/generation.py and runners/backends/generative.py, in C++): the
// runtime contract, the spec's "generation" part read as runners/protocol/generation_spec.py
// reads it, and the measurement that fills the result's "generation" part.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "json.h"

namespace eb {

struct Spec;
struct BackendEntry;

// One generative runtime: load once, then generate any number of times (each from an empty
// cache), as the Python runner's GenerativeBackend.
class GenerativeBackend {
public:
    virtual ~GenerativeBackend() = default;
    // Throws BackendError("model_load" | "unsupported", one line).
    virtual void load(const std::string& model, int threads, int64_t context_tokens) = 0;
    // The weight type that runs: "f16", "q8_0", "q4_0", or the runtime's own name.
    virtual std::string weight_type() = 0;
    // Feed `prompt` as ids, then exactly `new_tokens` greedy tokens, end of sequence ignored,
    // calling on_token as each is produced (the first call ends the prefill).
    virtual void generate(const std::vector<int32_t>& prompt, int64_t new_tokens,
                          const std::function<void(int32_t)>& on_token) = 0;
    // The last prompt position's logits after feeding `prompt`; empty where the API has none.
    virtual std::vector<float> first_logits(const std::vector<int32_t>& prompt) = 0;
    // The KV cache's size in bytes as the runtime reports it; -1 when it does not.
    virtual int64_t kv_cache_bytes() { return -1; }
};

// The spec's "generation" object (runners/protocol/generation_spec.py's GenerationSpec), checked.
struct GenerationSpec {
    std::vector<int32_t> prompt;
    std::vector<int64_t> prompt_tokens = {128, 512};
    int64_t gen_tokens = 128, context_depth = 0, repetitions = 3, warmup = 1;
    int64_t check_tokens = 8, check_prompt = 16, context_tokens = 0;

    int64_t decode_prompt() const { return context_depth > 1 ? context_depth : 1; }
    int64_t context_needed() const;
    int64_t context() const;  // the context to load with
};

// Throws BackendError("bad_spec", ...) with generation_spec.py's messages.
GenerationSpec read_generation_spec(const Json& raw);

// Measures the generative cell of `spec` on `entry`'s runtime into `result`.
void measure_generation(const Spec& spec, const BackendEntry& entry, Json& result);

}  // namespace eb
