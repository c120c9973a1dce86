// Reading an input file whole, safely: only a regular file (a FIFO would block forever, a device
// such as /dev/zero never ends, a directory is no file), and only up to a size, so that no input
// can hang a run or exhaust its memory.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace kvsim {

// Ok when `path` names a regular file (symbolic links followed). NotFound "PATH: cannot open the
// WHAT" when nothing is there; InvalidArgument "PATH: a FIFO, not a regular file; the WHAT must be
// one" for a FIFO, device, socket or directory.
Status CheckRegularFile(const std::string& path, const std::string& what);

// The whole of regular file `path`, at most `max_bytes` of it: InvalidArgument "PATH: larger
// than LIMIT; not a KIND" past it (reading stops one byte past the limit), and the errors of
// CheckRegularFile. `what` names the file in errors ("scenario file"), `kind` what a file that
// large cannot be ("scenario file"), `limit` the limit as people say it ("1 MiB").
Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes,
                                  const std::string& what, const std::string& kind,
                                  const std::string& limit);

}  // namespace kvsim
