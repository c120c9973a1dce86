// A run report says where it came from (kvsim version, the scenario's content hash, a checksum of
// the whole file), and `replay` reads only what it can trust: an edited field is refused by the
// checksum, an edited scenario text by its content hash, a bad max_time_s by its range, another
// format version by name; another kvsim version is read and noted. The first differing field of
// two reports is named.
#include "sim/report/report_io.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/provenance.h"

namespace kvsim::sim {
namespace {

using J = nlohmann::ordered_json;

std::string Report() {
  RunReport report;
  report.scenario = "tiny";
  report.seed = 7;
  report.mode = "timing";
  report.backend = "cpu";
  report.state_hash = 0xabc;
  report.finished = 12;
  ReportContext context;
  context.scenario_argument = "tiny.yaml";
  context.scenario_path = "tiny.yaml";
  context.scenario_text = "name: tiny\n";
  context.reproduce = "kvsim run tiny.yaml --seed 0x7";
  std::ostringstream out;
  WriteReportJson(report, context, out);
  return out.str();
}

// `edit` applied to the report with its checksum made to match again.
std::string Resealed(const std::function<void(J&)>& edit) {
  J j = J::parse(Report());
  edit(j);
  j.erase("checksum");
  AddChecksum(j);
  return j.dump(2);
}

std::string ErrorOf(const std::string& text) {
  const Result<ReplayInput> read = ReadReplayInput(text, "r.json");
  if (read.ok()) return "ok";
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  return read.status().message();
}

TEST(ReportIoTest, AReportCarriesItsProvenanceAndReadsBack) {
  const std::string text = Report();
  const J j = J::parse(text);
  EXPECT_EQ(j.at("kvsim_version"), kKvsimVersion);
  EXPECT_EQ(
      j.at("scenario").at("content_hash"), "0x" + [] {
        char hex[17];
        std::snprintf(hex, sizeof hex, "%llx",
                      static_cast<unsigned long long>(ContentHash("name: tiny\n")));
        return std::string(hex);
      }());
  const Result<ReplayInput> read = ReadReplayInput(text, "r.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->seed, 7u);
  EXPECT_EQ(read->state_hash, 0xabcu);
  EXPECT_EQ(read->version_note, "");
  // FNV-1a's published test vectors: the empty string and "a".
  EXPECT_EQ(ContentHash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(ContentHash("a"), 0xaf63dc4c8601ec8cULL);
}

TEST(ReportIoTest, EditedFieldsAndBadValuesAreRefusedByName) {
  std::string edited = Report();
  edited.replace(edited.find("\"finished\": 12"), 14, "\"finished\": 13");
  EXPECT_NE(ErrorOf(edited).find("r.json: field 'checksum': "), std::string::npos)
      << ErrorOf(edited);
  J unsealed = J::parse(Report());
  unsealed.erase("checksum");
  EXPECT_NE(ErrorOf(unsealed.dump()).find("field 'checksum': missing"), std::string::npos);
  EXPECT_NE(ErrorOf(Resealed([](J& j) {
              j["scenario"]["text"] = "name: other\n";
            })).find("field 'scenario.content_hash': 0x"),
            std::string::npos);
  for (const J& bad : {J("one"), J(-1.0), J(1e300), J(nullptr)}) {
    EXPECT_NE(ErrorOf(Resealed([&](J& j) { j["run"]["max_time_s"] = bad; }))
                  .find("field 'run.max_time_s': '" + bad.dump() +
                        "'; expected a number of seconds from 0"),
              std::string::npos)
        << bad.dump() << ": " << ErrorOf(Resealed([&](J& j) { j["run"]["max_time_s"] = bad; }));
  }
  EXPECT_NE(ErrorOf(Resealed([](J& j) {
              j["run"].erase("max_time_s");
            })).find("field 'run.max_time_s': missing"),
            std::string::npos);
  for (const J& version : {J(0), J("one"), J(kReportFormatVersion - 1)}) {
    EXPECT_NE(ErrorOf(Resealed([&](J& j) { j["kvsim_report"] = version; })).find("kvsim_report"),
              std::string::npos)
        << version.dump();
  }
  EXPECT_NE(
      ErrorOf(Resealed([](J& j) { j.erase("kvsim_report"); })).find("no integer 'kvsim_report'"),
      std::string::npos);
  EXPECT_NE(ErrorOf(Resealed([](J& j) {
              j.erase("kvsim_version");
            })).find("field 'kvsim_version': missing"),
            std::string::npos);
}

TEST(ReportIoTest, AnotherKvsimVersionIsReadAndNoted) {
  const Result<ReplayInput> read =
      ReadReplayInput(Resealed([](J& j) { j["kvsim_version"] = "0.0.1"; }), "old.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->version_note,
            "old.json was written by kvsim 0.0.1; this is kvsim " + std::string(kKvsimVersion));
}

TEST(ReportIoTest, TheFirstDifferingFieldIsNamed) {
  const std::string report = Report();
  EXPECT_EQ(FirstReportDifference(report, report), "");
  // The checksum and the kvsim version are not the run's: they never count as a difference.
  EXPECT_EQ(FirstReportDifference(report, Resealed([](J& j) { j["kvsim_version"] = "9"; })), "");
  EXPECT_EQ(FirstReportDifference(report, Resealed([](J& j) { j["requests"]["finished"] = 11; })),
            "requests.finished: 12 in the report, 11 now");
  EXPECT_EQ(FirstReportDifference(report, Resealed([](J& j) { j.erase("steps"); })),
            "steps: in the report, missing now");
}

}  // namespace
}  // namespace kvsim::sim
