// Printing plans: a side-by-side text table, JSON, CSV and the --explain terms.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "model/derivation.h"
#include "model/plan.h"

namespace kvsim::cli {

// One configuration of a plan run: its label ("kv-format=bf16"; empty when there is one) and
// result.
struct LabeledPlan {
  std::string label;
  model::PlanResult result;
};

// The memory, capacity and prefill tables with one column per configuration, then decode
// tokens/s, latency, cost and the longest context by concurrency, "out of memory" where the cache
// cannot hold the batch. A configuration that was not planned says why in a status row and has
// "-" for what it lacks; a line names where the step times come from.
void PrintPlanText(std::ostream& out, const std::vector<LabeledPlan>& plans);

// One JSON document: {"configurations": [...]} with every figure of every configuration, each
// step's time by operator; one not planned has its "status", "does_not_fit" with the numbers,
// and null where it has no figure.
// With `derivations` (one per plan), each configuration also has "explain": the --explain terms as
// [{"section": ..., "terms": [{"quantity", "formula", "value"}, ...]}, ...].
void PrintPlanJson(std::ostream& out, const std::vector<LabeledPlan>& plans,
                   const std::vector<model::Derivation>* derivations = nullptr);

// CSV with a header: one row per configuration and concurrency (status and does_not_fit columns
// say when a configuration was not planned; its figures are then empty).
void PrintPlanCsv(std::ostream& out, const std::vector<LabeledPlan>& plans);

// The terms of each configuration, formula and value, under the configuration's label.
void PrintExplanation(std::ostream& out, const std::string& label,
                      const model::Derivation& derivation);

}  // namespace kvsim::cli
