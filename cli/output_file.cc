// Temporary file, sync, rename.
#include "cli/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace kvsim::cli {
namespace {

Status Failed(const std::string& option, const std::string& path, const std::string& step,
              int error) {
  return DataLossError(option + " " + path + ": " + step + " failed (" + std::strerror(error) +
                       "); nothing was written there");
}

// Whether `path` exists and is something other than a regular file (a device, a FIFO).
bool IsSpecialFile(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
}

}  // namespace

std::string TemporaryBeside(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return path + ".tmp" + std::to_string(::getpid()) + extension;
}

Status MoveOutputIntoPlace(const std::string& option, const std::string& temporary,
                           const std::string& path) {
  if (IsSpecialFile(path)) {
    std::remove(temporary.c_str());
    return DataLossError(option + " " + path +
                         ": not a regular file (a device or pipe); give a file to write");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return Failed(option, path, "renaming the finished file into place", error);
  }
  return Status::Ok();
}

Status WriteOutputFile(const std::string& option, const std::string& path,
                       const std::string& text) {
  // A device or pipe (/dev/stdout, a FIFO) is written in place: renaming a file over it would
  // replace it.
  const bool in_place = IsSpecialFile(path);
  const std::string temporary = in_place ? path : TemporaryBeside(path);
  const int fd = in_place
                     ? ::open(path.c_str(), O_WRONLY | O_CLOEXEC)
                     : ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Failed(option, path, in_place ? "opening" : "creating a temporary file beside it",
                  errno);
  }
  const auto discard = [&] {
    if (!in_place) std::remove(temporary.c_str());
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      const int error = wrote < 0 ? errno : ENOSPC;
      ::close(fd);
      discard();
      return Failed(option, path, "writing", error);
    }
    done += static_cast<size_t>(wrote);
  }
  if (in_place) {
    return ::close(fd) == 0 ? Status::Ok() : Failed(option, path, "closing", errno);
  }
  // A full disk can first show itself when the data reaches it.
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    discard();
    return Failed(option, path, "syncing", error);
  }
  if (::close(fd) != 0) {
    const int error = errno;
    discard();
    return Failed(option, path, "closing", error);
  }
  return MoveOutputIntoPlace(option, temporary, path);
}

}  // namespace kvsim::cli
