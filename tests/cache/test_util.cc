#include "tests/cache/test_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "cache/entry_listing.h"
#include "cache/layout.h"
#include "cache/real_env.h"
#include "xxhash.h"

namespace jitgemm::cache::testing {

namespace fs = std::filesystem;

ScratchDir::ScratchDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base ? base : "/tmp") + "/jgcache.XXXXXX";
  char* made = ::mkdtemp(tmpl.data());
  if (made == nullptr) std::abort();
  path_ = made;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  ChmodTree(path_, 0755);
  fs::remove_all(path_, ec);
}

CacheSettings TestSettings(const std::string& root) {
  CacheSettings s;
  s.root = root;
  s.mode = CacheMode::kReadWrite;
  s.max_bytes = uint64_t{1} << 40;
  s.lock_timeout = absl::Seconds(60);
  return s;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void SetMtime(const std::string& path, absl::Time time) {
  RealEnv env;
  if (!env.SetModTime(path, time).ok()) std::abort();
}

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(fs::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> TempFilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& f : FilesUnder(dir)) {
    if (IsTempFileName(fs::path(f).filename().string())) out.push_back(f);
  }
  return out;
}

void ChmodTree(const std::string& dir, unsigned mode) {
  std::error_code ec;
  unsigned dir_mode = mode | ((mode & 0444) >> 2);
  ::chmod(dir.c_str(), dir_mode);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    ::chmod(it->path().c_str(), it->is_directory() ? dir_mode : mode);
  }
}

std::string PayloadFor(const std::string& seed, size_t size) {
  std::string out;
  out.reserve(size + 8);
  uint64_t state = XXH3_64bits(seed.data(), seed.size());
  while (out.size() < size) {
    state = XXH3_64bits(&state, sizeof(state));
    out.append(reinterpret_cast<const char*>(&state), sizeof(state));
  }
  out.resize(size);
  return out;
}

std::set<std::string> EntriesUnder(const std::string& root) {
  std::set<std::string> out;
  auto files = ListEntryFiles(Env::Default(), root, RootUse::kReadOnly);
  if (files.ok()) {
    for (const auto& f : *files) out.insert(f.relative_path);
  }
  return out;
}

}  // namespace jitgemm::cache::testing
