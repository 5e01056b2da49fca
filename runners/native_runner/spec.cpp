#include "spec.h"

#include "backend.h"
#include "protocol.h"

namespace eb {

namespace {

void read_counts(const Json& raw, Spec& spec) {
    struct IntField {
        const char* key;
        int64_t* into;
    };
    int64_t seed = 0;
    for (IntField field : {IntField{"threads", &spec.threads}, IntField{"warmup", &spec.warmup},
                           IntField{"iterations", &spec.iterations},
                           IntField{"max_iterations", &spec.max_iterations},
                           IntField{"concurrency", &spec.concurrency}, IntField{"seed", &seed},
                           IntField{"instances", &spec.instances}, IntField{"profile_ops", &spec.profile_ops}}) {
        const Json* v = raw.find(field.key);
        if (!v || v->is_null()) continue;
        if (!v->is_int() || v->as_int() < 0)
            throw BackendError("bad_spec", std::string("spec field '") + field.key + "' must be a non-negative integer");
        *field.into = v->as_int();
    }
    spec.seed = static_cast<uint64_t>(seed);
    if (spec.threads < 1 || spec.concurrency < 1 || spec.max_iterations < 1 || spec.instances < 1)
        throw BackendError("bad_spec", "threads, concurrency, max_iterations and instances must be >= 1");
    if (spec.instances > 1 && spec.concurrency != spec.instances)
        throw BackendError("bad_spec", "with several instances, concurrency must equal them");
}

void read_durations(const Json& raw, Spec& spec) {
    struct NumberField {
        const char* key;
        double* into;
    };
    for (NumberField field : {NumberField{"min_time_s", &spec.min_time_s}, NumberField{"max_time_s", &spec.max_time_s}}) {
        const Json* v = raw.find(field.key);
        if (!v || v->is_null()) continue;
        if (!v->is_number() || v->as_double() < 0)
            throw BackendError("bad_spec", std::string("spec field '") + field.key + "' must be a non-negative number");
        *field.into = v->as_double();
    }
    if (const Json* v = raw.find("target_ci"); v && v->is_number()) spec.target_ci = v->as_double();
}

}  // namespace

Spec normalize_spec(const Json& raw) {
    if (!raw.is_object()) throw BackendError("bad_spec", "the spec must be a JSON object");
    const Json* schema = raw.find("schema");
    if (!schema || !schema->is_string() || schema->as_string() != kSpecSchema)
        throw BackendError("bad_spec", std::string("spec schema is not '") + kSpecSchema + "'");
    Spec spec;
    for (const char* key : {"model", "framework"}) {
        const Json* value = raw.find(key);
        if (!value || !value->is_string() || value->as_string().empty())
            throw BackendError("bad_spec", std::string("spec field '") + key + "' must be a non-empty string");
    }
    spec.model = raw.find("model")->as_string();
    spec.framework = raw.find("framework")->as_string();
    if (const Json* v = raw.find("precision"); v && v->is_string()) spec.precision = v->as_string();
    if (const Json* v = raw.find("backend"); v && !v->is_null()) {
        if (!v->is_string() || v->as_string().empty())
            throw BackendError("bad_spec", "spec field 'backend' must be a compute backend name (cpu, vulkan, ...)");
        spec.backend = v->as_string();
    }
    read_counts(raw, spec);
    read_durations(raw, spec);
    if (const Json* v = raw.find("cores"); v && !v->is_null()) {
        if (!v->is_array()) throw BackendError("bad_spec", "spec field 'cores' must be a list of cpu ids");
        for (const auto& c : v->items()) {
            if (!c.is_int() || c.as_int() < 0) throw BackendError("bad_spec", "spec field 'cores' must be a list of cpu ids");
            spec.cores.push_back(static_cast<int>(c.as_int()));
        }
    }
    if (const Json* v = raw.find("inputs"); v && v->is_array() && v->size()) spec.inputs = *v;
    if (const Json* v = raw.find("shape_change_from"); v && v->is_array() && v->size()) spec.shape_change_from = *v;
    if (const Json* v = raw.find("options"); v && !v->is_null()) {
        if (!v->is_object()) throw BackendError("bad_spec", "spec field 'options' must be an object");
        spec.options = *v;
    }
    if (const Json* v = raw.find("stages"); v && !v->is_null()) {
        if (!v->is_bool()) throw BackendError("bad_spec", "spec field 'stages' must be true or false");
        spec.stages = v->as_bool();
    }
    if (const Json* v = raw.find("instance_mode"); v && v->is_string() && !v->as_string().empty())
        spec.instance_mode = v->as_string();
    if (const Json* v = raw.find("save_outputs"); v && v->is_string()) spec.save_outputs = v->as_string();
    if (const Json* v = raw.find("input_file"); v && v->is_string()) spec.input_file = v->as_string();
    if (const Json* v = raw.find("generation"); v && !v->is_null()) spec.generation = *v;
    if (const Json* t = raw.find("telemetry"); t && t->is_object()) {
        if (const Json* v = t->find("marks_file"); v && v->is_string()) spec.marks_file = v->as_string();
        if (const Json* v = t->find("sync_marker"); v && v->is_string()) spec.sync_marker = v->as_string();
    }
    return spec;
}

}  // namespace eb
