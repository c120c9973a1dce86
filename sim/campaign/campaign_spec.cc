// Campaign specs, arms and shards.
#include "sim/campaign/campaign_spec.h"

#include <cstdlib>

#include "model/number_text.h"
#include "sim/workload/request_spec.h"

namespace kvsim::sim {

const char* TrackerModeName(TrackerMode mode) {
  switch (mode) {
    case TrackerMode::kOff:
      return "off";
    case TrackerMode::kTags:
      return "tags";
    case TrackerMode::kSeal:
      return "seal";
  }
  return "unknown";
}

Result<TrackerMode> ParseTrackerMode(const std::string& text) {
  for (TrackerMode mode : {TrackerMode::kOff, TrackerMode::kTags, TrackerMode::kSeal}) {
    if (text == TrackerModeName(mode)) return mode;
  }
  return InvalidArgumentError("unknown tracker mode '" + text + "'; allowed: off, tags, seal");
}

std::string Arm::Name() const {
  switch (kind) {
    case Kind::kClean:
      return "clean";
    case Kind::kSingle:
      return FaultSiteName(site);
    case Kind::kSwarm:
      return "swarm";
    case Kind::kNarrowTags:
      return "narrow_tags";
  }
  return "unknown";
}

std::vector<Arm> AllArms() {
  std::vector<Arm> arms = {{Arm::Kind::kClean}};
  for (int site = 0; site < kFaultSites; ++site) {
    arms.push_back({Arm::Kind::kSingle, static_cast<FaultSite>(site)});
  }
  arms.push_back({Arm::Kind::kSwarm});
  arms.push_back({Arm::Kind::kNarrowTags});
  return arms;
}

Result<std::vector<Arm>> ParseArms(const std::string& text) {
  if (text == "all") return AllArms();
  std::vector<Arm> arms;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string name =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool known = false;
    for (const Arm& arm : AllArms()) {
      if (arm.Name() != name) continue;
      for (const Arm& seen : arms) {
        if (seen == arm) return InvalidArgumentError("arm '" + name + "' is listed twice");
      }
      arms.push_back(arm);
      known = true;
    }
    if (!known) {
      return InvalidArgumentError("unknown arm '" + name + "'; allowed: all, or a list of " +
                                  ArmsText(AllArms()));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return arms;
}

std::string ArmsText(const std::vector<Arm>& arms) {
  std::string text;
  for (const Arm& arm : arms) text += (text.empty() ? "" : ",") + arm.Name();
  return text;
}

uint64_t CampaignSpec::CaseSeed(int64_t k) const {
  return MixIds(seed ^ 0xca4ca4ca4ca4ca4cULL, static_cast<uint64_t>(k));
}

KernelPath CampaignSpec::KernelPathOf(int64_t k, KernelPath base) const {
  switch (kernel_path) {
    case KernelPathDraw::kBase:
      return base;
    case KernelPathDraw::kSimple:
      return KernelPath::kSimple;
    case KernelPathDraw::kFast:
      return KernelPath::kFast;
    case KernelPathDraw::kDrawn:
      // A stream of the case's seed of its own, so the draw leaves every other knob as it was.
      return (MixIds(CaseSeed(k), 0xfa57) & 1) != 0 ? KernelPath::kFast : KernelPath::kSimple;
  }
  return base;
}

const char* KernelPathDrawName(KernelPathDraw draw) {
  switch (draw) {
    case KernelPathDraw::kBase:
      return "base";
    case KernelPathDraw::kSimple:
      return "simple";
    case KernelPathDraw::kFast:
      return "fast";
    case KernelPathDraw::kDrawn:
      return "drawn";
  }
  return "?";
}

Result<KernelPathDraw> ParseKernelPathDraw(const std::string& text) {
  for (KernelPathDraw draw : {KernelPathDraw::kBase, KernelPathDraw::kSimple, KernelPathDraw::kFast,
                              KernelPathDraw::kDrawn}) {
    if (text == KernelPathDrawName(draw)) return draw;
  }
  return InvalidArgumentError("kernel path '" + text +
                              "' is not allowed; allowed: base (each base scenario's "
                              "kernel.path), simple, fast, drawn (each case's from its seed)");
}

bool CampaignSpec::SameCampaign(const CampaignSpec& other) const {
  return seed == other.seed && cases == other.cases && bases == other.bases && arms == other.arms &&
         modes == other.modes && kernel_cases == other.kernel_cases &&
         kernel_path == other.kernel_path && weakness == other.weakness;
}

Status ValidateCampaignSpec(const CampaignSpec& spec) {
  if (spec.cases < 1 || spec.cases > (int64_t{1} << 40)) {
    return OutOfRangeError("cases " + std::to_string(spec.cases) +
                           " is out of range; allowed: 1 to 2^40");
  }
  if (spec.bases.empty())
    return InvalidArgumentError("a campaign needs at least one base scenario");
  if (spec.arms.empty()) return InvalidArgumentError("a campaign needs at least one arm");
  if (spec.modes.empty()) return InvalidArgumentError("a campaign needs at least one tracker mode");
  for (size_t i = 0; i < spec.modes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (spec.modes[i] == spec.modes[j]) {
        return InvalidArgumentError(std::string("tracker mode '") + TrackerModeName(spec.modes[i]) +
                                    "' is listed twice");
      }
    }
  }
  if (spec.kernel_cases < 0 || spec.kernel_cases > spec.cases) {
    return OutOfRangeError("kernel cases " + std::to_string(spec.kernel_cases) +
                           " is out of range; allowed: 0 to the cases (" +
                           std::to_string(spec.cases) + ")");
  }
  if (spec.shard_count < 1 || spec.shard_index < 0 || spec.shard_index >= spec.shard_count) {
    return OutOfRangeError("shard " + std::to_string(spec.shard_index) + "/" +
                           std::to_string(spec.shard_count) +
                           " is out of range; allowed: i/n with 0 <= i < n");
  }
  return Status::Ok();
}

Status ParseShard(const std::string& text, int32_t& index, int32_t& count) {
  const size_t slash = text.find('/');
  const std::optional<int64_t> i =
      slash == std::string::npos ? std::nullopt : model::ParseInteger(text.substr(0, slash));
  const std::optional<int64_t> n =
      slash == std::string::npos ? std::nullopt : model::ParseInteger(text.substr(slash + 1));
  if (!i || !n || *n < 1 || *n > (1 << 20) || *i < 0 || *i >= *n) {
    return InvalidArgumentError("shard '" + text +
                                "' is not i/n with 0 <= i < n <= 1048576 (e.g. 0/4)");
  }
  index = static_cast<int32_t>(*i);
  count = static_cast<int32_t>(*n);
  return Status::Ok();
}

namespace {

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

Status EnvShard(const std::string& source, const char* index_name, const char* count_name,
                int64_t offset, int32_t& index, int32_t& count) {
  const char* index_text = Env(index_name);
  const char* count_text = Env(count_name);
  if (count_text == nullptr) {
    return InvalidArgumentError(source + ": " + index_name + " is set but " + count_name +
                                " is not");
  }
  const std::optional<int64_t> i = model::ParseInteger(index_text);
  if (!i) return InvalidArgumentError(source + ": " + index_name + " is not an integer");
  return ParseShard(std::to_string(*i - offset) + "/" + count_text, index, count)
      .WithContext(source);
}

}  // namespace

Status ShardFromEnvironment(int32_t& index, int32_t& count, std::string& source) {
  if (Env("TEST_SHARD_INDEX") != nullptr || Env("TEST_TOTAL_SHARDS") != nullptr) {
    source = "Bazel test sharding";
    if (Env("TEST_SHARD_INDEX") == nullptr) {
      return InvalidArgumentError(source +
                                  ": TEST_TOTAL_SHARDS is set but TEST_SHARD_INDEX is not");
    }
    return EnvShard(source, "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS", 0, index, count);
  }
  if (Env("SLURM_ARRAY_TASK_ID") != nullptr) {
    source = "Slurm job array";
    int64_t offset = 0;
    if (const char* min = Env("SLURM_ARRAY_TASK_MIN")) {
      const std::optional<int64_t> parsed = model::ParseInteger(min);
      if (!parsed) return InvalidArgumentError(source + ": SLURM_ARRAY_TASK_MIN is not an integer");
      offset = *parsed;
    }
    return EnvShard(source, "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", offset, index, count);
  }
  if (Env("JOB_COMPLETION_INDEX") != nullptr) {
    source = "Kubernetes Indexed Job";
    return EnvShard(source, "JOB_COMPLETION_INDEX", "KVSIM_SHARDS", 0, index, count);
  }
  return NotFoundError(
      "no shard in the environment (TEST_SHARD_INDEX, SLURM_ARRAY_TASK_ID or "
      "JOB_COMPLETION_INDEX)");
}

std::vector<int64_t> ShardCases(const CampaignSpec& spec) {
  std::vector<int64_t> cases;
  for (int64_t k = 0; k < spec.cases; ++k) {
    if (spec.InShard(k)) cases.push_back(k);
  }
  return cases;
}

}  // namespace kvsim::sim
