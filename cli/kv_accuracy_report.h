// Printed reports of the FP8 KV cache accuracy study: a text table and JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/attention/kv_accuracy.h"

namespace kvsim::cli {

// One line naming the study's shape ("GQA: 8 KV heads x 128, 64 query heads; 4 requests x 512
// tokens, page size 64").
std::string DescribeKvAccuracyConfig(const KvAccuracyConfig& config);

// The table: one row per (distribution, format, scale).
void PrintKvAccuracyTable(std::ostream& out, const std::vector<KvAccuracyRow>& rows);

// The demo's short version: GQA, e4m3 formats only, a small batch, on the CPU backend.
Status PrintKvAccuracyDemo(std::ostream& out, uint64_t seed);

// The same rows as JSON objects.
nlohmann::json KvAccuracyJson(const KvAccuracyConfig& config,
                              const std::vector<KvAccuracyRow>& rows);

}  // namespace kvsim::cli
