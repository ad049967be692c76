#include "cache/ustar.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace jitgemm::cache {
namespace {

// Field offsets and widths of a ustar header block.
constexpr size_t kName = 0, kNameLen = 100;
constexpr size_t kMode = 100, kUid = 108, kGid = 116, kIdLen = 8;
constexpr size_t kSize = 124, kSizeLen = 12;
constexpr size_t kMtime = 136, kMtimeLen = 12;
constexpr size_t kChksum = 148, kChksumLen = 8;
constexpr size_t kType = 156;
constexpr size_t kMagic = 257;
constexpr size_t kVersion = 263;
constexpr size_t kDevMajor = 329, kDevMinor = 337;
constexpr size_t kPrefix = 345, kPrefixLen = 155;

uint64_t RoundUp(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

// `width - 1` zero-padded octal digits and a NUL.
bool PutOctal(char* field, size_t width, uint64_t value) {
  std::string digits = absl::StrFormat("%0*o", static_cast<int>(width - 1), value);
  if (digits.size() != width - 1) return false;
  std::memcpy(field, digits.data(), width - 1);
  field[width - 1] = '\0';
  return true;
}

uint64_t HeaderSum(const char* block) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kTarBlockBytes; ++i) {
    const bool in_chksum = i >= kChksum && i < kChksum + kChksumLen;
    sum += in_chksum ? ' ' : static_cast<unsigned char>(block[i]);
  }
  return sum;
}

// Historic writers summed signed chars; tar readers accept either.
int64_t SignedHeaderSum(const char* block) {
  int64_t sum = 0;
  for (size_t i = 0; i < kTarBlockBytes; ++i) {
    const bool in_chksum = i >= kChksum && i < kChksum + kChksumLen;
    sum += in_chksum ? ' ' : static_cast<signed char>(block[i]);
  }
  return sum;
}

// An octal field: optional leading spaces, digits, then NUL/space padding.
absl::StatusOr<uint64_t> ParseOctal(const char* field, size_t width, absl::string_view what) {
  if (static_cast<unsigned char>(field[0]) & 0x80) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", what, " field uses base-256 (GNU) encoding, which is not supported"));
  }
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  uint64_t value = 0;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (value > (~uint64_t{0} >> 3)) {
      return absl::InvalidArgumentError(absl::StrCat("the ", what, " field overflows"));
    }
    value = value * 8 + static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < width; ++i) {
    if (field[i] != '\0' && field[i] != ' ') {
      return absl::InvalidArgumentError(absl::StrCat("the ", what, " field is not octal"));
    }
  }
  if (!any) return absl::InvalidArgumentError(absl::StrCat("the ", what, " field is empty"));
  return value;
}

std::string CString(const char* field, size_t width) {
  return std::string(field, strnlen(field, width));
}

bool AllZero(const char* block) {
  for (size_t i = 0; i < kTarBlockBytes; ++i) {
    if (block[i] != '\0') return false;
  }
  return true;
}

absl::Status PreadFully(int fd, char* out, uint64_t size, uint64_t offset,
                        const std::string& path) {
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat("read '", path, "'"));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat("'", path, "' ends early (truncated archive?)"));
    }
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> NormalizeMemberName(absl::string_view raw, bool is_directory) {
  absl::string_view name = raw;
  if (is_directory) {
    while (absl::ConsumeSuffix(&name, "/")) {
    }
  }
  while (absl::ConsumePrefix(&name, "./")) {
  }
  if (name == "." || (name.empty() && !raw.empty() && is_directory)) return std::string();
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("archive member name '", absl::CHexEscape(raw), "' ", why));
  };
  if (name.empty()) return bad("is empty");
  if (name.front() == '/') return bad("is absolute");
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return bad("has a control character");
  }
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    if (part.empty()) return bad("has an empty component");
    if (part == "..") return bad("leaves the archive's directory (\"..\")");
    if (part == ".") return bad("has a \".\" component");
  }
  return std::string(name);
}

// ---------------------------------------------------------------- writer

TarWriter::TarWriter(Env* env, std::string path, std::string temp,
                     std::unique_ptr<WritableFile> file, absl::Time mtime)
    : env_(env),
      path_(std::move(path)),
      temp_(std::move(temp)),
      file_(std::move(file)),
      mtime_(std::max<int64_t>(0, absl::ToUnixSeconds(mtime))) {}

absl::StatusOr<std::unique_ptr<TarWriter>> TarWriter::Create(Env* env, const std::string& path,
                                                             absl::Time mtime) {
  if (absl::StatusOr<FileInfo> info = env->Stat(path); info.ok()) {
    return absl::AlreadyExistsError(absl::StrCat("'", path, "' already exists"));
  }
  const std::string temp =
      absl::StrFormat("%s.tmp.%d.%016x", path, env->ProcessId(), env->RandomBits());
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(temp);
  if (!file.ok()) return file.status();
  return std::unique_ptr<TarWriter>(new TarWriter(env, path, temp, std::move(file).value(), mtime));
}

