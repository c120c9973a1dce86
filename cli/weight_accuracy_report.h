// The weight accuracy table (`kvsim accuracy weights`, and the short version in `kvsim demo`).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/gemm/weight_accuracy.h"

namespace kvsim::cli {

// One row per (distribution, format): bytes per weight, relative RMS error of the weights and of
// the layer output, output cosine, and output error relative to FP8's on the same distribution.
void PrintWeightAccuracyTable(std::ostream& out, const std::vector<WeightAccuracyRow>& rows);

// The demo's short version: one heavy-tailed weight matrix, FP8 and two INT4 configurations,
// on the CPU backend, from `seed`. Errors come from the study (none for these fixed options).
Status PrintWeightAccuracySummary(std::ostream& out, uint64_t seed);

// The same rows, with the options and the backend that produced them, as JSON.
nlohmann::json WeightAccuracyJson(const WeightAccuracyOptions& options, const std::string& backend,
                                  const std::vector<WeightAccuracyRow>& rows);

}  // namespace kvsim::cli
