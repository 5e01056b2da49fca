// The protocol's names, as runners/protocol/__init__.py spells them (a test compares them).
#pragma once

namespace eb {

constexpr const char* kSpecSchema = "edgebench.spec/1";
constexpr const char* kResultSchema = "edgebench.result/1";
constexpr const char* kProbeSchema = "edgebench.probe/1";
constexpr const char* kResultPrefix = "EDGEBENCH_RESULT ";
constexpr const char* kRunnerName = "edgebench-native";
constexpr const char* kRunnerVersion = "2";

}  // namespace eb
