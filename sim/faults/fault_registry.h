// The fault registry: every bookkeeping bug kvsim plants, one row each, in one table. A row says
// what the bug does and where (its hook), the upstream bug it models, the class the catalogue
// expects and the layer of checks that catches it, the classes of wrong access it may cause when
// nothing catches it, what it records when it fires, and what a drawn case needs for the bug to be
// reachable. The campaign's judge, the swarm, the names the CLI and the YAML accept and the table
// of docs/faults.md (a test renders this table and compares) all read it; nothing else lists
// faults. docs/faults.md, "Adding a fault", says what a new row needs besides.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace kvsim::sim {

// The planted bugs, in registry order (row n is site n - 1).
enum class FaultSite : uint8_t {
  kDuplicateNotRewritten,
  kRematchKeepsLength,
  kAbortFreesTreePages,
  kTransferAbortFrees,
  kAsyncFreeBeforeWrite,
  kPublishBeforeWritten,
  kNoHitTableZeroed,
  kReadPastLength,
  kCommittedAheadOfWrites,
  kPrefixHashCollision,
  kDoubleFree,
  kStoreReadsFreedPages,
  kBatchCompositionNoise,
};
inline constexpr int kFaultSites = 13;

// Which layer of checks the catalogue expects to catch a bug before it corrupts data: the read
// check (R), the write check (W), both (RW), only a written-state layer that checks which slots
// were written (S), no ownership check at all (N), or nothing to catch (the control).
enum class FaultClass : uint8_t { kRead, kWrite, kReadWrite, kWrittenState, kNone, kControl };

// The layer of checks that stops a bug: the tag check (R, W and RW bugs), the written-state seal
// (S bugs), or none (N bugs and the control).
enum class CheckLayer : uint8_t { kTagCheck, kSeal, kNone };

// Classes of access that ran wrong, as the ownership oracle names them (sim/oracle: its
// AccessVerdict values 1 to 4, as bits; sim/campaign/outcome.cc checks the correspondence).
enum VerdictBit : uint8_t {
  kWrongPageBit = 1 << 1,     // a page no longer the accessor's
  kUnwrittenBit = 1 << 2,     // a slot its allocation never wrote
  kForeignWriteBit = 1 << 3,  // a slot another allocation wrote
  kWrongContentBit = 1 << 4,  // the accessor's page, holding another sequence's data
};
inline constexpr uint8_t kAnyWrongAccess =
    kWrongPageBit | kUnwrittenBit | kForeignWriteBit | kWrongContentBit;

// What a drawn case needs for a bug to be reachable; the swarm draws these for a site's own arm.
enum SwarmNeed : uint16_t {
  kNeedsPrefixCache = 1 << 0,  // a unified pool with a prefix cache and shared prefixes
  kNeedsDisaggregation =
      1 << 1,  // a prefill instance and a decode instance joined by a transfer link
  kNeedsCancellations = 1 << 2,  // cancellations, some after a delay
  kNeedsSlowTransfers = 1 << 3,  // transfers slow enough that cancellations land during them
  kNeedsPageChunks = 1 << 4,     // prefill chunks of one page, and several requests running
  kNeedsKernelMode = 1 << 5,     // kernel mode (the site sits in the data plane)
  kNeedsKvStore = 1 << 6,        // a KV store that finished requests are copied out to, slowly
};

// Scheduler rules under which a bug's decision point never runs (docs/simulator.md, "Engine
// presets"): the swarm lifts them for the site's own arm, and the registry's table names the
// presets under which the bug stays reachable.
enum RuleBar : uint8_t {
  kBarredWhereDuplicatesKept = 1 << 0,  // `duplicates: keep`: no duplicate page is ever freed
};

// The rules each engine preset sets, as the bars they raise (sim/sched/engine_preset.cc sets the
// rules; tests/sim/sched/engine_preset_test.cc checks that the two agree).
struct PresetBars {
  const char* preset;  // as `scheduler.engine` spells it
  uint8_t bars;        // RuleBar
};
inline constexpr std::array<PresetBars, 4> kPresetBars = {{
    {"custom", 0},
    {"vllm-v1", kBarredWhereDuplicatesKept},
    {"sglang", 0},
    {"vidur", 0},
}};

