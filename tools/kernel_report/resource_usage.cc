// Parsers for ptxas's resource report and the ELF's per-kernel attributes.
#include "tools/kernel_report/resource_usage.h"

#include <cstdlib>
#include <regex>
#include <sstream>

namespace kvsim::kernel_report {

std::map<std::string, PtxasUsage> ParsePtxasReport(const std::string& report) {
  // ptxas info    : Compiling entry function '_Z...' for 'sm_90a'
  // ptxas info    : Function properties for _Z...
  //     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  // ptxas info    : Used 32 registers, used 1 barriers, 128 bytes smem, ...
  static const std::regex kEntry(R"(Compiling entry function '([^']+)' for '(sm_\w+)')");
  static const std::regex kProperties(R"(Function properties for (\S+))");
  static const std::regex kFrame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kUsed(R"(Used (\d+) registers)");
  static const std::regex kShared(R"((\d+) bytes smem)");
  std::map<std::string, PtxasUsage> usage;
  std::string entry;       // the sm_90a entry being reported, or empty
  std::string properties;  // the function whose properties follow
  std::stringstream stream(report);
  std::string line;
  std::smatch match;
  while (std::getline(stream, line)) {
    if (std::regex_search(line, match, kEntry)) {
      entry = match[2].str() == "sm_90a" ? match[1].str() : std::string();
      properties.clear();
    } else if (std::regex_search(line, match, kProperties)) {
      properties = match[1].str();
    } else if (std::regex_search(line, match, kFrame)) {
      if (!entry.empty() && properties == entry) {
        PtxasUsage& figures = usage[entry];
        figures.stack_frame_bytes = std::atoi(match[1].str().c_str());
        figures.spill_store_bytes = std::atoi(match[2].str().c_str());
        figures.spill_load_bytes = std::atoi(match[3].str().c_str());
      }
    } else if (std::regex_search(line, match, kUsed)) {
      if (entry.empty()) continue;
      PtxasUsage& figures = usage[entry];
      figures.registers = std::atoi(match[1].str().c_str());
      if (std::regex_search(line, match, kShared)) {
        figures.static_shared_bytes = std::atoi(match[1].str().c_str());
      }
    }
  }
  return usage;
}

std::map<std::string, int> ParseMaxThreads(const std::string& elf_dump) {
  // .nv.info._Z...            (the section of one kernel)
  //   Attribute:  EIATTR_MAX_THREADS
  //   Value:      0x400 0x1 0x1
  static const std::regex kSection(R"(^\.nv\.info\.(\S+))");
  static const std::regex kAttribute(R"(Attribute:\s*(\w+))");
  static const std::regex kValue(
      R"(Value:\s*0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+))");
  std::map<std::string, int> threads;
  std::string kernel;
  std::string attribute;
  std::stringstream stream(elf_dump);
  std::string line;
  std::smatch match;
  while (std::getline(stream, line)) {
    // Cheap tests first: the dump runs to a hundred thousand lines, and std::regex is slow.
    if (line.find(".nv.info.") != 0 && line.find("Attribute:") == std::string::npos &&
        line.find("Value:") == std::string::npos && line.rfind("Fatbin", 0) != 0) {
      continue;
    }
    if (std::regex_search(line, match, kSection)) {
      kernel = match[1].str();
      attribute.clear();
    } else if (std::regex_search(line, match, kAttribute)) {
      attribute = match[1].str();
    } else if (!kernel.empty() && attribute == "EIATTR_MAX_THREADS" &&
               std::regex_search(line, match, kValue)) {
      threads[kernel] = static_cast<int>(std::strtol(match[1].str().c_str(), nullptr, 16) *
                                         std::strtol(match[2].str().c_str(), nullptr, 16) *
                                         std::strtol(match[3].str().c_str(), nullptr, 16));
      attribute.clear();
    } else if (line.rfind("Fatbin", 0) == 0) {
      kernel.clear();  // the next architecture's sections follow
    }
  }
  return threads;
}

}  // namespace kvsim::kernel_report
