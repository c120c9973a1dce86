// Field-by-field YAML reading with located errors.
#include "model/yaml_reader.h"

#include <algorithm>
#include <fstream>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/input_file.h"
#include "model/number_text.h"

namespace kvsim::model {
namespace {

std::string Location(const std::string& path, const YAML::Mark& mark) {
  if (mark.is_null()) return path;
  return fmt::format("{}:{}:{}", path, mark.line + 1, mark.column + 1);
}

// The offset of the first byte of `text` that is not well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or npos. YAML is Unicode text: yaml-cpp would
// read other bytes, but could write them back only as U+FFFD, so a config read and written again
// (a scenario saved by ScenarioToYaml) would no longer be the same.
size_t FirstNonUtf8(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
    const unsigned char lead = byte(i);
    size_t length = 1;
    unsigned char min = 0x80;  // the bounds of the second byte, narrower after some leads
    unsigned char max = 0xBF;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) min = 0xA0;  // overlong below U+0800
      if (lead == 0xED) max = 0x9F;  // surrogates U+D800..U+DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) min = 0x90;  // overlong below U+10000
      if (lead == 0xF4) max = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + length > text.size() || byte(i + 1) < min || byte(i + 1) > max) return i;
    for (size_t k = 2; k < length; ++k) {
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
    }
    i += length;
  }
  return std::string::npos;
}

// The offset of the first C0 control byte other than tab, line feed and carriage return (or DEL),
// or npos. YAML allows none of them in a stream; yaml-cpp stops at a NUL with a misleading
// message, or reads past it.
size_t FirstControlByte(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7F) return i;
  }
  return std::string::npos;
}

// 1-based line and column of byte `at` of `text`.
std::pair<int64_t, int64_t> LineAndColumn(const std::string& text, size_t at) {
  const size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const int64_t column = static_cast<int64_t>(newline == std::string::npos ? at + 1 : at - newline);
  const int64_t line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  return {line, column};
}

// Bounds on a config's YAML, counted with aliases expanded: an alias bomb (a few lines whose
// aliases nest a billion nodes) or an alias that contains itself is refused instead of walked.
constexpr size_t kMaxYamlNodes = 1'000'000;
constexpr size_t kMaxYamlDepth = 64;

// The first key given twice in any mapping under `root` ("a.b"), as an error located at its
// second appearance: yaml-cpp keeps both and reads the first, so a repeated field would otherwise
// win or lose silently. Iterative and linear in the nodes: no recursion to overflow, no
// quadratic scan of a mapping's keys.
Status CheckNoDuplicateKeys(const std::string& path, const YAML::Node& root) {
  struct Pending {
    YAML::Node node;
    std::string prefix;
    size_t depth;
  };
  std::vector<Pending> stack = {{root, "", 0}};
  size_t visited = 0;
  while (!stack.empty()) {
    Pending at = std::move(stack.back());
    stack.pop_back();
    if (++visited > kMaxYamlNodes) {
      return InvalidArgumentError(fmt::format(
          "{}: more than {} YAML nodes with its aliases expanded; a config is far smaller "
          "(an alias bomb?)",
          path, kMaxYamlNodes));
    }
    const std::string parent = at.prefix.empty() ? "" : at.prefix.substr(0, at.prefix.size() - 1);
    if (at.depth > kMaxYamlDepth) {
      return InvalidArgumentError(fmt::format(
          "{}: field '{}...': nested deeper than {} levels (an alias that contains itself?)",
          Location(path, at.node.Mark()), parent.substr(0, 40), kMaxYamlDepth));
    }
    if (at.node.IsSequence()) {
      // Pushed last first, so that the first element is looked at first.
      for (size_t i = at.node.size(); i-- > 0;) {
        stack.push_back({at.node[i], fmt::format("{}[{}].", parent, i), at.depth + 1});
      }
      continue;
    }
    if (at.node.IsNull() && at.depth > 0) {
      // yaml-cpp reads `~`, `null` and an empty value alike as "no value", which every reader
      // would take as "not given" and fill with its default: a field written but not meant.
      return InvalidArgumentError(fmt::format(
          "{}: field '{}': has no value (empty, ~ or null); give a value or leave the field out",
          Location(path, at.node.Mark()), parent));
    }
    if (!at.node.IsMap()) continue;
    std::unordered_map<std::string, YAML::Mark> seen;
    std::vector<Pending> children;
    for (auto it = at.node.begin(); it != at.node.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
      const auto [first, inserted] = seen.emplace(key, it->first.Mark());
      if (!inserted) {
        return InvalidArgumentError(
            fmt::format("{}: field '{}{}': given twice (first at line {}); give it once",
                        Location(path, it->first.Mark()), at.prefix, key, first->second.line + 1));
      }
      children.push_back({it->second, at.prefix + key + ".", at.depth + 1});
    }
    for (auto child = children.rbegin(); child != children.rend(); ++child) {
      stack.push_back(std::move(*child));
    }
  }
  return Status::Ok();
}

