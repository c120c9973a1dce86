// Scenario generators: one drawing function per section, each drawing its simplest choice first.
#include "properties/sim/scenario/scenario_generators.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/kv_format.h"
#include "base/seed.h"
#include "sim/dataplane/kernel_spec.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/sched/engine_preset.h"

namespace kvsim::sim {
namespace {

// The longest prompt and output a generated request draws (before shared prefixes and sessions);
// the most requests and closed-loop clients.
constexpr int32_t kMostPromptTokens = 64;
constexpr int32_t kMostOutputTokens = 32;
constexpr int64_t kMostRequests = 40;
constexpr int32_t kMostClients = 16;

int32_t Int(int32_t lo, int32_t hi_inclusive) { return *rc::gen::inRange(lo, hi_inclusive + 1); }

bool Chance() { return *rc::gen::arbitrary<bool>(); }

// k / 8 for k in [lo, 8], as parts per million.
int64_t EighthsPpm(int32_t lo) { return int64_t{Int(lo, 8)} * (kPartsPerMillion / 8); }

// Quarters in [lo / 4, hi / 4]: every such value is exact in binary and in the YAML's decimal.
double Quarters(int32_t lo, int32_t hi) { return Int(lo, hi) / 4.0; }

// A length in [1, most] from any distribution, with only the fields its kind reads set.
LengthSpec DrawLength(int32_t most) {
  LengthSpec spec;
  spec.kind = *rc::gen::element(LengthKind::kFixed, LengthKind::kUniform, LengthKind::kLogNormal,
                                LengthKind::kZipf);
  if (spec.kind == LengthKind::kFixed) {
    spec.value = Int(1, most);
    return spec;
  }
  spec.min = Int(1, most);
  spec.max = Int(spec.min, most);
  if (spec.kind == LengthKind::kLogNormal) {
    spec.median = Int(1, most);
    spec.sigma = Quarters(0, 8);
  } else if (spec.kind == LengthKind::kZipf) {
    spec.zipf_s = Quarters(1, 12);
  }
  return spec;
}

model::PlanSettings DrawDeployment() {
  model::PlanSettings settings;
  settings.model = "llama-3.1-70b";
  settings.gpu = "h200-sxm";
  model::Deployment& d = settings.deployment;
  d.gpus = 2;
  d.tp = 2;
  d.context_tokens = 128;
  // llama-3.1-70b is GQA: every format but MLA's tiles.
  std::vector<KvFormat> formats;
  for (const KvFormat format : AllKvFormats()) {
    if (format.scaling != KvScaling::kMlaBlock128) formats.push_back(format);
  }
  d.kv_format = *rc::gen::elementOf(formats);
  d.page_size = *rc::gen::element(1, 3, 4, 16);
  return settings;
}

void DrawPool(Scenario& s) {
  s.pool_pages = Int(8, 96);
  // Generated pools may be too small for every request: refusing them all is a property too.
  s.pool_refuses_all = true;
  PagePoolConfig& pool = s.server.scheduler.pool;
  pool.reuse_order = *rc::gen::element(ReuseOrder::kLifo, ReuseOrder::kFifo);
  pool.reserve_dummy_page = Chance();
  pool.tags.width_bits = *rc::gen::element(64, 32, 16, 8, 4, 2);
  pool.tags.policy = *rc::gen::element(TagPolicy::kGeneration, TagPolicy::kRandom);
}

void DrawScheduler(SchedulerConfig& s, bool favour_sharing) {
  s.reservation = *rc::gen::element(Reservation::kFull, Reservation::kPrompt);
  s.max_running = Int(1, 16);
  s.chunked_prefill = !Chance();
  // With chunked prefill, tiny budgets (a prompt in many chunks), moderate or ample ones (whole
  // prompts and every decode at once); without, budgets that hold most prompts whole.
  switch (s.chunked_prefill ? Int(0, 2) : 2) {
    case 0:
      s.token_budget = Int(1, 8);
      break;
    case 1:
      s.token_budget = Int(9, 64);
      break;
    default:
      s.token_budget = Int(65, 512);
      break;
  }
  s.watermark_pages = Int(0, 4);
  s.victim = *rc::gen::element(PreemptionVictim::kNewest, PreemptionVictim::kMostPages);
  s.prefix_cache =
      favour_sharing ? *rc::gen::weightedElement<bool>({{1, false}, {3, true}}) : Chance();
  s.eviction = *rc::gen::element(EvictionPolicy::kLru, EvictionPolicy::kLfu);
  if (*rc::gen::weightedElement<bool>({{3, false}, {1, true}})) s.max_model_tokens = Int(32, 160);
  // An engine's rules half the time, each then overridden one time in four by any value.
  if (Chance()) {
    ApplyEnginePreset(
        *rc::gen::element(EnginePreset::kVllmV1, EnginePreset::kSglang, EnginePreset::kVidur), s);
  }
  const auto sometimes = [] { return *rc::gen::weightedElement<bool>({{3, false}, {1, true}}); };
  if (sometimes()) {
    s.reservation = *rc::gen::element(Reservation::kFull, Reservation::kPrompt,
                                      Reservation::kSglang, Reservation::kWholePrompt);
  }
  if (sometimes()) {
    s.publish = *rc::gen::element(PrefixPublication::kAfterPrefill, PrefixPublication::kAfterChunk,
                                  PrefixPublication::kOnSchedule);
  }
  if (sometimes()) {
    s.output_caching = *rc::gen::element(OutputCaching::kNone, OutputCaching::kAtEnd,
                                         OutputCaching::kWhileDecoding);
  }
  if (sometimes()) {
    s.eviction =
        *rc::gen::element(EvictionPolicy::kLru, EvictionPolicy::kLfu, EvictionPolicy::kFreeTime);
  }
  if (sometimes()) {
    s.victim = *rc::gen::element(PreemptionVictim::kNewest, PreemptionVictim::kMostPages,
                                 PreemptionVictim::kFewestOutputs, PreemptionVictim::kPriority);
  }
  if (sometimes()) s.mixed_steps = Chance();
  if (sometimes()) s.free_duplicates = Chance();
  if (sometimes()) s.length_limit = Chance() ? LengthLimit::kReject : LengthLimit::kClip;
}

ArrivalSpec DrawArrival() {
  ArrivalSpec a;
  a.kind = *rc::gen::element(ArrivalKind::kPoisson, ArrivalKind::kGamma, ArrivalKind::kBurst,
                             ArrivalKind::kFixedRate);
  a.rate_per_s = Int(1, 2000);
  if (a.kind == ArrivalKind::kGamma) a.cv = Quarters(1, 16);
  if (a.kind == ArrivalKind::kBurst) a.burst_size = Int(1, 8);
  return a;
}

WorkloadSpec DrawWorkload(int32_t pool_tokens, bool prefix_cache, bool favour_sharing) {
  WorkloadSpec w;
  w.loop = *rc::gen::element(LoopKind::kClosed, LoopKind::kOpen);
  w.requests = *rc::gen::inRange<int64_t>(1, kMostRequests + 1);
  if (w.loop == LoopKind::kClosed) {
    w.clients = Int(1, kMostClients);
    w.think_ns = SimNs{Int(0, 20)} * 1'000'000;
  } else {
    w.arrival = DrawArrival();
  }
  // Prompts and outputs of up to a quarter of the pool (several requests run at once, even fully
  // reserved), or up to half of it (the pool runs out sooner); a shared prefix and a declared
  // output beyond the longest add up to half as much again.
  const int32_t most = std::clamp(pool_tokens / *rc::gen::element(4, 2), 1, kMostPromptTokens);
  w.prompt_tokens = DrawLength(most);
  w.output_tokens = DrawLength(std::min(most, kMostOutputTokens));
  // 0 declares the longest output drawn; more makes full reservation set aside pages never used.
  if (Chance()) w.max_new_tokens = w.output_tokens.upper() + Int(0, most / 2);
  if (Chance()) w.priority_levels = Int(2, 4);
  // Shared prefixes mostly where a prefix cache can share them (and find duplicates).
  const bool shared = prefix_cache ? *rc::gen::weightedElement<bool>({{1, false}, {3, true}})
                                   : *rc::gen::weightedElement<bool>({{3, false}, {1, true}});
  if (shared) {
    w.shared_prefix.groups = Int(1, favour_sharing ? 2 : 4);
    w.shared_prefix.tokens = Int(1, std::max(1, most / 2));
    w.shared_prefix.share_ppm = EighthsPpm(favour_sharing ? 4 : 1);
    w.shared_prefix.zipf_s = Quarters(0, 8);
  }
  if (w.loop == LoopKind::kClosed && Chance()) {
    w.sessions = SessionSpec{DrawLength(4), SimNs{Int(0, 10)} * 1'000'000};
  }
  if (Chance()) {
    w.cancel.probability_ppm = EighthsPpm(1);
    w.cancel.at_page_boundary = Chance();
    if (!w.cancel.at_page_boundary) w.cancel.after_ms = DrawLength(200);
    w.cancel.retry_ppm = EighthsPpm(0);
    w.cancel.retry_delay_ns = SimNs{Int(0, 20)} * 1'000'000;
  }
  return w;
}

// Kernel mode's small model: GQA (1 to 3 KV heads of 64, 128 or 256, groups of 1 to 4) or MLA (1
// to 8 query heads), 1 to 3 layers, and a KV format and INT4 group size the shape supports.
KernelSpec DrawKernel() {
  KernelSpec k;
  k.attention = *rc::gen::element(AttentionKind::kGqa, AttentionKind::kMla);
  if (k.attention == AttentionKind::kGqa) {
    k.kv_heads = Int(1, 3);
    k.head_dim = *rc::gen::element(64, 128, 256);
    k.q_heads = k.kv_heads * Int(1, 4);
  } else {
    k.kv_heads = 1;
    k.head_dim = kMlaHeadDim;
    k.q_heads = Int(1, 8);
  }
  k.layers = Int(1, 3);
  k.gemm_n = *rc::gen::element(128, 256);
  k.check_every = Int(1, 3);
  std::vector<KernelSpec> valid;
  for (const KvFormat format : AllKvFormats()) {
    for (const int group_size : {32, 64, 128}) {
      KernelSpec candidate = k;
      candidate.kv_format = format;
      candidate.group_size = group_size;
      if (ValidateKernelSpec(candidate).ok()) valid.push_back(candidate);
    }
  }
  RC_ASSERT(!valid.empty());
  return *rc::gen::elementOf(valid);
}

// `favour_sharing`: the prefix cache on three times in four (else one in two), and shared
// prefixes of one or two groups that at least half the requests start with, so that requests
// admitted together compute the same pages and the cache finds duplicates.
Scenario DrawScenario(ModeDraw modes, bool favour_sharing) {
  Scenario s;
  s.name = "generated";
  s.seed = *rc::gen::arbitrary<uint64_t>();
  s.mode = modes == ModeDraw::kTiming
               ? RunMode::kTiming
               : *rc::gen::weightedElement<RunMode>({{7, RunMode::kTiming}, {1, RunMode::kKernel}});
  s.deployment = DrawDeployment();
  DrawPool(s);
  DrawScheduler(s.server.scheduler, favour_sharing);
  s.server.workload = DrawWorkload(s.pool_pages * s.deployment.deployment.page_size,
                                   s.server.scheduler.prefix_cache, favour_sharing);
  s.server.tag_tracker = Chance();
  s.server.check_writes = !Chance();
  s.oracle = Chance();
  s.kernel = DrawKernel();
  s.server.limits.sweep_every_events = *rc::gen::element<int64_t>(1, 16, 1000);
  return s;
}

}  // namespace

rc::Gen<Scenario> GenScenario(ModeDraw modes) {
  return rc::gen::exec([modes] { return DrawScenario(modes, false); });
}

rc::Gen<Scenario> GenScenarioWithPlantedBugs() {
  return rc::gen::exec([] {
    Scenario s = DrawScenario(ModeDraw::kTiming, true);
    s.server.tag_tracker = true;
    s.server.check_writes = true;
    s.oracle = true;
    TagConfig& tags = s.server.scheduler.pool.tags;
    tags.width_bits = tags.policy == TagPolicy::kGeneration ? *rc::gen::element(64, 32, 16)
                                                            : *rc::gen::element(64, 32);
    FaultMix& plan = s.server.faults;
    // Each site always fires (the simplest case, where a shrink heads), or half or an eighth of
    // the times it is reached.
    const auto probability = [] {
      return *rc::gen::element(kPartsPerMillion, kPartsPerMillion / 2, kPartsPerMillion / 8);
    };
    // Only the sites the catalogue expects the tag check to catch (R, W, RW): the S and N
    // classes escape it by design, and the campaigns measure them.
    std::vector<int> caught;
    for (int site = 0; site < kFaultSites; ++site) {
      const FaultClass expected = FaultSiteExpected(static_cast<FaultSite>(site));
      if (expected == FaultClass::kRead || expected == FaultClass::kWrite ||
          expected == FaultClass::kReadWrite) {
        caught.push_back(site);
      }
    }
    for (int site : caught) {
      plan.ppm[static_cast<size_t>(site)] = Chance() ? probability() : 0;
    }
    if (!plan.any()) plan.ppm[static_cast<size_t>(*rc::gen::elementOf(caught))] = probability();
    return s;
  });
}

void showValue(const Scenario& scenario, std::ostream& os) {
  os << "\n"
     << ScenarioToYaml(scenario) << "# kvsim run generated.yaml --seed "
     << FormatSeed(scenario.seed) << " --mode " << RunModeName(scenario.mode) << "\n";
}

}  // namespace kvsim::sim
