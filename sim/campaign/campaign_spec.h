// CampaignSpec: what a fault-injection campaign runs. A campaign is a list of cases, numbered from
// 0; case k belongs to arm k mod (number of arms), and its seed is mixed from the campaign's seed
// and k, so that any case can be drawn again on its own (a shard, a replay, a shrink). Each case
// runs once per tracker mode, side by side: no check, the tag check, the tag check and the seal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/launch_options.h"
#include "sim/faults/fault_mix.h"
#include "sim/faults/weakness.h"

namespace kvsim::sim {

// Which integrity layers a run has. The ownership oracle audits every run.
enum class TrackerMode : uint8_t { kOff, kTags, kSeal };
inline constexpr int kTrackerModes = 3;
// "off", "tags", "seal" (the tag check and the written-state seal).
const char* TrackerModeName(TrackerMode mode);
Result<TrackerMode> ParseTrackerMode(const std::string& text);

// A family of cases with the same planted bugs.
struct Arm {
  enum class Kind : uint8_t {
    kClean,       // no bug planted: every check must stay silent
    kSingle,      // one fault site, switched on at a drawn probability
    kSwarm,       // each fault site on or off from the seed, each at its own probability
    kNarrowTags,  // one site the tags catch, with tags of 2 to 8 bits (wraparound, class 14)
  };
  Kind kind = Kind::kClean;
  FaultSite site = FaultSite::kDuplicateNotRewritten;  // kSingle only

  // "clean", the site's name, "swarm", "narrow_tags".
  std::string Name() const;
  bool operator==(const Arm& other) const {
    return kind == other.kind && (kind != Kind::kSingle || site == other.site);
  }
};
// clean, every fault site alone, swarm, narrow_tags.
std::vector<Arm> AllArms();
// A comma-separated list of arm names, or "all"; InvalidArgument naming what is allowed.
Result<std::vector<Arm>> ParseArms(const std::string& text);
std::string ArmsText(const std::vector<Arm>& arms);

// Which kernel path the kernel-mode sample runs: each base scenario's own kernel.path (kBase,
// simple unless it says otherwise), every case on the simple or the fast path, or each case's
// path drawn from its seed, half and half (kDrawn).
enum class KernelPathDraw : uint8_t { kBase, kSimple, kFast, kDrawn };
const char* KernelPathDrawName(KernelPathDraw draw);  // "base", "simple", "fast", "drawn"
// InvalidArgument naming the allowed values for anything else.
Result<KernelPathDraw> ParseKernelPathDraw(const std::string& text);

struct CampaignSpec {
  uint64_t seed = 1;
  int64_t cases = 0;
  // The servers the swarm varies: scenario names or files, unified and disaggregated.
  std::vector<std::string> bases;
  std::vector<Arm> arms;
  std::vector<TrackerMode> modes;
  // Cases [0, kernel_cases) also run in kernel mode, their outputs checked against the reference.
  int64_t kernel_cases = 0;
  // The kernel-mode sample's kernel path.
  KernelPathDraw kernel_path = KernelPathDraw::kBase;
  // This shard runs the cases of the rounds of arms r = k / (number of arms) with
  // r mod shard_count == shard_index: whole rounds, so that every shard runs every arm whatever
  // the number of arms and shards (by k mod shard_count alone, an even number of arms would give
  // two shards half the arms each).
  int32_t shard_index = 0;
  int32_t shard_count = 1;
  // A weakness planted in every run's checks, to show the campaign fails (none by default).
  Weakness weakness = Weakness::kNone;

  const Arm& ArmOf(int64_t k) const { return arms[static_cast<size_t>(k) % arms.size()]; }
  uint64_t CaseSeed(int64_t k) const;
  // Case k's kernel path under kernel_path, given its base scenario's `base` path.
  KernelPath KernelPathOf(int64_t k, KernelPath base) const;
  bool InShard(int64_t k) const {
    return (k / static_cast<int64_t>(arms.size())) % shard_count == shard_index;
  }
  // Whether two specs describe the same campaign (shards apart).
  bool SameCampaign(const CampaignSpec& other) const;
};

// Checks the spec: at least one case, base, arm and mode; no repeated arm or mode; the shard in
// range; kernel cases within the cases.
Status ValidateCampaignSpec(const CampaignSpec& spec);

// "i/n" with 0 <= i < n.
Status ParseShard(const std::string& text, int32_t& index, int32_t& count);

// The shard a batch system gives this process, from its environment: Bazel's test sharding
// (TEST_SHARD_INDEX, TEST_TOTAL_SHARDS), a Slurm job array (SLURM_ARRAY_TASK_ID less
// SLURM_ARRAY_TASK_MIN, of SLURM_ARRAY_TASK_COUNT) or a Kubernetes Indexed Job
// (JOB_COMPLETION_INDEX, of KVSIM_SHARDS, which the Job's manifest sets to its completions).
// NotFound when none is set; InvalidArgument when one is set but malformed.
Status ShardFromEnvironment(int32_t& index, int32_t& count, std::string& source);

// The cases of the shard, in order.
std::vector<int64_t> ShardCases(const CampaignSpec& spec);

}  // namespace kvsim::sim
