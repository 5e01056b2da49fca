// A generative cell, measured as runners/generation.py measures it: the runner owns the clock
// (now_ns, CLOCK_MONOTONIC as Python's perf_counter_ns), stamping each token the runtime hands
// back; t0 is taken right before generate. Prefill test n: time to first token of prompt[:n];
// decode test: the gaps between successive tokens of gen_tokens after prompt[:context_depth]
// (at least one), pooled over repetitions into samples_ns; each test `warmup` times untimed
// first. Then the output check's material: the first step's logits and check_tokens greedy
// tokens, saved as an .npz of "tokens" (int64) and "logits" (float32).
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "backend.h"
#include "generative.h"
#include "instances.h"
#include "measure.h"
#include "npz.h"
#include "outputs.h"
#include "process.h"
#include "spec.h"
#include "window.h"

namespace eb {

namespace {

// generation_spec.py's limits.
constexpr int64_t kMaxTokens = int64_t{1} << 20;
constexpr int64_t kMaxRuns = 1000000;
constexpr int64_t kMaxTokenId = (int64_t{1} << 31) - 1;
constexpr int64_t kContextSlack = 8;
constexpr const char* kStopReason = "target_reached";

BackendError spec_error(const std::string& message) { return BackendError("bad_spec", message); }

std::vector<int64_t> read_ids(const Json& value, const std::string& key, int64_t low, int64_t high) {
    if (!value.is_array() || value.size() == 0)
        throw spec_error("spec field 'generation." + key + "' must be a non-empty list of integers");
    std::vector<int64_t> ids;
    for (const Json& item : value.items()) {
        if (!item.is_int() || item.as_int() < low || item.as_int() > high)
            throw spec_error("spec field 'generation." + key + "[" + std::to_string(ids.size()) +
                             "]' must be an integer from " + std::to_string(low) + " to " + std::to_string(high) +
                             ", not " + item.dump());
        ids.push_back(item.as_int());
    }
    if (static_cast<int64_t>(ids.size()) > kMaxTokens)
        throw spec_error("spec field 'generation." + key + "' holds " + std::to_string(ids.size()) + " items, over " +
                         std::to_string(kMaxTokens));
    return ids;
}

// One generate call as the runner saw it.
struct Generated {
    int64_t t0_ns = 0;
    std::vector<int64_t> stamps_ns;
    std::vector<int32_t> tokens;
    std::vector<int64_t> cpu_ns;  // the process's CPU time at the first token and at the last
};

Generated timed_generate(GenerativeBackend& backend, const std::string& framework, const std::vector<int32_t>& prompt,
                         int64_t new_tokens) {
    Generated run;
    run.stamps_ns.reserve(static_cast<size_t>(new_tokens));
    run.tokens.reserve(static_cast<size_t>(new_tokens));
    auto on_token = [&run, new_tokens](int32_t token) {
        run.stamps_ns.push_back(now_ns());
        run.tokens.push_back(token);
        const auto count = static_cast<int64_t>(run.tokens.size());
        if (count == 1 || count == new_tokens) run.cpu_ns.push_back(process_cpu_ns());
    };
    run.t0_ns = now_ns();
    backend.generate(prompt, new_tokens, on_token);
    if (static_cast<int64_t>(run.tokens.size()) != new_tokens)
        throw BackendError("inference", framework + " produced " + std::to_string(run.tokens.size()) +
                                            " tokens where " + std::to_string(new_tokens) +
                                            " were asked (greedy, end of sequence ignored)");
    return run;
}

std::vector<int32_t> head(const std::vector<int32_t>& prompt, int64_t n) {
    return {prompt.begin(), prompt.begin() + std::min<int64_t>(n, static_cast<int64_t>(prompt.size()))};
}

Json span(int64_t from, int64_t to) {
    Json pair = Json::array();
    pair.push(from);
    pair.push(to);
    return pair;
}

// The prefill tests, then the decode test, inside the window marks; their figures into `part`
// and the result's timing fields.
void run_tests(const Spec& spec, const GenerationSpec& gen, GenerativeBackend& backend, Json& part, Json& result) {
    Json prefill = Json::array(), prefill_spans = Json::array();
    Json decode_wall = Json::array(), decode_spans = Json::array();
    std::vector<int64_t> samples;
    int64_t cpu_ns = 0, wall_ns = 0;
    mark_window(spec, "window_start");
    for (int64_t length : gen.prompt_tokens) {
        const std::vector<int32_t> prompt = head(gen.prompt, length);
        for (int64_t i = 0; i < gen.warmup; ++i) timed_generate(backend, spec.framework, prompt, 1);
        Json ttft = Json::array();
        for (int64_t i = 0; i < gen.repetitions; ++i) {
            const Generated run = timed_generate(backend, spec.framework, prompt, 1);
            ttft.push(run.stamps_ns[0] - run.t0_ns);
            prefill_spans.push(span(run.t0_ns, run.stamps_ns[0]));
        }
        Json test = Json::object();
        test.set("prompt_tokens", length);
        test.set("ttft_ns", ttft);
        prefill.push(test);
        part.set("prefill", prefill);
    }
    const std::vector<int32_t> decode_prompt = head(gen.prompt, gen.decode_prompt());
    for (int64_t i = 0; i < gen.warmup; ++i) timed_generate(backend, spec.framework, decode_prompt, gen.gen_tokens);
    for (int64_t i = 0; i < gen.repetitions; ++i) {
        const Generated run = timed_generate(backend, spec.framework, decode_prompt, gen.gen_tokens);
        for (size_t k = 1; k < run.stamps_ns.size(); ++k) samples.push_back(run.stamps_ns[k] - run.stamps_ns[k - 1]);
        decode_wall.push(run.stamps_ns.back() - run.stamps_ns.front());
        decode_spans.push(span(run.stamps_ns.front(), run.stamps_ns.back()));
        wall_ns += run.stamps_ns.back() - run.stamps_ns.front();
        cpu_ns += run.cpu_ns.back() - run.cpu_ns.front();
    }
    mark_window(spec, "window_end");
    part.set("decode_wall_ns", decode_wall);
    part.set("prefill_spans_ns", prefill_spans);
    part.set("decode_spans_ns", decode_spans);
    result.set("samples_ns", Json::array_of(samples));
    result.set("measure_wall_ns", wall_ns);
    result.set("stop_reason", kStopReason);
    result.set("cpu_ns_per_inference",
               samples.empty() ? Json() : Json(cpu_ns / static_cast<int64_t>(samples.size())));
}

void save_check(const std::string& path, const std::vector<int32_t>& tokens, const std::vector<float>& logits) {
    NpyArray ids{"<i8", {static_cast<int64_t>(tokens.size())}, {}};
    for (int32_t token : tokens) {
        const int64_t wide = token;
        const char* bytes = reinterpret_cast<const char*>(&wide);
        ids.data.insert(ids.data.end(), bytes, bytes + sizeof wide);
    }
    std::vector<std::pair<std::string, NpyArray>> arrays = {{"tokens", ids}};
    if (!logits.empty()) {
        const char* bytes = reinterpret_cast<const char*>(logits.data());
        arrays.push_back({"logits", NpyArray{"<f4", {static_cast<int64_t>(logits.size())},
                                             {bytes, bytes + logits.size() * sizeof(float)}}});
    }
    try {
        make_parent_folders(path);
        write_npz(path, arrays);
    } catch (const std::exception& exc) {
        throw BackendError("internal", std::string("could not save the check's outputs: ") + exc.what());
    }
}

}  // namespace

int64_t GenerationSpec::context_needed() const {
    const int64_t prefill = *std::max_element(prompt_tokens.begin(), prompt_tokens.end()) + 1;
    return std::max({prefill, decode_prompt() + gen_tokens, check_prompt + check_tokens});
}

int64_t GenerationSpec::context() const { return context_tokens ? context_tokens : context_needed() + kContextSlack; }

GenerationSpec read_generation_spec(const Json& raw) {
    if (!raw.is_object()) throw spec_error("spec field 'generation' must be an object or null");
    const Json* prompt = raw.find("prompt");
    if (!prompt) throw spec_error("spec field 'generation.prompt' is missing (the prompt's token ids)");
    GenerationSpec gen;
    for (int64_t id : read_ids(*prompt, "prompt", 0, kMaxTokenId)) gen.prompt.push_back(static_cast<int32_t>(id));
    if (const Json* v = raw.find("prompt_tokens")) gen.prompt_tokens = read_ids(*v, "prompt_tokens", 1, kMaxTokens);
    struct Bounded {
        const char* key;
        int64_t* into;
        int64_t low, high;
    };
    for (Bounded field : {Bounded{"gen_tokens", &gen.gen_tokens, 1, kMaxTokens},
                          Bounded{"context_depth", &gen.context_depth, 0, kMaxTokens},
                          Bounded{"repetitions", &gen.repetitions, 1, kMaxRuns},
                          Bounded{"warmup", &gen.warmup, 0, kMaxRuns},
                          Bounded{"check_tokens", &gen.check_tokens, 1, kMaxTokens},
                          Bounded{"check_prompt", &gen.check_prompt, 1, kMaxTokens},
                          Bounded{"context_tokens", &gen.context_tokens, 0, kMaxTokens}}) {
        const Json* v = raw.find(field.key);
        if (!v) continue;
        if (!v->is_int() || v->as_int() < field.low || v->as_int() > field.high)
            throw spec_error(std::string("spec field 'generation.") + field.key + "' must be an integer from " +
                             std::to_string(field.low) + " to " + std::to_string(field.high) + ", not " + v->dump());
        *field.into = v->as_int();
    }
    const int64_t needed = std::max({*std::max_element(gen.prompt_tokens.begin(), gen.prompt_tokens.end()),
                                     gen.decode_prompt(), gen.check_prompt});
    if (static_cast<int64_t>(gen.prompt.size()) < needed)
        throw spec_error("spec field 'generation.prompt' has " + std::to_string(gen.prompt.size()) +
                         " tokens; the tests feed up to " + std::to_string(needed) +
                         " (prompt_tokens, context_depth, check_prompt): give a longer prompt");
    if (gen.context_tokens && gen.context_tokens < gen.context_needed())
        throw spec_error("spec field 'generation.context_tokens' is " + std::to_string(gen.context_tokens) +
                         ", but the tests hold up to " + std::to_string(gen.context_needed()) +
                         " tokens (prompt and generated): raise it or shorten the tests");
    return gen;
}

void measure_generation(const Spec& spec, const BackendEntry& entry, Json& result) {
    if (!entry.make_generative)
        throw BackendError("bad_spec", spec.framework + " runs no generative models in edgebench-native (a "
                                                        "generation spec needs a generative runtime such as llama.cpp)");
    const GenerationSpec gen = read_generation_spec(spec.generation);
    std::unique_ptr<GenerativeBackend> backend = entry.make_generative();
    result.set("rss_before_load_kb", rss_kb());
    struct stat info;
    if (stat(spec.model.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        throw BackendError("model_load", "model file not found: " + spec.model);
    const int64_t t0 = now_ns();
    backend->load(spec.model, static_cast<int>(spec.threads), gen.context());
    result.set("load_ns", now_ns() - t0);
    Json part = Json::object();
    part.set("weight_type", backend->weight_type());
    part.set("gen_tokens", gen.gen_tokens);
    part.set("context_depth", gen.context_depth);
    part.set("prefill", Json::array());
    part.set("decode_wall_ns", Json::array());
    part.set("kv_cache_bytes", Json());
    part.set("check_tokens", Json::array());
    part.set("prefill_spans_ns", Json::array());
    part.set("decode_spans_ns", Json::array());
    try {
        run_tests(spec, gen, *backend, part, result);
        const int64_t kv = backend->kv_cache_bytes();
        part.set("kv_cache_bytes", kv >= 0 ? Json(kv) : Json());
        // Before the check: what the runtime holds to give logits is not the tests' memory.
        const int64_t peak = status_kb("VmHWM");
        result.set("peak_rss_kb", peak >= 0 ? Json(peak) : Json());
        const std::vector<int32_t> prompt = head(gen.prompt, gen.check_prompt);
        const std::vector<float> logits = backend->first_logits(prompt);
        const std::vector<int32_t> tokens = timed_generate(*backend, spec.framework, prompt, gen.check_tokens).tokens;
        part.set("check_tokens", Json::array_of(tokens));
        if (!spec.save_outputs.empty()) {
            save_check(spec.save_outputs, tokens, logits);
            result.set("outputs_file", spec.save_outputs);
        }
    } catch (...) {
        result.set("generation", part);  // what was measured before the failure
        throw;
    }
    result.set("generation", part);
    result.set("status", "ok");
}

}  // namespace eb
