// The seeded inputs, bit-identical to runners/protocol/tensors.py (generator "edgebench.ctr/1").
//
// Element i of input NAME under SEED takes 64 bits from a counter-based generator:
//   key  = mix64(seed * GOLDEN + fnv1a64(NAME))       (all arithmetic modulo 2^64)
//   bits = mix64(key + i * GOLDEN)                    (mix64: SplitMix64's finaliser)
// A float is the sum s of the four 16-bit lanes of bits, as ((s + 2) / 65536 - 2) * sqrt(3)
// in double (exact but for the last multiply), then rounded to float. Integers are bits % 100,
// booleans bits & 1. Built with -ffp-contract=off so no fused multiply-add changes a bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace eb {

constexpr const char* kInputGenerator = "edgebench.ctr/1";

uint64_t mix64(uint64_t z);
uint64_t fnv1a64(const std::string& text);
uint64_t seeded_bits(uint64_t seed, const std::string& name, uint64_t index);
void seeded_floats(uint64_t seed, const std::string& name, float* out, size_t count);
void seeded_ints64(uint64_t seed, const std::string& name, int64_t* out, size_t count);

}  // namespace eb
