// SASS parsing and main-loop detection for the static kernel report.
#include "tools/kernel_report/sass_analysis.h"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

namespace kvsim::kernel_report {
namespace {

constexpr int kLanes = 32;

bool StartsWith(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// The opcode's modifiers, e.g. {"E", "128"} for "LDG.E.128".
std::vector<std::string> Modifiers(const std::string& opcode) {
  std::vector<std::string> parts;
  std::stringstream stream(opcode);
  std::string part;
  std::getline(stream, part, '.');  // the mnemonic itself
  while (std::getline(stream, part, '.')) parts.push_back(part);
  return parts;
}

std::string Mnemonic(const std::string& opcode) { return opcode.substr(0, opcode.find('.')); }

// Bytes one lane moves with a load or store, from its width modifier: .U8/.S8 1, .U16/.S16 2,
// none 4, .64 8, .128 16.
int AccessWidthBytes(const std::string& opcode) {
  int bytes = 4;
  for (const std::string& modifier : Modifiers(opcode)) {
    if (modifier == "U8" || modifier == "S8") bytes = 1;
    if (modifier == "U16" || modifier == "S16") bytes = 2;
    if (modifier == "64") bytes = 8;
    if (modifier == "128") bytes = 16;
  }
  return bytes;
}

// The target of a direct branch ("BRA 0x8e0", "BRA `(.L_x_3)" is not produced by cuobjdump for
// sm_90 and is not handled), or -1.
int64_t BranchTarget(const SassInstruction& instruction) {
  if (Mnemonic(instruction.opcode) != "BRA") return -1;
  static const std::regex kTarget(R"(0x([0-9a-fA-F]+))");
  std::smatch match;
  if (!std::regex_search(instruction.operands, match, kTarget)) return -1;
  return std::strtoll(match[1].str().c_str(), nullptr, 16);
}

struct LoopSpan {
  size_t first;  // index of the branch target
  size_t last;   // index of the backward branch
};

}  // namespace

std::vector<SassFunction> ParseSass(const std::string& listing) {
  // "        /*08f0*/                   LDG.E R24, desc[UR6][R14.64] ;   /* 0x... */"
  static const std::regex kInstruction(
      R"(^\s*/\*([0-9a-fA-F]{4,})\*/\s+(@!?U?P[0-9T]\s+)?([A-Z][A-Za-z0-9_.]*)([^;]*);)");
  static const std::regex kFunction(R"(^\s*Function\s*:\s*(\S+))");
  static const std::regex kArch(R"(^\s*code for (sm_\w+))");
  std::vector<SassFunction> functions;
  bool wanted_arch = true;
  std::stringstream stream(listing);
  std::string line;
  std::smatch match;
  while (std::getline(stream, line)) {
    // Cheap tests first: listings run to hundreds of thousands of lines, and std::regex is slow.
    const bool maybe_instruction =
        line.find("*/") != std::string::npos && line.find(';') != std::string::npos;
    if (!maybe_instruction && line.find("code for") == std::string::npos &&
        line.find("Function") == std::string::npos) {
      continue;
    }
    if (std::regex_search(line, match, kArch)) {
      wanted_arch = match[1].str() == "sm_90a";
    } else if (std::regex_search(line, match, kFunction)) {
      if (wanted_arch) functions.push_back(SassFunction{match[1].str(), {}});
    } else if (wanted_arch && !functions.empty() && std::regex_search(line, match, kInstruction)) {
      SassInstruction instruction;
      instruction.address = std::strtoll(match[1].str().c_str(), nullptr, 16);
      instruction.opcode = match[3].str();
      instruction.operands = match[4].str();
      functions.back().instructions.push_back(instruction);
    }
  }
  return functions;
}

int GlobalLoadBytesPerLane(const std::string& opcode) {
  const std::string mnemonic = Mnemonic(opcode);
  if (mnemonic != "LDG" && mnemonic != "LD" && mnemonic != "LDGSTS") return 0;
  return AccessWidthBytes(opcode);
}

int SharedBytesPerWarp(const std::string& opcode) {
  const std::string mnemonic = Mnemonic(opcode);
  if (mnemonic == "LDSM") {
    int matrices = 1;
    for (const std::string& modifier : Modifiers(opcode)) {
      if (modifier == "2") matrices = 2;
      if (modifier == "4") matrices = 4;
    }
    return 128 * matrices;  // 8 rows of 16 bytes per matrix
  }
  if (mnemonic == "ATOMS") return kLanes * 4;
  if (mnemonic != "LDS" && mnemonic != "STS" && mnemonic != "LDGSTS") return 0;
  return kLanes * AccessWidthBytes(opcode);
}

bool ReadsSharedByDescriptor(const std::string& opcode, const std::string& operands) {
  return IsTensorCoreInstruction(opcode) && operands.find("gdesc") != std::string::npos;
}

bool IsBulkGlobalLoad(const std::string& opcode) {
  const std::string mnemonic = Mnemonic(opcode);
  return mnemonic == "UTMALDG" || mnemonic == "UBLKCP";
}

bool IsTensorCoreInstruction(const std::string& opcode) {
  const std::string mnemonic = Mnemonic(opcode);
  for (const char* name : {"HMMA", "HGMMA", "QGMMA", "IMMA", "IGMMA", "QMMA", "BMMA", "BGMMA"}) {
    if (mnemonic == name) return true;
  }
  return false;
}

TensorWork TensorWorkPerWarp(const std::string& opcode) {
  TensorWork work;
  if (!IsTensorCoreInstruction(opcode)) return work;
  std::vector<std::string> fields;
  size_t start = 0;
  while (start <= opcode.size()) {
    const size_t dot = opcode.find('.', start);
    fields.push_back(
        opcode.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (fields.size() < 2) return work;
  const std::string& mnemonic = fields[0];
  const std::string& shape = fields[1];
  double m = 0, n = 0, k = 0;
  if (mnemonic == "HGMMA" || mnemonic == "QGMMA" || mnemonic == "IGMMA") {
    // 64xNxK
    const size_t x1 = shape.find('x');
    const size_t x2 = x1 == std::string::npos ? x1 : shape.find('x', x1 + 1);
    if (x2 == std::string::npos) return work;
    m = std::atof(shape.substr(0, x1).c_str());
    n = std::atof(shape.substr(x1 + 1, x2 - x1 - 1).c_str());
    k = std::atof(shape.substr(x2 + 1).c_str());
  } else if (mnemonic == "HMMA" || mnemonic == "IMMA" || mnemonic == "QMMA") {
    // The mma.sync shapes SASS spells as digits: m16n8k16 "16816", m16n8k8 "1688", m16n8k32
    // "16832", m8n8k4 "884", m8n8k16 "8816", m16n8k64 "16864", m16n8k4 "1684".
    static const struct {
      const char* name;
      double m, n, k;
    } kShapes[] = {{"16816", 16, 8, 16}, {"1688", 16, 8, 8}, {"16832", 16, 8, 32},
                   {"884", 8, 8, 4},     {"8816", 8, 8, 16}, {"16864", 16, 8, 64},
                   {"1684", 16, 8, 4}};
    for (const auto& known : kShapes) {
      if (shape == known.name) {
        m = known.m;
        n = known.n;
        k = known.k;
      }
    }
  }
  if (m == 0) return work;
  double flops = 2 * m * n * k;
  if (mnemonic == "HGMMA" || mnemonic == "QGMMA" || mnemonic == "IGMMA") flops /= 4;
  bool eight_bit =
      mnemonic == "QGMMA" || mnemonic == "IGMMA" || mnemonic == "IMMA" || mnemonic == "QMMA";
  bool tf32 = false;
  for (const std::string& field : fields) {
    if (field == "E4M3" || field == "E5M2" || field == "S8" || field == "U8") eight_bit = true;
    if (field == "TF32") tf32 = true;
  }
  if (eight_bit) {
    work.flops8 = flops;
  } else {
    work.flops16 = tf32 ? 2 * flops : flops;
  }
  return work;
}

MainLoop FindMainLoop(const SassFunction& function, MainLoopRule rule) {
  const std::vector<SassInstruction>& code = function.instructions;
  std::vector<LoopSpan> loops;
  for (size_t i = 0; i < code.size(); ++i) {
    const int64_t target = BranchTarget(code[i]);
    if (target < 0 || target > code[i].address) continue;
    const auto first = std::find_if(code.begin(), code.end(), [target](const SassInstruction& x) {
      return x.address == target;
    });
    if (first != code.end()) loops.push_back({static_cast<size_t>(first - code.begin()), i});
  }
  const auto measure = [&](size_t first, size_t last, bool is_loop) {
    MainLoop loop;
    loop.is_loop = is_loop;
    loop.rule = rule;
    loop.first_address = code.empty() ? 0 : code[first].address;
    loop.last_address = code.empty() ? 0 : code[last].address;
    for (size_t i = first; !code.empty() && i <= last; ++i) {
      const std::string& opcode = code[i].opcode;
      if (StartsWith(opcode, "NOP")) continue;
      ++loop.instructions;
      loop.load_bytes_per_warp += int64_t{kLanes} * GlobalLoadBytesPerLane(opcode);
      if (Mnemonic(opcode) == "LDGSTS") {
        loop.async_bytes_per_warp += int64_t{kLanes} * GlobalLoadBytesPerLane(opcode);
      }
      loop.bulk_loads += IsBulkGlobalLoad(opcode) ? 1 : 0;
      loop.shared_bytes_per_warp += SharedBytesPerWarp(opcode);
      loop.descriptor_mmas += ReadsSharedByDescriptor(opcode, code[i].operands) ? 1 : 0;
      const TensorWork work = TensorWorkPerWarp(opcode);
      loop.tensor_work.flops16 += work.flops16;
      loop.tensor_work.flops8 += work.flops8;
      if (IsTensorCoreInstruction(opcode) &&
          std::find(loop.tensor_core_opcodes.begin(), loop.tensor_core_opcodes.end(), opcode) ==
              loop.tensor_core_opcodes.end()) {
        loop.tensor_core_opcodes.push_back(opcode);
      }
    }
    for (const LoopSpan& other : loops) {
      const bool inside = other.first >= first && other.last <= last;
      if (inside && !(other.first == first && other.last == last)) ++loop.nested_loops;
    }
    return loop;
  };
  MainLoop best;
  bool found = false;
  const bool async = rule == MainLoopRule::kAsyncCopies;
  for (const LoopSpan& span : loops) {
    const MainLoop loop = measure(span.first, span.last, true);
    const int64_t bytes = async ? loop.async_bytes_per_warp : loop.load_bytes_per_warp;
    const int64_t best_bytes = async ? best.async_bytes_per_warp : best.load_bytes_per_warp;
    if (bytes == 0 && loop.bulk_loads == 0) continue;
    const bool better =
        !found || bytes > best_bytes ||
        (bytes == best_bytes &&
         (loop.bulk_loads > best.bulk_loads ||
          (loop.bulk_loads == best.bulk_loads && loop.instructions < best.instructions)));
    if (better) {
      best = loop;
      found = true;
    }
  }
  if (found) return best;
  return measure(0, code.empty() ? 0 : code.size() - 1, false);
}

}  // namespace kvsim::kernel_report
