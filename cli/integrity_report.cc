// Integrity scenarios for the demo: three requests of two pages each, checked by the real tracker.
#include "cli/integrity_report.h"

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/text_table.h"
#include "kernels/backend.h"
#include "sim/access/step_checks.h"
#include "sim/access/step_table.h"
#include "sim/faults/bookkeeping_acts.h"
#include "sim/integrity/integrity_tracker.h"
#include "sim/memory/page_pool.h"

namespace kvsim::cli {
namespace {

constexpr int32_t kPageSize = 4;
constexpr int32_t kMaxPages = 4;
constexpr int32_t kRequests = 3;
constexpr const char* kNames[kRequests] = {"A", "B", "C"};

// Requests A, B, C (rows 0, 1, 2) hold two pages each and 7 tokens, recorded and mapped.
struct Batch {
  explicit Batch(int32_t tag_bits)
      : pool(PagePool::Create({16, ReuseOrder::kLifo, true, {tag_bits, TagPolicy::kGeneration, 0}})
                 .value()),
        recorded(kRequests),
        rows(kRequests, std::vector<int32_t>(kMaxPages, 0)),
        seq_lens(kRequests, 7),
        first_tokens(kRequests, 6) {
    for (int32_t r = 0; r < kRequests; ++r) {
      for (int32_t i = 0; i < 2; ++i) {
        recorded[static_cast<size_t>(r)].push_back(pool.Allocate().value());
        rows[static_cast<size_t>(r)][static_cast<size_t>(i)] =
            recorded[static_cast<size_t>(r)].back().page;
      }
    }
  }

  // Frees B's second page while B still records and maps it (a premature free), then hands it
  // out `times` times.
  void ReuseBsPage(int times) {
    const int32_t page = recorded[1][1].page;
    const Status freed = PrematureFree(pool, recorded[1][1]);
    KVSIM_CHECK(freed.ok()) << freed.ToString();
    for (int i = 0; i < times; ++i) {
      KVSIM_CHECK_EQ(pool.Allocate().value().page, page);  // LIFO: the page just freed
      if (i + 1 < times) {
        KVSIM_CHECK(pool.Release(page).ok());
      }
    }
  }

  PagePool pool;
  std::vector<std::vector<PageGrant>> recorded;
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> seq_lens;
  std::vector<int32_t> first_tokens;
};

struct Scenario {
  const char* divergence;
  const char* like;
  int32_t tag_bits;
  KvAccess access;
  bool check_writes;
  std::function<void(Batch&)> diverge;
};

// The tracker's verdicts on `scenario`, one line: the server's path, one launch table checked and
// the rows that pass selected from it.
Result<std::string> Verdict(Backend& backend, const Scenario& scenario) {
  Batch batch(scenario.tag_bits);
  TagTrackerOptions options;
  options.check_writes = scenario.check_writes;
  KVSIM_ASSIGN_OR_RETURN(TagTracker tracker, TagTracker::Create(backend, batch.pool, options));
  scenario.diverge(batch);
  std::vector<sim::RowSpan> spans;
  std::vector<const std::vector<PageGrant>*> recorded;
  for (int32_t r = 0; r < kRequests; ++r) {
    const size_t row = static_cast<size_t>(r);
    spans.push_back({&batch.rows[row],
                     scenario.access == KvAccess::kWrite ? batch.first_tokens[row] : 0,
                     batch.seq_lens[row]});
    recorded.push_back(&batch.recorded[row]);
  }
  sim::StepTable table;
  sim::PackStepTable(scenario.access, spans, table);
  sim::StepChecks checks(backend, tracker);
  KVSIM_ASSIGN_OR_RETURN(const std::vector<sim::StepAbort> aborts,
                         checks.CheckRecorded(table, recorded, kPageSize, batch.pool));
  if (aborts.empty()) return std::string("all proceed");
  std::string verdict;
  std::vector<bool> proceed(kRequests, true);
  for (const sim::StepAbort& abort : aborts) {
    proceed[abort.packed] = false;
    verdict += fmt::format("{}{} aborted: {} at logical page {}", verdict.empty() ? "" : "; ",
                           kNames[abort.packed], TagCheckCodeName(abort.abort.reason),
                           abort.abort.logical_page);
  }
  sim::StepTable launched;
  sim::SelectRows(table, proceed, launched);
  std::string proceeding;
  for (size_t row : launched.rows) {
    proceeding += (proceeding.empty() ? "" : ", ") + std::string(kNames[row]);
  }
  return verdict + "; " + proceeding + " proceed";
}

}  // namespace

Status PrintIntegrityScenarios(std::ostream& out) {
  const std::vector<Scenario> scenarios = {
      {"none", "-", 64, KvAccess::kRead, true, [](Batch&) {}},
      {"B's page freed while in use, then reused", "SGLang PR 24226", 64, KvAccess::kRead, true,
       [](Batch& b) { b.ReuseBsPage(1); }},
      {"A's row left pointing at dummy page 0", "vLLM PR 7018", 64, KvAccess::kRead, true,
       [](Batch& b) { CorruptEntry(b.rows[0], 0, 0); }},
      {"C's entry not a page at all", "garbage in the table", 64, KvAccess::kRead, true,
       [](Batch& b) { CorruptEntry(b.rows[2], 1, 99); }},
      {"C's length runs past its pages", "a length off by one", 64, KvAccess::kRead, true,
       [](Batch& b) { b.seq_lens[2] = LengthOverrun(b.seq_lens[2], 2); }},
      {"B appends into its freed, reused page", "SGLang 23392", 64, KvAccess::kWrite, true,
       [](Batch& b) { b.ReuseBsPage(1); }},
      {"the same, writes unchecked (published design)", "a stale write", 64, KvAccess::kWrite,
       false, [](Batch& b) { b.ReuseBsPage(1); }},
      {"2-bit tags, B's page reused 4 = 2^2 times", "tag wrap (theorem)", 2, KvAccess::kRead, true,
       [](Batch& b) { b.ReuseBsPage(4); }},
      {"B given A's pages by a prefix-hash collision", "vLLM GHSA-rm76-4mrf-v9r8", 64,
       KvAccess::kRead, true,
       [](Batch& b) {
         b.recorded[1] = b.recorded[0];
         b.rows[1] = b.rows[0];
       }},
  };
  out << "KV-cache integrity check (docs/integrity.md): requests A, B, C hold 7 tokens each in "
         "two pages of 4;\n"
         "each row is one bookkeeping divergence and the verdict of the batched tag check "
         "(64-bit generation tags unless stated).\n"
         "The last three pass by design: writes left unchecked, a tag that wrapped, and an "
         "expectation that was wrong from the start.\n\n";
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  TextTable table({"divergence", "like", "verdict"},
                  {TextTable::Align::kLeft, TextTable::Align::kLeft, TextTable::Align::kLeft});
  for (const Scenario& scenario : scenarios) {
    KVSIM_ASSIGN_OR_RETURN(const std::string verdict, Verdict(*backend, scenario));
    table.AddRow({scenario.divergence, scenario.like, verdict});
  }
  table.Print(out);
  return Status::Ok();
}

}  // namespace kvsim::cli
