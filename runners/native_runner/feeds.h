// What a cell feeds the model (runners/feeds.py): the spec's input shapes over the model's own,
// checked against a fixed-shape artifact, filled with seeded values or read from the host's file.
#pragma once

#include <string>
#include <vector>

#include "backend.h"
#include "json.h"

namespace eb {

// The model's inputs with the shapes (and dtypes) `requested` names (null: the model's own);
// bad_spec when it names an input the model does not have.
std::vector<TensorInfo> resolve_inputs(const Json& requested, const std::vector<TensorInfo>& model_inputs);

// bad_spec for inputs whose shape a fixed-shape artifact was not converted for.
void check_fixed_shapes(const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& model_inputs,
                        const std::string& model_path);

// One float32 tensor per input: from `input_file` (an .npz) when given, else seeded with `seed`.
// `described` receives the result's `inputs` entries.
std::vector<Tensor> make_feeds(const std::vector<TensorInfo>& inputs, uint64_t seed,
                               const std::string& input_file, Json& described);

}  // namespace eb
