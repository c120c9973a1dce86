// The gnuplot pipe.
#include "cli/gnuplot.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace kvsim::cli {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A gnuplot that is missing, or that stops at an error, closes the pipe before it has read the
// whole script; the write that follows raises SIGPIPE, whose default action kills kvsim without a
// message. While this lives, SIGPIPE is ignored: the write fails and pclose reports the status.
class SigpipeIgnored {
 public:
  SigpipeIgnored() {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~SigpipeIgnored() { sigaction(SIGPIPE, &previous_, nullptr); }
  SigpipeIgnored(const SigpipeIgnored&) = delete;
  SigpipeIgnored& operator=(const SigpipeIgnored&) = delete;

 private:
  struct sigaction previous_ = {};
};

}  // namespace

std::string GnuplotQuoted(std::string text) {
  for (char& c : text) {
    if (c == '\'' || c == '\n') c = ' ';
  }
  return text;
}

Status CheckPlotPath(const std::string& path) {
  if (!EndsWith(path, ".svg") && !EndsWith(path, ".png")) {
    return InvalidArgumentError(fmt::format("plot file '{}' must end in .png or .svg", path));
  }
  if (path.find('\'') != std::string::npos || path.find('\n') != std::string::npos) {
    return InvalidArgumentError(
        fmt::format("plot file '{}' must not contain a quote or a newline", path));
  }
  // Checked here, before any work: gnuplot would only warn and draw onto its standard output.
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error)) {
    return InvalidArgumentError(fmt::format(
        "plot file '{}' is not a regular file (a folder, device or pipe); give a file to draw",
        path));
  }
  if (!folder.empty() && !std::filesystem::is_directory(folder, error)) {
    return InvalidArgumentError(
        fmt::format("plot file '{}': folder '{}' does not exist", path, folder.string()));
  }
  return Status::Ok();
}

std::string GnuplotOutput(const std::string& path, int width, int height) {
  const std::string terminal =
      EndsWith(path, ".svg")
          ? fmt::format("svg size {},{} dynamic noenhanced font 'sans,12'", width, height)
          : fmt::format("pngcairo size {},{} noenhanced font 'sans,11'", width, height);
  return fmt::format("set terminal {}\nset output '{}'\n", terminal, path);
}

Status RunGnuplot(const std::string& script, const std::string& path) {
  const SigpipeIgnored sigpipe_ignored;
  // gnuplot's standard output is kvsim's; a plot it cannot write to `path` (a folder that is not
  // writable) would land there, inside a table or a JSON document.
  FILE* pipe = popen("gnuplot >/dev/null", "w");
  if (pipe == nullptr) return DataLossError("cannot start gnuplot to draw '" + path + "'");
  const size_t written = std::fwrite(script.data(), 1, script.size(), pipe);
  const int status = pclose(pipe);
  if (written != script.size() || status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::remove(path.c_str());  // whatever part of the plot gnuplot wrote
    return DataLossError(fmt::format(
        "gnuplot failed to write '{}' (exit status {}); is gnuplot installed (tools/bootstrap.sh "
        "installs gnuplot-nox) and is the folder writable?",
        path, WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  return Status::Ok();
}

}  // namespace kvsim::cli
