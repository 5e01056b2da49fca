// Output summaries (as runners/protocol/tensors.py's summarize_outputs) and the outputs file.
#pragma once

#include <string>
#include <vector>

#include "backend.h"
#include "json.h"

namespace eb {

Json summarize_outputs(const std::vector<Tensor>& outputs, size_t sample_size = 64);
// mkdir -p of the folder holding `path` (what exists already is left as it is).
void make_parent_folders(const std::string& path);
// An .npz the host's output check loads: __names__ plus output_0, output_1, ...
void save_outputs(const std::string& path, const std::vector<Tensor>& outputs);

}  // namespace eb
