// RunCampaign: runs a campaign's shard in worker processes and gathers its results. Each worker
// is a forked process running its share of the cases in order, one line per run on a pipe; a
// worker that dies is a crash of the run it was in (a surprise), and a new worker carries on after
// that case. Results are sums over runs, so they do not depend on the number of workers. Every
// surprise gets the command that runs its case again; with an output folder, its scenario is
// written there and shrunk (fewer requests, clients, pages, tokens, faults) to a smaller one that
// still shows it, each trial in a process of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "sim/campaign/campaign_results.h"
#include "sim/campaign/case_runner.h"
#include "sim/campaign/shrink.h"

namespace kvsim::sim {

struct CampaignOptions {
  std::string configs_root;
  BackendChoice backend = BackendChoice::kCpu;
  int32_t jobs = 1;
  // Where surprising cases' scenarios (and their shrunk forms) are written; "" writes none.
  std::string out_dir;
  int32_t max_shrinks = 8;  // surprises shrunk, at most (the first, in case order)
  // The command that ran the campaign, for replay lines ("kvsim campaign --seed 0x1 ...").
  std::string command;
  // Called after every case with the cases done, the shard's cases and the surprises so far.
  std::function<void(int64_t, int64_t, int64_t)> progress;
};

// Runs the shard of `spec` that spec.shard_index names, on `bases` (the spec's base scenarios,
// parsed).
Result<CampaignResults> RunCampaign(const CampaignSpec& spec, const std::vector<Scenario>& bases,
                                    const CampaignOptions& options);

}  // namespace kvsim::sim