std::string JoinQuoted(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

YamlMap::YamlMap(std::shared_ptr<const std::string> path, YAML::Node node, std::string prefix)
    : path_(std::move(path)), node_(std::move(node)), prefix_(std::move(prefix)) {}

Result<YamlMap> YamlMap::LoadString(const std::string& text, const std::string& name) {
  auto path = std::make_shared<const std::string>(name);
  const size_t bad = FirstNonUtf8(text);
  if (bad != std::string::npos) {
    const auto [line, column] = LineAndColumn(text, bad);
    return InvalidArgumentError(
        fmt::format("{}:{}:{}: byte 0x{:02x} is not UTF-8 text; a config file must be UTF-8", name,
                    line, column, static_cast<unsigned char>(text[bad])));
  }
  const size_t control = FirstControlByte(text);
  if (control != std::string::npos) {
    const auto [line, column] = LineAndColumn(text, control);
    return InvalidArgumentError(fmt::format(
        "{}:{}:{}: control byte 0x{:02x}; a config is text (tabs, newlines and printable "
        "characters only)",
        name, line, column, static_cast<unsigned char>(text[control])));
  }
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(
        fmt::format("{}: YAML syntax error: {}", Location(name, e.mark), e.msg));
  }
  // A second document ('---' then more fields) would be read by nothing: refused, not ignored.
  if (documents.size() > 1) {
    return InvalidArgumentError(fmt::format(
        "{}: a second YAML document begins here; a config is one document (remove the '---' "
        "line and what follows, or merge it into the first)",
        Location(name, documents[1].Mark())));
  }
  const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  if (!root.IsMap()) {
    return InvalidArgumentError(
        fmt::format("{}: the file must be a YAML mapping of fields (name: value)", name));
  }
  KVSIM_RETURN_IF_ERROR(CheckNoDuplicateKeys(name, root));
  return YamlMap(path, root, "");
}

Result<YamlMap> YamlMap::LoadFile(const std::string& path) {
  // One MiB is far beyond any config; a bigger file is a mistake (a wrong path), not a config.
  KVSIM_ASSIGN_OR_RETURN(const std::string text,
                         ReadInputFile(path, size_t{1} << 20, "file", "config file", "1 MiB"));
  return LoadString(text, path);
}

std::string YamlMap::FieldName(const std::string& key) const { return prefix_ + key; }

std::string YamlMap::KeyLocation(const std::string& key) const {
  const YAML::Node& node = node_;
  const YAML::Node child = node[key];
  return Location(*path_, child.IsDefined() ? child.Mark() : node.Mark());
}

bool YamlMap::Has(const std::string& key) const {
  const YAML::Node& node = node_;
  return node[key].IsDefined() && !node[key].IsNull();
}

Status YamlMap::Error(const std::string& key, const std::string& message) const {
  const YAML::Node& node = node_;
  const YAML::Node child = node[key];
  const YAML::Mark mark = child.IsDefined() ? child.Mark() : node.Mark();
  return InvalidArgumentError(
      fmt::format("{}: field '{}': {}", Location(*path_, mark), FieldName(key), message));
}

Status YamlMap::KeyError(const std::string& key, const std::string& message) const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (it->first.Scalar() != key) continue;
    return InvalidArgumentError(fmt::format(
        "{}: field '{}': {}", Location(*path_, it->first.Mark()), FieldName(key), message));
  }
  return Error(key, message);
}

Result<std::string> YamlMap::Scalar(const std::string& key, const char* expected) const {
  if (!Has(key)) return Error(key, fmt::format("missing; expected {}", expected));
  const YAML::Node& node = node_;
  const YAML::Node child = node[key];
  if (!child.IsScalar())
    return Error(key, fmt::format("expected {}, got a list or mapping", expected));
  // yaml-cpp decodes the escapes \N and \_ to the single bytes 0x85 and 0xA0, not to UTF-8.
  if (FirstNonUtf8(child.Scalar()) != std::string::npos) {
    return Error(key,
                 "an escape gave text that is not UTF-8 (\\N and \\_ are not supported); "
                 "write the character itself");
  }
  return child.Scalar();
}

