#include "base/input_file.h"

#include <filesystem>
#include <fstream>

namespace kvsim {

Status CheckRegularFile(const std::string& path, const std::string& what) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status)) {
    return NotFoundError(path + ": cannot open the " + what);
  }
  const char* kind = nullptr;
  switch (status.type()) {
    case std::filesystem::file_type::regular:
      return Status::Ok();
    case std::filesystem::file_type::directory:
      kind = "a directory";
      break;
    case std::filesystem::file_type::fifo:
      kind = "a FIFO";
      break;
    case std::filesystem::file_type::character:
    case std::filesystem::file_type::block:
      kind = "a device";
      break;
    case std::filesystem::file_type::socket:
      kind = "a socket";
      break;
    default:
      kind = "not a file";
      break;
  }
  return InvalidArgumentError(path + ": " + kind + ", not a regular file; the " + what +
                              " must be one");
}

Result<std::string> ReadInputFile(const std::string& path, size_t max_bytes,
                                  const std::string& what, const std::string& kind,
                                  const std::string& limit) {
  KVSIM_RETURN_IF_ERROR(CheckRegularFile(path, what));
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the " + what);
  std::string text;
  // Read in pieces, so that the buffer grows with the file, not with the limit.
  constexpr size_t kPiece = size_t{1} << 20;
  while (text.size() <= max_bytes) {
    const size_t at = text.size();
    text.resize(at + kPiece);
    in.read(text.data() + at, static_cast<std::streamsize>(kPiece));
    text.resize(at + static_cast<size_t>(in.gcount()));
    if (!in) break;
  }
  if (in.bad()) return InvalidArgumentError(path + ": cannot read the " + what);
  if (text.size() > max_bytes) {
    return InvalidArgumentError(path + ": larger than " + limit + "; not a " + kind);
  }
  return text;
}

}  // namespace kvsim
