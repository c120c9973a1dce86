// Printing plans: a side-by-side text table, JSON, CSV and the --explain terms.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "model/plan.h"
#include "model/trace.h"

namespace kvsim::cli {

// One configuration of a plan run: its label ("kv-dtype=bf16"; empty when there is one) and
// result.
struct LabeledPlan {
  std::string label;
  model::PlanResult result;
};

// "weights do not fit: 79.3 GiB needed per GPU, 66.1 available", for a capacity whose weights
// do not fit.
std::string WeightsDoNotFitText(const model::Capacity& capacity);

// The memory, capacity and prefill tables with one column per configuration, then decode
// tokens/s, latency and cost by concurrency, "out of memory" where the cache cannot hold the batch.
// A configuration whose weights do not fit says so in a status row and has "-" for what it lacks.
void PrintPlanText(std::ostream& out, const std::vector<LabeledPlan>& plans);

// One JSON document: {"configurations": [...]} with every figure of every configuration; one
// whose weights do not fit has "weights_fit": false, "does_not_fit" with the numbers, and null
// where it has no figure.
// With `traces` (one per plan), each configuration also has "explain": the --explain terms as
// [{"section": ..., "terms": [{"quantity", "formula", "value"}, ...]}, ...].
void PrintPlanJson(std::ostream& out, const std::vector<LabeledPlan>& plans,
                   const std::vector<model::Trace>* traces = nullptr);

// CSV with a header: one row per configuration and concurrency (weights_fit and does_not_fit
// columns say when a configuration's weights do not fit; its figures are then empty).
void PrintPlanCsv(std::ostream& out, const std::vector<LabeledPlan>& plans);

// The terms of each configuration, formula and value, under the configuration's label.
void PrintExplanation(std::ostream& out, const std::string& label, const model::Trace& trace);

}  // namespace kvsim::cli