Result<int64_t> YamlMap::Int(const std::string& key, int64_t min, int64_t max) const {
  const std::string expected = fmt::format("an integer from {} to {}", min, max);
  KVSIM_ASSIGN_OR_RETURN(const std::string text, Scalar(key, expected.c_str()));
  const std::optional<int64_t> parsed = ParseInteger(text);
  if (!parsed) return Error(key, fmt::format("expected {}, got '{}'", expected, text));
  const int64_t value = *parsed;
  if (value < min || value > max) {
    return Error(key, fmt::format("{} is out of range; allowed: {} to {}", value, min, max));
  }
  return value;
}

Result<int64_t> YamlMap::IntOr(const std::string& key, int64_t fallback, int64_t min,
                               int64_t max) const {
  if (!Has(key)) return fallback;
  return Int(key, min, max);
}

Result<double> YamlMap::Double(const std::string& key, double min, double max) const {
  const std::string expected = fmt::format("a number from {} to {}", min, max);
  KVSIM_ASSIGN_OR_RETURN(const std::string text, Scalar(key, expected.c_str()));
  const std::optional<double> parsed = ParseFinite(text);
  if (!parsed) return Error(key, fmt::format("expected {}, got '{}'", expected, text));
  const double value = *parsed;
  if (value < min || value > max) {
    return Error(key, fmt::format("{} is out of range; allowed: {} to {}", text, min, max));
  }
  return value;
}

Result<bool> YamlMap::BoolOr(const std::string& key, bool fallback) const {
  if (!Has(key)) return fallback;
  KVSIM_ASSIGN_OR_RETURN(const std::string text, Scalar(key, "true or false"));
  if (text == "true") return true;
  if (text == "false") return false;
  return Error(key, fmt::format("expected true or false, got '{}'", text));
}

Result<std::string> YamlMap::String(const std::string& key) const {
  return Scalar(key, "a string");
}

Result<std::string> YamlMap::Enum(const std::string& key,
                                  const std::vector<std::string>& allowed) const {
  const std::string expected = "one of: " + JoinQuoted(allowed);
  KVSIM_ASSIGN_OR_RETURN(const std::string text, Scalar(key, expected.c_str()));
  for (const auto& option : allowed) {
    if (text == option) return text;
  }
  return Error(key, fmt::format("'{}' is not allowed; {}", text, expected));
}

Result<YamlMap> YamlMap::Map(const std::string& key) const {
  if (!Has(key)) return Error(key, "missing; expected a mapping of fields");
  const YAML::Node& node = node_;
  const YAML::Node child = node[key];
  if (!child.IsMap()) return Error(key, "expected a mapping of fields (name: value)");
  return YamlMap(path_, child, FieldName(key) + ".");
}

Result<std::vector<YamlMap>> YamlMap::MapList(const std::string& key, size_t max_items) const {
  if (!Has(key)) return Error(key, "missing; expected a list of mappings");
  const YAML::Node& node = node_;
  const YAML::Node child = node[key];
  if (!child.IsSequence()) return Error(key, "expected a list of mappings ('- name: value')");
  if (child.size() > max_items) {
    return Error(key, fmt::format("{} items; at most {} allowed", child.size(), max_items));
  }
  std::vector<YamlMap> items;
  for (size_t i = 0; i < child.size(); ++i) {
    const YAML::Node item = child[i];
    if (!item.IsMap()) {
      return InvalidArgumentError(fmt::format("{}: field '{}[{}]': expected a mapping of fields",
                                              Location(*path_, item.Mark()), FieldName(key), i));
    }
    items.push_back(YamlMap(path_, item, fmt::format("{}[{}].", FieldName(key), i)));
  }
  return items;
}

std::vector<std::string> YamlMap::Keys() const {
  std::vector<std::string> keys;
  for (auto it = node_.begin(); it != node_.end(); ++it) keys.push_back(it->first.Scalar());
  return keys;
}

Status YamlMap::CheckKnownKeys(const std::vector<std::string>& known) const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    bool found = false;
    for (const auto& name : known) found = found || name == key;
    if (!found) return KeyError(key, "unknown field; allowed here: " + JoinQuoted(known));
  }
  return Status::Ok();
}

}  // namespace kvsim::model
