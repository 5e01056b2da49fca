// The ncnn param text as the ncnn this binary links reads it. edgebench converts with the pnnx of
// the toolchain, which writes for the ncnn of the same date (the Python runner's wheel); the
// native build links an older, pinned ncnn. The one construct of the newer param dialect seen on
// real models is the batch of NCNN_BATCH: Reshape's batch axes (12=, 13=) and `0n` (blob 0's
// batch) in shape expressions. An ncnn without NCNN_BATCH fails such a Reshape's load_param, and
// Net::load_param then goes on with no layer in that slot and crashes on it (signal 11).
#pragma once

#include <string>

namespace eb {
namespace ncnn_param {

// `text` rewritten for an ncnn without NCNN_BATCH: edgebench feeds ncnn one sample (its Mats have
// no batch axis), so a Reshape's batch entry is dropped from its shape, its batch axes go, and
// every batch size in an expression is 1. Throws BackendError("unsupported", ...) naming the layer
// where a Reshape's shape cannot be told apart from its batch that way.
std::string without_batch(const std::string& text);

// The layers of `text` ("Type name", comma-separated) whose own load_param fails in this ncnn,
// "" when none: Net::load_param would skip each, succeed, and then dereference the gap it left.
std::string unreadable_layers(const std::string& text);

}  // namespace ncnn_param
}  // namespace eb