TarWriter::~TarWriter() {
  if (finished_) return;
  if (file_ != nullptr) file_->Close().IgnoreError();
  env_->RemoveFile(temp_).IgnoreError();
}

absl::Status TarWriter::Write(std::string_view data) {
  if (finished_ || file_ == nullptr) return absl::FailedPreconditionError("archive is finished");
  absl::Status s = file_->Append(absl::string_view(data.data(), data.size()));
  if (s.ok()) bytes_ += data.size();
  return s;
}

absl::Status TarWriter::WriteHeader(absl::string_view name, char type, uint32_t mode,
                                    uint64_t size) {
  char block[kTarBlockBytes] = {};
  const std::string full = type == '5' ? absl::StrCat(name, "/") : std::string(name);
  absl::string_view prefix, base = full;
  if (full.size() > kNameLen) {
    // Split at a '/' so that both halves fit their fields.
    size_t split = std::string::npos;
    for (size_t i = 0; i < full.size() && i <= kPrefixLen; ++i) {
      if (full[i] == '/' && full.size() - i - 1 <= kNameLen && i + 1 < full.size()) {
        split = i;
        break;
      }
    }
    if (split == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("archive member name '", name, "' is too long for ustar"));
    }
    prefix = absl::string_view(full).substr(0, split);
    base = absl::string_view(full).substr(split + 1);
  }
  // An empty view may hold a null pointer, which memcpy must not be given.
  if (!base.empty()) std::memcpy(block + kName, base.data(), base.size());
  if (!prefix.empty()) std::memcpy(block + kPrefix, prefix.data(), prefix.size());
  if (!PutOctal(block + kSize, kSizeLen, size)) {
    return absl::OutOfRangeError(absl::StrCat("member '", name, "' is too large for ustar"));
  }
  PutOctal(block + kMode, kIdLen, mode);
  PutOctal(block + kUid, kIdLen, 0);
  PutOctal(block + kGid, kIdLen, 0);
  PutOctal(block + kMtime, kMtimeLen, static_cast<uint64_t>(mtime_));
  block[kType] = type;
  std::memcpy(block + kMagic, "ustar", 6);  // with its NUL
  std::memcpy(block + kVersion, "00", 2);
  PutOctal(block + kDevMajor, kIdLen, 0);
  PutOctal(block + kDevMinor, kIdLen, 0);
  // Six digits, NUL, space: the traditional spelling.
  const std::string sum = absl::StrFormat("%06o", HeaderSum(block));
  std::memcpy(block + kChksum, sum.data(), 6);
  block[kChksum + 6] = '\0';
  block[kChksum + 7] = ' ';
  return Write(std::string_view(block, kTarBlockBytes));
}

absl::Status TarWriter::AddParents(absl::string_view name) {
  for (size_t slash = name.find('/'); slash != absl::string_view::npos;
       slash = name.find('/', slash + 1)) {
    const std::string dir(name.substr(0, slash));
    if (directories_.count(dir)) continue;
    absl::Status s = WriteHeader(dir, '5', 0755, 0);
    if (!s.ok()) return s;
    directories_.insert(dir);
  }
  return absl::OkStatus();
}

absl::Status TarWriter::AddDirectory(absl::string_view name) {
  absl::StatusOr<std::string> normal = NormalizeMemberName(name, true);
  if (!normal.ok()) return normal.status();
  if (normal->empty() || directories_.count(*normal)) return absl::OkStatus();
  absl::Status s = AddParents(*normal);
  if (s.ok()) s = WriteHeader(*normal, '5', 0755, 0);
  if (s.ok()) directories_.insert(*normal);
  return s;
}

absl::Status TarWriter::AddFile(absl::string_view name, std::string_view data) {
  absl::StatusOr<std::string> normal = NormalizeMemberName(name, false);
  if (!normal.ok()) return normal.status();
  if (*normal != name) {
    return absl::InvalidArgumentError(absl::StrCat("member name '", name, "' is not normalised"));
  }
  absl::Status s = AddParents(name);
  if (s.ok()) s = WriteHeader(name, '0', 0644, data.size());
  if (s.ok()) s = Write(data);
  const uint64_t pad = RoundUp(data.size(), kTarBlockBytes) - data.size();
  if (s.ok() && pad > 0) s = Write(std::string(pad, '\0'));
  return s;
}

absl::Status TarWriter::Finish() {
  if (finished_) return absl::OkStatus();
  // Two zero blocks end the archive; the record padding is more zeros.
  const uint64_t end = RoundUp(bytes_ + 2 * kTarBlockBytes, kTarRecordBytes);
  absl::Status s = Write(std::string(end - bytes_, '\0'));
  if (s.ok()) s = file_->Sync();
  absl::Status closed = file_->Close();
  file_.reset();
  if (s.ok()) s = closed;
  if (s.ok()) s = env_->RenameFile(temp_, path_);
  if (!s.ok()) return s;
  finished_ = true;
  return absl::OkStatus();
}

