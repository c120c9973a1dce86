// Running gnuplot on a script that writes a plot file: the path checks, the terminal for the
// file's extension, and the pipe to gnuplot, shared by every command that plots.
#pragma once

#include <string>

#include "base/status.h"

namespace kvsim::cli {

// Ok when `path` ends in .png or .svg, gnuplot can quote it, and its folder exists.
Status CheckPlotPath(const std::string& path);

// "set terminal ...\nset output '<path>'\n" for `path` (checked), at `width` x `height` pixels.
std::string GnuplotOutput(const std::string& path, int width, int height);

// `text` with the quotes and newlines a gnuplot single-quoted string cannot hold made spaces.
std::string GnuplotQuoted(std::string text);

// Runs `script` through gnuplot; `path` names the file it writes, for the message. Unavailable
// when gnuplot is missing or fails.
Status RunGnuplot(const std::string& script, const std::string& path);

}  // namespace kvsim::cli