// Where a bug acts: the package whose code its hook is in.
enum class FaultHook : uint8_t { kScheduler, kServer, kDataPlane };

// The bookkeeping act a bug commits on the page tables, stripped of the server around it: what the
// integrity theorem's fault model calls a divergence (docs/integrity.md, "Fault model"). The
// exhaustive proof world (sim/proof) commits each act on every page, request and position a
// bounded run reaches (sim/faults/bookkeeping_acts.h has the functions); the rows of one act share
// its catching layer, which the proof checks.
enum class BookkeepingAct : uint8_t {
  kNone,             // no page-table act: a KV write skipped, a publish too early, or no bug
  kCorruptEntry,     // D1, D2: a block-table entry becomes another page, or no page at all
  kPrematureFree,    // D3: a reference released while its holder still records and maps the page
  kUncountedHolder,  // D4: a holder of a page that the page's reference count does not count
  kLengthOverrun,    // D5: the kernel's sequence length runs past the recorded tokens
  // Out of the theorem's scope: a page another allocation holds is recorded as the request's own,
  // so its expectation is wrong from the start.
  kForgedGrant,
};
inline constexpr int kBookkeepingActs = 6;

struct FaultRow {
  FaultSite site;
  int32_t number;    // 1, 2, ... in registry order, as docs/faults.md numbers them
  const char* name;  // as the YAML `faults:` map, `--arms` and reports spell it
  const char* acts;  // where it acts and what it does
  const char* bug;   // the upstream bug it models, or "synthetic: ..."
  FaultClass expected;
  CheckLayer caught_by;
  uint8_t may_produce;  // VerdictBit: wrong accesses it may cause with `caught_by` off
  const char* records;  // what FaultInjector::Changed records when it fires
  uint16_t needs;       // SwarmNeed
  FaultHook hook;
  const char* hook_at;    // the function it acts in
  const char* idle_when;  // when it can be drawn and change nothing; "" when never
  BookkeepingAct act;     // what it does to the page tables, as the exhaustive proof commits it
  uint8_t barred_by;      // RuleBar: rules under which it cannot act
};

