#include "cell.h"

#include <sys/stat.h>

#include <memory>

#include "backend.h"
#include "feeds.h"
#include "instances.h"
#include "measure.h"
#include "op_profile.h"
#include "outputs.h"
#include "process.h"
#include "window.h"

namespace eb {

namespace {

const BackendEntry& find_backend(const std::string& framework) {
    std::string built;
    for (const auto& entry : backend_registry()) {
        if (entry.framework == framework) return entry;
        built += (built.empty() ? "" : ", ") + entry.framework;
    }
    throw BackendError("not_installed", framework + " is not built into this edgebench-native (it has: " +
                                            (built.empty() ? "none" : built) +
                                            "); `edgebench runners build --framework NAME` builds in a "
                                            "framework that has a native backend");
}

void check_loadable(const Spec& spec, const BackendEntry& entry) {
    struct stat info;
    if (stat(spec.model.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        throw BackendError("model_load", "model file not found: " + spec.model);
    std::string precisions;
    bool supported = false;
    for (const auto& p : entry.precisions) {
        supported = supported || p == spec.precision;
        precisions += (precisions.empty() ? "" : ", ") + p;
    }
    if (!supported)
        throw BackendError("unsupported", spec.framework + " does not support precision " + spec.precision +
                                              " here (supported: " + precisions + ")");
    if (spec.backend == "cpu") return;
    std::string offers = "cpu";
    for (const auto& name : entry.accelerators) {
        if (name == spec.backend) return;
        offers += ", " + name;
    }
    throw BackendError("unsupported", "this edgebench-native runs " + spec.framework + " on " + offers +
                                          ": it was built without " + spec.backend +
                                          " (docs/edgebench-native.md says which builds have which)");
}

// The op profile times layers from the host; on an accelerator they are queued to the device.
const char* const kAcceleratorOpProfile =
    "edgebench-native times operators on the CPU backend only: on an accelerator the framework queues the "
    "operators to the device, so times taken around them on the host are not theirs";

// The backend options: the spec's, with how many streams one load must serve (separate
// instances are N single-stream loads; otherwise one load serves every stream).
Json stream_options(const Spec& spec) {
    Json options = spec.options;
    if (!options.find("streams")) {
        const bool separate = spec.instances > 1 && spec.instance_mode == "separate";
        options.set("streams", separate ? int64_t{1} : spec.concurrency);
    }
    return options;
}

struct Started {
    OpenedStreams opened;
    int64_t first_inference_ns = 0;
    Json shape_change;  // {from, resize_ns, first_ns} after a shape change; else null
};

// Open the cell's streams and run one inference (after one at the earlier shape and the resize,
// for a shape change).
Started start_streams(const Spec& spec, Backend& backend, const std::vector<Tensor>& feeds,
                      const std::vector<TensorInfo>& model_inputs,
                      const std::function<std::unique_ptr<Backend>()>& load_another) {
    Started started;
    int64_t earlier_ns = 0;
    if (spec.shape_change_from.is_array()) {
        Json unused;
        const std::vector<Tensor> earlier =
            make_feeds(resolve_inputs(spec.shape_change_from, model_inputs), spec.seed, "", unused);
        const int64_t t0 = now_ns();
        backend.make_stream(earlier)->run();
        earlier_ns = now_ns() - t0;
        backend.reuse_streams();
    }
    int64_t t0 = now_ns();
    started.opened = open_streams(spec.instances, spec.instance_mode, spec.concurrency, spec.framework, backend,
                                  feeds, load_another);
    const int64_t resize_ns = now_ns() - t0;
    t0 = now_ns();
    started.opened.streams[0]->run();
    const int64_t first_ns = now_ns() - t0;
    // All loaded, one has run: the base of the running growth.
    if (started.opened.instances.is_object()) started.opened.instances.set("rss_one_running_kb", rss_kb());
    started.first_inference_ns = first_ns;
    if (spec.shape_change_from.is_array()) {
        started.first_inference_ns = earlier_ns;
        started.shape_change = Json::object();
        started.shape_change.set("from", spec.shape_change_from);
        started.shape_change.set("resize_ns", resize_ns);
        started.shape_change.set("first_ns", first_ns);
    }
    return started;
}

Json warm_up(const std::vector<std::unique_ptr<Stream>>& streams, int64_t count) {
    Json samples = Json::array();
    for (const auto& stream : streams)
        for (int64_t i = 0; i < count; ++i) {
            const int64_t t0 = now_ns();
            stream->run();
            samples.push(now_ns() - t0);
        }
    return samples;
}

void save_cell_outputs(const Spec& spec, const std::vector<Tensor>& outputs, Json& result) {
    result.set("outputs", summarize_outputs(outputs));
    if (spec.save_outputs.empty()) return;
    try {
        save_outputs(spec.save_outputs, outputs);
    } catch (const std::exception& exc) {
        throw BackendError("internal", std::string("could not save outputs: ") + exc.what());
    }
    result.set("outputs_file", spec.save_outputs);
}

// Everything from the streams' start to the outputs; the streams and the separate instances'
// loads are released when it returns.
void run_streams(const Spec& spec, Backend& backend, const std::vector<Tensor>& feeds,
                 const std::vector<TensorInfo>& model_inputs,
                 const std::function<std::unique_ptr<Backend>()>& load_another, Json& result) {
    Started started = start_streams(spec, backend, feeds, model_inputs, load_another);
    const auto& streams = started.opened.streams;
    Json& instances = started.opened.instances;
    result.set("first_inference_ns", started.first_inference_ns);
    const Json accelerator = backend.accelerator_report();
    if (!accelerator.is_null()) result.set("accelerator", accelerator);
    if (instances.is_object()) result.set("instances", instances);
    if (started.shape_change.is_object()) result.set("shape_change", started.shape_change);
    result.set("warmup_samples_ns", warm_up(streams, spec.warmup));

    const Timing timing = time_window(spec, streams, backend.boundaries(), result);
    // The outputs of stream 0's last timed inference: no extra run.
    const std::vector<Tensor> outputs = streams[0]->outputs();
    if (instances.is_object()) {
        instances.set("rss_running_kb", rss_kb());
        int64_t ran = 0;
        for (int64_t count : timing.per_stream_counts) ran += count > 0 ? 1 : 0;
        instances.set("ran", ran);
        instances.set("at_once", timing.at_once);
        result.set("instances", instances);
    }
    save_cell_outputs(spec, outputs, result);
}

}  // namespace

void measure_cell(const Spec& spec, Json& result) {
    const BackendEntry& entry = find_backend(spec.framework);
    result.set("framework_version", entry.version);
    if (!spec.generation.is_null()) return measure_generation(spec, entry, result);
    if (!entry.make)
        throw BackendError("bad_spec", spec.framework + " runs generative models only: its cells need a "
                                                        "generative model (.gguf) and a generation spec");
    // Before the model: its own footprint is peak - this.
    result.set("rss_before_load_kb", rss_kb());
    check_loadable(spec, entry);
    const Json options = stream_options(spec);
    auto load = [&spec, &entry](const Json& with) {
        std::unique_ptr<Backend> backend = entry.make();
        backend->set_compute_backend(spec.backend);
        backend->load(spec.model, static_cast<int>(spec.threads), spec.precision, with);
        return backend;
    };
    const int64_t t0 = now_ns();
    std::unique_ptr<Backend> backend = load(options);
    result.set("load_ns", now_ns() - t0);

    const std::vector<TensorInfo> model_inputs = backend->model_inputs();
    const std::vector<TensorInfo> inputs = resolve_inputs(spec.inputs, model_inputs);
    check_fixed_shapes(inputs, model_inputs, spec.model);
    Json described;
    const std::vector<Tensor> feeds = make_feeds(inputs, spec.seed, spec.input_file, described);
    result.set("inputs", described);
    run_streams(spec, *backend, feeds, model_inputs, [&load, &options] { return load(options); }, result);

    // Before any profiling load: the peak is the measured cell's own.
    const int64_t peak = status_kb("VmHWM");
    result.set("peak_rss_kb", peak >= 0 ? Json(peak) : Json());
    if (spec.profile_ops > 0 && spec.backend != "cpu") {
        Json unavailable = Json::object();
        unavailable.set("unavailable", kAcceleratorOpProfile);
        result.set("op_profile", unavailable);
    } else if (spec.profile_ops > 0) {
        Json single = options;
        single.set("streams", int64_t{1});
        result.set("op_profile", profile_ops(spec.framework, [&load, &single] { return load(single); }, feeds,
                                             spec.profile_ops));
    }
    result.set("status", "ok");
}

}  // namespace eb
