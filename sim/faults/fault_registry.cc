// The registry's names and its docs table.
#include "sim/faults/fault_registry.h"

namespace kvsim::sim {
namespace {

// Joins the names of the set bits of `bits`, in bit order.
template <typename Bits>
std::string Join(Bits bits, std::initializer_list<std::pair<Bits, const char*>> names,
                 const char* empty) {
  std::string text;
  for (const auto& [bit, name] : names) {
    if ((bits & bit) != 0) text += (text.empty() ? "" : ", ") + std::string(name);
  }
  return text.empty() ? empty : text;
}

}  // namespace

const char* FaultClassName(FaultClass fault_class) {
  switch (fault_class) {
    case FaultClass::kRead:
      return "R";
    case FaultClass::kWrite:
      return "W";
    case FaultClass::kReadWrite:
      return "RW";
    case FaultClass::kWrittenState:
      return "S";
    case FaultClass::kNone:
      return "N";
    case FaultClass::kControl:
      return "control";
  }
  return "unknown";
}

const char* CheckLayerName(CheckLayer layer) {
  switch (layer) {
    case CheckLayer::kTagCheck:
      return "the tag check";
    case CheckLayer::kSeal:
      return "the seal";
    case CheckLayer::kNone:
      return "none";
  }
  return "unknown";
}

std::string VerdictBitsText(uint8_t bits) {
  return Join<uint8_t>(bits,
                       {{kWrongPageBit, "wrong page"},
                        {kUnwrittenBit, "unwritten slot"},
                        {kForeignWriteBit, "foreign write"},
                        {kWrongContentBit, "wrong content"}},
                       "none");
}

std::string SwarmNeedsText(uint16_t needs) {
  return Join<uint16_t>(needs,
                        {{kNeedsPrefixCache, "prefix cache"},
                         {kNeedsDisaggregation, "disaggregation"},
                         {kNeedsCancellations, "cancellations"},
                         {kNeedsSlowTransfers, "slow transfers"},
                         {kNeedsPageChunks, "one-page prefill chunks"},
                         {kNeedsKernelMode, "kernel mode"},
                         {kNeedsKvStore, "a slow KV store"}},
                        "-");
}

const char* FaultHookPackage(FaultHook hook) {
  switch (hook) {
    case FaultHook::kScheduler:
      return "sim/sched";
    case FaultHook::kServer:
      return "sim/server";
    case FaultHook::kDataPlane:
      return "sim/dataplane";
  }
  return "unknown";
}

const char* BookkeepingActName(BookkeepingAct act) {
  switch (act) {
    case BookkeepingAct::kNone:
      return "-";
    case BookkeepingAct::kCorruptEntry:
      return "corrupt_entry";
    case BookkeepingAct::kPrematureFree:
      return "premature_free";
    case BookkeepingAct::kUncountedHolder:
      return "uncounted_holder";
    case BookkeepingAct::kLengthOverrun:
      return "length_overrun";
    case BookkeepingAct::kForgedGrant:
      return "forged_grant";
  }
  return "unknown";
}

namespace {

// The presets under which a row's bug can act: those that raise none of its bars.
std::string ReachingPresets(uint8_t barred_by) {
  std::string names;
  for (const PresetBars& preset : kPresetBars) {
    if ((preset.bars & barred_by) != 0) continue;
    names += (names.empty() ? "" : ", ") + std::string(preset.preset);
  }
  return names.empty() ? "none" : names;
}

}  // namespace

std::string FaultRegistryMarkdown() {
  std::string text =
      "<!-- the fault registry (sim/faults/fault_registry.h); generated: bazel run "
      "//tools/fault_table -->\n"
      "| # | site | where it acts | the real bug | class |\n"
      "|---|---|---|---|---|\n";
  for (const FaultRow& row : kFaultRegistry) {
    text += "| " + std::to_string(row.number) + " | `" + row.name + "` | " + row.acts + " | " +
            row.bug + " | " + FaultClassName(row.expected) + " |\n";
  }
  text +=
      "\n"
      "| # | caught by | may cause, unchecked | records when it fires | the swarm draws | acts in "
      "| the proof's act | reachable under the presets |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const FaultRow& row : kFaultRegistry) {
    text += "| " + std::to_string(row.number) + " | " + CheckLayerName(row.caught_by) + " | " +
            VerdictBitsText(row.may_produce) + " | " + row.records + " | " +
            SwarmNeedsText(row.needs) + " | `" + row.hook_at + "` (" + FaultHookPackage(row.hook) +
            ") | " + BookkeepingActName(row.act) + " | " + ReachingPresets(row.barred_by) + " |\n";
  }
  text +=
      "\n"
      "| site | drawn but nothing changed when |\n"
      "|---|---|\n";
  for (const FaultRow& row : kFaultRegistry) {
    if (row.idle_when[0] == '\0') continue;
    text += "| `" + std::string(row.name) + "` | " + row.idle_when + " |\n";
  }
  text +=
      "| the others | never: each changes the request's tables, rows or pages when it fires |\n"
      "<!-- end of the fault registry -->\n";
  return text;
}

}  // namespace kvsim::sim