// clang-format off
inline constexpr std::array<FaultRow, kFaultSites> kFaultRegistry = {{
    {FaultSite::kDuplicateNotRewritten, 1, "duplicate_not_rewritten",
     "prefix-cache insert: a page another request cached first is freed as a duplicate, the "
     "request's table still maps it",
     "mini-sglang PR 142", FaultClass::kRead, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; the freed page", kNeedsPrefixCache, FaultHook::kScheduler,
     "Scheduler::CachePrefill", "", BookkeepingAct::kPrematureFree, kBarredWhereDuplicatesKept},
    {FaultSite::kRematchKeepsLength, 2, "rematch_keeps_length",
     "(re)admission with a prefix match: the matched pages are recorded but the protected length "
     "is not moved, so the request takes no reference and its release frees pages the tree owns",
     "SGLang PR 24193 / issue 23392", FaultClass::kRead, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; the matched pages it holds no reference to", kNeedsPrefixCache,
     FaultHook::kScheduler, "Scheduler::AdmitHead", "", BookkeepingAct::kUncountedHolder, 0},
    {FaultSite::kAbortFreesTreePages, 3, "abort_frees_tree_pages",
     "a cancellation after the prefill was cached releases the tree's references with its own",
     "SGLang issue 38319 / PR 38355", FaultClass::kRead, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; the tree's pages it released", kNeedsPrefixCache | kNeedsCancellations,
     FaultHook::kScheduler, "Scheduler::End",
     "the cancelled request shares no page with the prefix cache (or its releases are refused)",
     BookkeepingAct::kPrematureFree, 0},
    {FaultSite::kTransferAbortFrees, 4, "transfer_abort_frees",
     "disaggregation: a request cancelled during its KV transfer frees the decode instance's "
     "pages at once; the transfer still writes them when it lands",
     "SGLang 24527, vLLM PR 56104", FaultClass::kWrite, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; its decode-pool pages", kNeedsDisaggregation | kNeedsSlowTransfers |
     kNeedsCancellations, FaultHook::kServer, "Server::OnCancel", "",
     BookkeepingAct::kPrematureFree, 0},
    {FaultSite::kAsyncFreeBeforeWrite, 5, "async_free_before_write",
     "a request finishing at step N frees its pages while the write of step N + 1, already "
     "dispatched, is still to land (a \"zombie\" whose last write lands at its own simulated time)",
     "vLLM PRs 45357 / 45096", FaultClass::kWrite, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; its pages", 0, FaultHook::kScheduler, "Scheduler::CompleteStep", "",
     BookkeepingAct::kPrematureFree, 0},
    {FaultSite::kPublishBeforeWritten, 6, "publish_before_written",
     "a prefill's pages are published to the prefix cache before its KV is written; a request "
     "matching them in the same step reads slots nobody wrote",
     "vLLM PR 38715, SGLang PR 24175", FaultClass::kWrittenState, CheckLayer::kSeal,
     kUnwrittenBit, "the request; the published pages", kNeedsPrefixCache | kNeedsPageChunks,
     FaultHook::kScheduler, "Scheduler::AdmitHead", "the prefix cache refuses the insert",
     BookkeepingAct::kNone, 0},
    {FaultSite::kNoHitTableZeroed, 7, "no_hit_table_zeroed",
     "a request admitted without a cache hit gets block-table entries [0, 0, ...] for its first "
     "chunk, while the server records the pages it granted",
     "vLLM PR 7018", FaultClass::kRead, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; the pages its row no longer maps", 0, FaultHook::kScheduler,
     "Scheduler::AdmitHead", "every entry of the request's block row is page 0 already",
     BookkeepingAct::kCorruptEntry, 0},
    {FaultSite::kReadPastLength, 8, "read_past_length",
     "a read's length mask runs past the request's tokens into the rest of its last page",
     "TensorRT-LLM PR 18754 (guard pages and masks), vLLM 54193", FaultClass::kWrittenState,
     CheckLayer::kSeal, kUnwrittenBit, "the request; its last page", 0, FaultHook::kServer,
     "Server::PlantRowBugs", "", BookkeepingAct::kLengthOverrun, 0},
    {FaultSite::kCommittedAheadOfWrites, 9, "committed_ahead_of_writes",
     "a token's KV write is skipped while the committed length moves past it",
     "synthetic: the general form of rows 6 and 8", FaultClass::kWrittenState, CheckLayer::kSeal,
     kUnwrittenBit, "the request; the page of the skipped slot", 0, FaultHook::kServer,
     "Server::PlantRowBugs", "", BookkeepingAct::kNone, 0},
    {FaultSite::kPrefixHashCollision, 10, "prefix_hash_collision",
     "an admission matches another prefix's cached pages, as colliding hashes would",
     "vLLM GHSA-rm76-4mrf-v9r8", FaultClass::kNone, CheckLayer::kNone, kWrongContentBit,
     "the request; the other prefix's pages", kNeedsPrefixCache, FaultHook::kScheduler,
     "Scheduler::AdmitHead",
     "the other prefix's match maps the same pages as the request's own would (both empty, or "
     "identical)", BookkeepingAct::kForgedGrant, 0},
    {FaultSite::kDoubleFree, 11, "double_free",
     "a released page is freed twice: it sits on the free list twice and is granted to two "
     "owners; each grant changes its tag",
     "SGLang PR 18694", FaultClass::kReadWrite, CheckLayer::kTagCheck, kAnyWrongAccess,
     "the request; the page freed twice", 0, FaultHook::kScheduler, "Scheduler::End",
     "the pool refuses the second release (the dummy page)", BookkeepingAct::kPrematureFree, 0},
    {FaultSite::kStoreReadsFreedPages, 12, "store_reads_freed_pages",
     "a finished request's KV is copied out to the KV store asynchronously; its pages are freed "
     "when the copy starts instead of when it has read them, and the copy reads them when it "
     "completes (a check when the copy starts passes: every page is still the request's)",
     "vLLM issue 52360 / PR 52372 (a store job read blocks a preemption had freed and another "
     "request reused), SGLang PR 24226 (decode offload freed slots while device-to-host copies "
     "were in flight)",
     FaultClass::kRead, CheckLayer::kTagCheck, kWrongPageBit | kWrongContentBit,
     "the request; its pages",
     kNeedsKvStore, FaultHook::kServer, "Server::StartStore", "", BookkeepingAct::kPrematureFree, 0},
    {FaultSite::kBatchCompositionNoise, 13, "batch_composition_noise",
     "kernel mode runs a step's decode as two launches: outputs vary with batch composition, no "
     "page is stale",
     "SGLang 22819, vLLM 39146 (the symptom without its cause)", FaultClass::kControl,
     CheckLayer::kNone, 0, "nothing (no page, no request)", kNeedsKernelMode,
     FaultHook::kDataPlane, "KernelDataPlane::Reads", "", BookkeepingAct::kNone, 0},
}};
// clang-format on

