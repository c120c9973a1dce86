// CLI11's messages ("At Most 1 required but received 2", "Could not convert: ...") rewritten to
// say what was wrong and what to do.
#include "cli/parse_error_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kvsim::cli {
namespace {

// Edits (insert, delete, substitute) between `a` and `b`; both are option names of a few letters.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Options renamed so that each name means one thing: the former name, then the present one.
constexpr std::pair<const char*, const char*> kRenamedOptions[] = {
    {"kv-dtype", "kv-format"},  // the KV cache's format: a dtype and its scaling
    {"trace", "timeline"},      // a trace is a workload's; the run's record in time is a timeline
};

// The long option of `app` that `given` ("--kv_format", "--concurency") most likely meant: the
// present name of a renamed option, the same name with '-' for '_', else the nearest within two
// edits; empty when none is near.
std::string Nearest(const CLI::App& app, std::string given) {
  given.erase(0, given.find_first_not_of('-'));
  given = given.substr(0, given.find('='));
  std::string dashed = given;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (const auto& [former, present] : kRenamedOptions) {
    if (dashed == former && app.get_option_no_throw(std::string("--") + present) != nullptr) {
      return std::string("--") + present;
    }
  }
  std::string best;
  size_t best_distance = 3;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      const size_t distance = name == dashed ? 0 : EditDistance(name, given);
      if (distance < best_distance) {
        best = "--" + name;
        best_distance = distance;
      }
    }
  }
  return best;
}

// "an integer" for INT, "a number" for FLOAT: what the option's type name promises.
std::string TypeWords(const CLI::App& app, const std::string& name) {
  const CLI::Option* option = app.get_option_no_throw(name);
  const std::string type = option == nullptr ? "" : option->get_type_name();
  if (type == "INT" || type == "UINT") return "an integer";
  if (type == "FLOAT") return "a number";
  return "a value it takes";
}

std::string UnexpectedText(const CLI::App& app, const std::string& arguments) {
  // CLI11 lists the arguments last first.
  std::vector<std::string> words;
  std::istringstream stream(arguments);
  for (std::string word; stream >> word;) words.insert(words.begin(), word);
  for (const std::string& word : words) {
    if (word.size() < 2 || word[0] != '-') continue;
    const std::string nearest = Nearest(app, word);
    if (nearest.empty()) return fmt::format("unknown option '{}'", word);
    return fmt::format("unknown option '{}'; did you mean {}?", word, nearest);
  }
  return fmt::format("unexpected argument '{}'", words.empty() ? arguments : words.front());
}

}  // namespace

std::string ParseErrorText(const CLI::App& app, const std::string& what) {
  static const std::regex kTwice(R"(^(-[^:]+): At Most 1 required but received (\d+)$)");
  static const std::regex kMissing(R"(^(-[^:]+): \d+ required \S+ missing$)");
  static const std::regex kConvert(R"(^Could not convert: (\S+) = (.*)$)");
  static const std::regex kUnexpected(
      R"(^The following arguments? (?:was|were) not expected: (.*)$)");
  std::smatch m;
  if (std::regex_match(what, m, kTwice)) {
    return fmt::format("{} is given {} times; give it once", m[1].str(), m[2].str());
  }
  if (std::regex_match(what, m, kMissing)) {
    return fmt::format("{} needs a value after it", m[1].str());
  }
  if (std::regex_match(what, m, kConvert)) {
    return fmt::format("{} '{}' is not {}", m[1].str(), m[2].str(), TypeWords(app, m[1].str()));
  }
  if (std::regex_match(what, m, kUnexpected)) return UnexpectedText(app, m[1].str());
  return what;
}

}  // namespace kvsim::cli