// ---------------------------------------------------------------- reader

TarReader::~TarReader() { ::close(fd_); }

absl::StatusOr<std::unique_ptr<TarReader>> TarReader::Open(const std::string& path,
                                                           uint64_t max_member_bytes) {
  // O_NONBLOCK: a FIFO in place of the archive must not hang the open.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open '", path, "'"));
  std::unique_ptr<TarReader> reader(new TarReader(path, fd));
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, absl::StrCat("stat '", path, "'"));
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("'", path, "' is not a regular file"));
  }
  absl::Status s = reader->ReadIndex(static_cast<uint64_t>(st.st_size), max_member_bytes);
  if (!s.ok()) return s;
  return reader;
}

absl::Status TarReader::ReadIndex(uint64_t file_size, uint64_t max_member_bytes) {
  std::set<std::string> seen;
  uint64_t offset = 0;
  char block[kTarBlockBytes];
  while (true) {
    if (offset + kTarBlockBytes > file_size) {
      return absl::DataLossError(
          absl::StrCat("'", path_, "' ends without the end-of-archive marker (truncated?)"));
    }
    absl::Status s = PreadFully(fd_, block, kTarBlockBytes, offset, path_);
    if (!s.ok()) return s;
    if (AllZero(block)) return absl::OkStatus();  // the end marker; what follows is padding
    auto bad = [&](absl::string_view why) {
      return absl::DataLossError(
          absl::StrCat("'", path_, "': damaged header at byte ", offset, ": ", why));
    };
    const absl::StatusOr<uint64_t> sum = ParseOctal(block + kChksum, kChksumLen, "checksum");
    if (!sum.ok()) return bad(sum.status().message());
    if (*sum != HeaderSum(block) && static_cast<int64_t>(*sum) != SignedHeaderSum(block)) {
      return bad("header checksum mismatch");
    }
    const bool posix = std::memcmp(block + kMagic, "ustar\0", 6) == 0;
    const bool gnu = std::memcmp(block + kMagic, "ustar ", 6) == 0;
    if (!posix && !gnu) return bad("not a ustar header");
    std::string raw = CString(block + kName, kNameLen);
    if (posix) {
      const std::string prefix = CString(block + kPrefix, kPrefixLen);
      if (!prefix.empty()) raw = absl::StrCat(prefix, "/", raw);
    }
    const char type = block[kType];
    absl::StatusOr<uint64_t> size = ParseOctal(block + kSize, kSizeLen, "size");
    if (!size.ok()) return bad(size.status().message());
    if (type != '0' && type != '\0' && type != '5') {
      return absl::InvalidArgumentError(absl::StrFormat(
          "'%s': member '%s' has type '%c'; bundles hold only regular files and directories "
          "(no links, devices or pax/GNU extension headers)",
          path_, absl::CHexEscape(raw), type));
    }
    TarMember member;
    member.is_directory = type == '5';
    absl::StatusOr<std::string> name = NormalizeMemberName(raw, member.is_directory);
    if (!name.ok())
      return absl::InvalidArgumentError(absl::StrCat("'", path_, "': ", name.status().message()));
    member.name = std::move(name).value();
    member.size = member.is_directory ? 0 : *size;
    member.data_offset = offset + kTarBlockBytes;
    // `tar -xf` run as root keeps these bits: a bundle's checker must see them.
    absl::StatusOr<uint64_t> mode = ParseOctal(block + kMode, kIdLen, "mode");
    member.mode = mode.ok() ? static_cast<uint32_t>(*mode & 07777) : 07777;
    if (member.size > max_member_bytes) {
      return absl::OutOfRangeError(absl::StrCat("'", path_, "': member '", member.name, "' holds ",
                                                member.size, " bytes, more than the limit of ",
                                                max_member_bytes));
    }
    // Checked before adding, so the sum cannot overflow.
    if (*size > file_size || member.data_offset + RoundUp(*size, kTarBlockBytes) > file_size) {
      return absl::DataLossError(absl::StrCat("'", path_, "': member '", member.name,
                                              "' runs past the end of the file (truncated?)"));
    }
    offset = member.data_offset + RoundUp(*size, kTarBlockBytes);
    if (member.name.empty()) {
      if (!member.is_directory) return bad("a file without a name");
      continue;  // the archive's root directory
    }
    if (!seen.insert(member.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path_, "': member '", member.name, "' appears more than once"));
    }
    members_.push_back(std::move(member));
  }
}

absl::StatusOr<std::string> TarReader::Read(const TarMember& member) const {
  std::string data(member.size, '\0');
  absl::Status s = PreadFully(fd_, data.data(), member.size, member.data_offset, path_);
  if (!s.ok()) return s;
  return data;
}

}  // namespace jitgemm::cache