// Row n is site n - 1, numbered n: no gaps, no reordering.
constexpr bool RegistryInOrder() {
  for (int i = 0; i < kFaultSites; ++i) {
    const FaultRow& row = kFaultRegistry[static_cast<size_t>(i)];
    if (static_cast<int>(row.site) != i || row.number != i + 1) return false;
  }
  return true;
}
static_assert(RegistryInOrder(), "kFaultRegistry: row n must be site n - 1, numbered n");
// The last enumerator closes the registry: a site added after it without a row fails here.
static_assert(static_cast<int>(FaultSite::kBatchCompositionNoise) + 1 == kFaultSites,
              "kFaultSites: one row per FaultSite");

inline const FaultRow& FaultRowOf(FaultSite site) {
  return kFaultRegistry[static_cast<size_t>(site)];
}

// "R", "W", "RW", "S", "N", "control".
const char* FaultClassName(FaultClass fault_class);
// "the tag check", "the seal", "none".
const char* CheckLayerName(CheckLayer layer);
// "wrong page, unwritten slot, ..." for a VerdictBit set; "none" when empty.
std::string VerdictBitsText(uint8_t bits);
// "prefix cache, cancellations" for a SwarmNeed set; "-" when empty.
std::string SwarmNeedsText(uint16_t needs);
// "sim/sched", "sim/server", "sim/dataplane".
const char* FaultHookPackage(FaultHook hook);
// "corrupt_entry", "premature_free", "uncounted_holder", "length_overrun", "forged_grant"; "-"
// for kNone.
const char* BookkeepingActName(BookkeepingAct act);
// Whether the integrity theorem covers the act: all but kForgedGrant, which makes the request's
// expectation itself wrong (assumption A1), which no check of the expectation can see.
constexpr bool InTheoremScope(BookkeepingAct act) { return act != BookkeepingAct::kForgedGrant; }

// The rows of one act agree on the layer that catches them: the proof checks that layer once for
// all of them.
constexpr bool ActsAgreeOnTheirLayer() {
  for (const FaultRow& a : kFaultRegistry) {
    for (const FaultRow& b : kFaultRegistry) {
      if (a.act == b.act && a.act != BookkeepingAct::kNone && a.caught_by != b.caught_by) {
        return false;
      }
    }
  }
  return true;
}
static_assert(ActsAgreeOnTheirLayer(), "kFaultRegistry: the rows of one act name one layer");

// The registry as docs/faults.md prints it: the catalogue table and the table of the rows' other
// columns, between the markers a test looks for.
std::string FaultRegistryMarkdown();

}  // namespace kvsim::sim
